#!/usr/bin/env bash
# Shapes from a real run, tuned, sharded and merged, on a GPU machine (docs/autotune.md,
# "Shapes from the application" and "Several tuners"):
#   tests/gpu/tune_shapes.sh KILN_BINARY RUNTIME_TESTS_BINARY OUT_DIR
# 1. Runs the runtime's GPU tests that launch add (awkward sizes, 4 threads) and rowsum (few
#    long rows), twice at once, with KILN_RECORD_SHAPES=OUT_DIR/shapes.jsonl: every line must
#    parse and each (kernel, shape) pair must be there exactly twice (once per process).
# 2. kiln tune --shapes-from on each bundle into one cache: its exact keys must be exactly the
#    recorded pairs, and each entry's default is the variant a plain launch runs at its shape
#    (also for one tune of two rowsum shapes whose defaults differ).
# 3. The same as two shards (--shard 0/2 and 1/2, at once, on the shared bundles), merged with
#    kiln cache merge: the merged keys must equal the unsharded run's.
# 4. kiln cache show of the result (100 columns) and a warm re-tune (nothing benchmarked).
# Prints one line per check and "tune_shapes.sh: all checks passed" last; exits 1 otherwise.
set -uo pipefail
kiln=$1 rt_tests=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$out" && mkdir -p "$out"
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fail=1; }
seconds() { echo "$(( ($(date +%s%N) - $1) / 1000000 )) ms"; }

bundles=(add rowsum global_max_norm)
for ex in "${bundles[@]}"; do
  "$kiln" compile "$root/examples/$ex.kiln" -o "$out/$ex" > /dev/null || bad "compile $ex"
done

# 1. Record.
shapes=$out/shapes.jsonl
tests="launch computes the right result at awkward sizes,several threads launch through one runtime at once,few long rows run split*"
for i in 1 2; do
  KILN_RECORD_SHAPES=$shapes "$rt_tests" "$out/add" "$out/rowsum" "$out/global_max_norm" "$tests" \
    > "$out/record.$i.txt" 2>&1 &
done
wait
for i in 1 2; do
  grep -q "All tests passed" "$out/record.$i.txt" && ok "recording run $i passed" ||
    bad "recording run $i: $(tail -3 "$out/record.$i.txt")"
done
python3 - "$shapes" <<'PY' && ok "every recorded line parses, each pair once per process" || bad "recorded shapes"
import json, sys, collections
lines = open(sys.argv[1]).read().splitlines()
pairs = collections.Counter()
for n, l in enumerate(lines, 1):
    j = json.loads(l)  # raises on a torn line
    assert set(j) == {"kernel", "hash", "shape"}, (n, l)
    pairs[(j["kernel"], tuple(sorted(j["shape"].items())))] += 1
print(f"{len(lines)} lines, {len(pairs)} distinct pairs:",
      ", ".join(f"{k} {dict(s)}" for k, s in sorted(pairs)))
assert pairs and all(c == 2 for c in pairs.values()), pairs
PY

# Exact keys of a cache as "kernel shape step" lines, sorted (buckets: "bucket ...").
keys() {
  "$kiln" cache show "$1" --json | python3 -c '
import json, sys
for e in json.load(sys.stdin):
    k = e["key"]
    shape = ",".join(f"{s}={v}" for s, v in sorted(k["shape"].items()))
    print(e["kernel"], "bucket" if k["bucket"] else "exact", shape, "step", k["step"], k["gpu"]["name"])
' | sort
}

# 2. Tune exactly the recorded shapes.
t0=$(date +%s%N)
for ex in "${bundles[@]}"; do
  "$kiln" tune "$out/$ex" --shapes-from "$shapes" -c "$out/full.json" --no-descent -q \
    > "$out/tune_full.$ex.txt" 2>&1 || bad "tune --shapes-from $ex: $(tail -2 "$out/tune_full.$ex.txt")"
