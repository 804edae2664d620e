#!/usr/bin/env bash
# Issue 21's target on a GPU machine: every kernel of tests/gpu/cases.txt tuned at two of its
# shapes (the second and third of its line: awkward, not the largest), cold, into one cache,
# then the same again on the warm cache (nothing benchmarked), each pass timed in total.
#   tests/gpu/tune_all.sh KILN_BINARY OUT_DIR
# Bundles are compiled first (not timed: `kiln compile` is not tuning). The (kernel, shape)
# pairs are written as a recorded-shapes file (what KILN_RECORD_SHAPES would have written,
# bundle/shape_record.h), and each pass is one `kiln tune` over every bundle with
# --shapes-from, as an application's kernels would be tuned. Prints the tuner's lines, its
# summary of where the time went, and the two totals last; exits 1 when a tune failed.
set -uo pipefail
kiln=$1 out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out/bundles"
cache=$out/cache.json
rm -f "$cache"
mapfile -t lines < <(grep -E '^[a-z]' "$root/tests/gpu/cases.txt")
bundles=()
for line in "${lines[@]}"; do
  read -r ex _ <<< "$line"
  [[ -f $out/bundles/$ex/manifest.json ]] || "$kiln" compile "$root/examples/$ex.kiln" -o "$out/bundles/$ex" > /dev/null || exit 1
  [[ " ${bundles[*]} " == *" $out/bundles/$ex "* ]] || bundles+=("$out/bundles/$ex")
done
shapes=$out/shapes.jsonl
python3 - "$out/bundles" "$shapes" "${lines[@]}" <<'PY' || exit 1
import json, sys
bundles, path, lines = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(path, "w") as f:
    for line in lines:
        ex, kernel, *shapes = line.split()
        info = next(k for k in json.load(open(f"{bundles}/{ex}/manifest.json"))["kernels"]
                    if k["name"] == kernel)
        for s in (shapes[1:3] if len(shapes) > 1 else shapes[:1]):
            shape = {k: int(v) for k, v in (kv.split("=") for kv in s.split(","))}
            shape = {sym: shape[sym] for sym in info["symbols"]}
            f.write(json.dumps({"kernel": kernel, "hash": info["hash"], "shape": shape},
                               separators=(",", ":")) + "\n")
PY
echo "$(wc -l < "$shapes") (kernel, shape) pairs of ${#lines[@]} kernels in ${#bundles[@]} bundles"
fail=0
pass() {  # LABEL: one tune of every pair, prints its total
  local t0=$(date +%s%N)
  "$kiln" tune "${bundles[@]}" --shapes-from "$shapes" -c "$cache" -q > "$out/$1.log" 2>&1 || { echo "TUNE FAILED ($1)"; tail -3 "$out/$1.log"; fail=1; }
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  grep -v "cached, not benchmarked" "$out/$1.log"
  echo "$1 total: $ms ms for ${#lines[@]} kernels ($(grep -c "cached, not benchmarked" "$out/$1.log") steps cached)"
}
pass cold
pass warm
"$kiln" cache show "$cache" > "$out/cache_show.txt" 2>&1
exit $fail
