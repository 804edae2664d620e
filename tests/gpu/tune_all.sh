#!/usr/bin/env bash
# Issue 21's target on a GPU machine: every kernel of tests/gpu/cases.txt tuned at two of its
# shapes (the second and third of its line: awkward, not the largest), cold, into one cache,
# then the same again on the warm cache (nothing benchmarked), each pass timed in total.
#   tests/gpu/tune_all.sh KILN_BINARY OUT_DIR
# Bundles are compiled first (not timed: `kiln compile` is not tuning). Prints one line per
# kernel and the two totals last; exits 1 when a tune failed.
set -uo pipefail
kiln=$1 out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out/bundles"
cache=$out/cache.json
rm -f "$cache"
mapfile -t lines < <(grep -E '^[a-z]' "$root/tests/gpu/cases.txt")
for line in "${lines[@]}"; do
  read -r ex _ <<< "$line"
  [[ -f $out/bundles/$ex/manifest.json ]] || "$kiln" compile "$root/examples/$ex.kiln" -o "$out/bundles/$ex" > /dev/null || exit 1
done
fail=0
pass() {  # LABEL: tunes every line, prints the total
  local t0=$(date +%s%N)
  for line in "${lines[@]}"; do
    read -r ex kernel s0 s1 s2 _ <<< "$line"
    local shapes=(--shape "${s1:-$s0}")
    [[ -n ${s2:-} ]] && shapes+=(--shape "$s2")
    local k0=$(date +%s%N)
    "$kiln" tune "$out/bundles/$ex" --kernel "$kernel" "${shapes[@]}" -c "$cache" -q > "$out/$1.$kernel.log" 2>&1 || { echo "TUNE FAILED: $kernel"; tail -3 "$out/$1.$kernel.log"; fail=1; }
    echo "$1 $kernel ${s1:-$s0} ${s2:-}: $(( ($(date +%s%N) - k0) / 1000000 )) ms"
  done
  echo "$1 total: $(( ($(date +%s%N) - t0) / 1000000 )) ms for ${#lines[@]} kernels"
}
pass cold
pass warm
"$kiln" cache show "$cache" > "$out/cache_show.txt" 2>&1
exit $fail