done
echo "tune --shapes-from, every bundle: $(seconds "$t0")"
recorded=$(python3 -c '
import json, sys
print("\n".join(sorted({j["kernel"] + " " + ",".join(f"{s}={v}" for s, v in sorted(j["shape"].items()))
                       for j in map(json.loads, open(sys.argv[1]))})))' "$shapes")
tuned=$(keys "$out/full.json" | awk '$2 == "exact" {print $1, $3}' | sort -u)
[[ -n "$tuned" && "$tuned" == "$recorded" ]] && ok "the cache's exact shapes are the recorded ones" ||
  bad "tuned shapes differ from the recorded ones: $(diff <(echo "$recorded") <(echo "$tuned"))"

# Each exact entry's default in cache $1 is what a plain launch runs at its shape (kiln run
# --variant default), though the tuner timed other variants of the same kernel at other shapes
# first: defaults_match CACHE prints the entries that differ, and fails on any.
defaults_match() {
  "$kiln" cache show "$1" --json > "$1.show.json" || return 1
  python3 - "$kiln" "$out" "$1.show.json" "${bundles[@]}" <<'PY'
import json, subprocess, sys
kiln, out, shown, bundles = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
kernels = {}
for b in bundles:
    for k in json.load(open(f"{out}/{b}/manifest.json"))["kernels"]:
        kernels[k["name"]] = (b, k)
checked = bad = 0
for e in json.load(open(shown)):
    key = e["key"]
    if key["bucket"]:
        continue
    b, k = kernels[e["kernel"]]
    shape = ",".join(f"{s}={v}" for s, v in key["shape"].items())
    res = f"{out}/default_run.json"
    subprocess.run([kiln, "run", f"{out}/{b}", e["kernel"], "--shape", shape, "--variant",
                    "default", "--reps", "1", "--no-check", "--json", res],
                   check=True, stdout=subprocess.DEVNULL)
    ran = json.load(open(res))["variants"][0]["variants"][key["step"]]
    config = [v["config"] for v in k["steps"][key["step"]]["variants"] if v["id"] == ran][0]
    checked += 1
    if config != e["default"]["config"]:
        bad += 1
        print(f"{e['kernel']} {shape} step {key['step']}: the cache's default "
              f"{e['default']['config']}, a plain launch runs variant {ran} {config}")
print(f"{checked} exact entries, {bad} with another default")
sys.exit(1 if bad or not checked else 0)
PY
}
if msg=$(defaults_match "$out/full.json"); then
  ok "each exact entry's default is what a plain launch runs ($msg)"
else
  bad "defaults in the cache that a plain launch does not run: $msg"
fi
# The same for one kiln tune of two shapes of rowsum whose defaults differ (a tier, then the
# split of few long rows): the tuner's timing of the first shape's variants must not change
# what it records as the second shape's default.
"$kiln" tune "$out/rowsum" --shape M=4096,N=1000 --shape M=3,N=1000003 -c "$out/two.json" \
  --no-descent -q > "$out/tune_two.txt" 2>&1 || bad "tune of two rowsum shapes: $(tail -2 "$out/tune_two.txt")"
if msg=$(defaults_match "$out/two.json"); then
  ok "one tune of two rowsum shapes records each shape's own default ($msg)"
else
  bad "one tune of two rowsum shapes: $msg"
fi

# 3. Two shards at once, merged.
t0=$(date +%s%N)
for i in 0 1; do
  (
    for ex in "${bundles[@]}"; do
      "$kiln" tune "$out/$ex" --shapes-from "$shapes" --shard $i/2 -c "$out/shard$i.json" \
        --no-descent -q || echo "TUNE FAILED $ex"
    done
  ) > "$out/tune_shard$i.txt" 2>&1 &
done
wait
echo "two shards at once: $(seconds "$t0")"
for i in 0 1; do
  grep -q "TUNE FAILED" "$out/tune_shard$i.txt" && bad "shard $i/2: $(grep -m1 -B2 'TUNE FAILED' "$out/tune_shard$i.txt")"
  grep "^shard" "$out/tune_shard$i.txt"
done
"$kiln" cache merge "$out"/shard[01].json -o "$out/merged.json" || bad "cache merge"
if [[ "$(keys "$out/merged.json")" == "$(keys "$out/full.json")" ]]; then
  ok "two shards merged have the keys of the unsharded run ($(keys "$out/full.json" | wc -l) keys)"
else
  bad "merged keys differ: $(diff <(keys "$out/full.json") <(keys "$out/merged.json"))"
fi
"$kiln" cache diff "$out/full.json" "$out/merged.json" > "$out/diff.txt"
rc=$?
(( rc == 1 || rc == 0 )) && ok "cache diff full merged: exit $rc ($(wc -l < "$out/diff.txt") lines)" ||
  bad "cache diff exit $rc"

# 4. Show it, then a warm re-tune.
"$kiln" cache show "$out/full.json" | tee "$out/show.txt"
width=$(awk '{ if (length($0) > w) w = length($0) } END { print w }' "$out/show.txt")
(( width <= 100 )) && ok "cache show is $width columns wide" || bad "cache show is $width columns wide"
t0=$(date +%s%N)
for ex in "${bundles[@]}"; do
  "$kiln" tune "$out/$ex" --shapes-from "$shapes" -c "$out/full.json" -q > "$out/warm.$ex.txt" 2>&1
done
echo "warm re-tune: $(seconds "$t0")"
grep -q "step .*: default" "$out"/warm.*.txt && bad "the warm re-tune benchmarked something" ||
  ok "the warm re-tune benchmarked nothing"

if (( fail )); then echo "tune_shapes.sh: some checks FAILED"; exit 1; fi
echo "tune_shapes.sh: all checks passed"
