#!/usr/bin/env bash
# Several `kiln tune` processes at once on one cache file (issue 7): nothing lost, no torn
# file, nothing left behind.
#   tests/gpu/concurrent_tune.sh KILN_BINARY BUNDLE_DIR OUT_DIR
# BUNDLE_DIR is a compiled examples/add.kiln (kernel add, symbol N); it is only read. Needs a
# GPU, the kiln binary and python3; exits 77 without a CUDA driver or device, 1 on a failure.
#
#   1. Different shapes: 4 tuners, 3 shapes each (12 exact shapes in 12 distinct power-of-two
#      buckets), one cache file. Each tuner stores after every shape under the cache's lock, so
#      12 stores race. Afterwards the file must be valid JSON holding all 24 entries (exact +
#      bucket per shape), `kiln cache show` must list them, and no temporary may be left.
#   2. The same shape: 4 tuners tune N=100003 into one fresh cache file at once. Afterwards
#      it must hold exactly one entry per key (2), written by one of them.
# What races is the cache file, so each tuner works on its own copy of the bundle (kiln tune
# may add compiled variants to its bundle), cut down to the default variant of each step and
# tuned without coordinate descent: one candidate per shape. (With 4 processes time-slicing
# one GPU, each of the 18 full candidates takes seconds to time.) KILN_SHARED_BUNDLE=1 adds a
# third round in which the 4 tuners share one such bundle directory with coordinate descent
# on, so that they also compile variants into it at once, and then checks with
# `kiln run --variant all` that every variant the bundle lists still computes the right result.
set -uo pipefail
if (($# != 3)); then
  echo "usage: $0 KILN_BINARY BUNDLE_DIR OUT_DIR" >&2
  exit 2
fi
kiln=$1 bundle=$2 out=$3
tuners=4
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
mkdir -p "$out"

probe=$("$kiln" run "$bundle" add --shape N=1 --reps 1 2>&1)
case $? in
  0) ;;
  77) echo "[SKIP] $probe"; exit 77 ;;
  *) echo "$probe"; echo "FAIL: kiln run $bundle add does not run"; exit 1 ;;
esac

# The bundle reduced to each step's default variant (renumbered 0), in directory $1.
one_variant_bundle() {
  rm -rf "$1" && cp -r "$bundle" "$1"
  python3 - "$1/manifest.json" << 'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
for k in m["kernels"]:
    for s in k["steps"]:
        s["variants"] = [dict(v, id=0) for v in s["variants"] if v["is_default"]]
json.dump(m, open(sys.argv[1], "w"), indent=2)
EOF
}

# Starts one `kiln tune` per argument set (";"-separated shapes) in the background, each on
# its own bundle copy unless $shared_bundle is set; waits for all; checks every exit status.
run_tuners() {
  local cache=$1 round=$2
  shift 2
  local pids=() i=0 set_ s list args b
  for set_ in "$@"; do
    b=$shared_bundle
    if [[ -z $b ]]; then
      b=$out/$round.bundle.$i
      one_variant_bundle "$b"
    fi
    args=()
    IFS=';' read -ra list <<< "$set_"
    for s in "${list[@]}"; do args+=(--shape "$s"); done
    "$kiln" tune "$b" "${args[@]}" -c "$cache" -q $descent > "$out/$round.tune.$i.log" 2>&1 &
    pids+=($!)
    i=$((i + 1))
  done
  for i in "${!pids[@]}"; do
    local rc=0
    wait "${pids[$i]}" || rc=$?
    ((rc == 0)) || fail "$round: tuner $i exited $rc: $(tail -1 "$out/$round.tune.$i.log")"
  done
}

# check_cache FILE EXPECTED_ENTRIES SHAPE...: the file is a whole cache holding exactly the
# exact and bucket entries of these shapes of add, one per key, and nothing else.
check_cache() {
  python3 - "$@" << 'EOF'
import json, sys
path, expected, shapes = sys.argv[1], int(sys.argv[2]), [int(s) for s in sys.argv[3:]]
try:
    c = json.load(open(path))
except ValueError as e:
    sys.exit(f"{path}: not valid JSON (torn?): {e}")
problems = []
if c.get("format") != "kiln-autotune-cache" or c.get("version") != 1:
    problems.append(f"format/version {c.get('format')!r} {c.get('version')!r}")
entries = c.get("entries", [])
keys = [json.dumps(e["key"], sort_keys=True) for e in entries]
if len(keys) != len(set(keys)):
    problems.append("a key appears twice")
have = {(e["key"]["bucket"], e["key"]["shape"].get("N")) for e in entries if e["kernel"] == "add"}
for n in shapes:
    bucket = 1 << (n - 1).bit_length()
    for want in [(False, n), (True, bucket)]:
        if want not in have:
            problems.append(f"missing the {'bucket' if want[0] else 'exact'} entry N={want[1]}")
if len(entries) != expected:
    problems.append(f"{len(entries)} entries, expected {expected}")
for p in problems:
    print(f"FAIL: {path}: {p}")
sys.exit(1 if problems else 0)
EOF
}

no_leftovers() {
  local left
  left=$(find "$out" -maxdepth 1 -name "$(basename "$1").tmp.*")
  [[ -z $left ]] || fail "temporary files left: $left"
}

# Round 1: 4 tuners x 3 shapes, N = 2^k + 1 for k = 10..21 (each in its own bucket 2^(k+1)).
shared_bundle="" descent=--no-descent
cache=$out/different.cache.json
rm -f "$cache" "$cache.lock"
sets=() shapes=()
for ((p = 0; p < tuners; p++)); do
  one=""
  for ((j = 0; j < 3; j++)); do
    n=$(((1 << (10 + 3 * p + j)) + 1))
    shapes+=("$n")
    one+="${one:+;}N=$n"
  done
  sets+=("$one")
done
t0=$(date +%s)
run_tuners "$cache" different "${sets[@]}"
echo "round 1: $tuners tuners, different shapes: $(($(date +%s) - t0)) s"
check_cache "$cache" 24 "${shapes[@]}" || fail "round 1: cache contents"
rows=$("$kiln" cache show "$cache" --buckets | grep -cE '^  (N=|bucket N<=)') || true
[[ $rows == 24 ]] || fail "round 1: kiln cache show lists $rows entries, expected 24"
no_leftovers "$cache"

# Round 2: 4 tuners, the same shape, one fresh cache.
cache=$out/same.cache.json
rm -f "$cache" "$cache.lock"
t0=$(date +%s)
run_tuners "$cache" same N=100003 N=100003 N=100003 N=100003
echo "round 2: $tuners tuners, the same shape: $(($(date +%s) - t0)) s"
check_cache "$cache" 2 100003 || fail "round 2: cache contents"
"$kiln" cache show "$cache" > /dev/null || fail "round 2: kiln cache show"
no_leftovers "$cache"

# Round 3 (KILN_SHARED_BUNDLE=1): one bundle directory, descent on, then every variant checked.
if [[ ${KILN_SHARED_BUNDLE:-0} == 1 ]]; then
  shared_bundle=$out/shared.bundle descent=""
  one_variant_bundle "$shared_bundle"
  cache=$out/shared.cache.json
  rm -f "$cache" "$cache.lock"
  run_tuners "$cache" shared N=1000 N=3000 N=30000 N=300000
  check_cache "$cache" 8 1000 3000 30000 300000 || fail "round 3: cache contents"
  "$kiln" run "$shared_bundle" add --shape N=100003 --variant all --reps 3 > "$out/shared.run.log" 2>&1 ||
    fail "round 3: kiln run --variant all on the shared bundle: $(tail -3 "$out/shared.run.log")"
fi

if ((failures == 0)); then
  echo "PASS: concurrent kiln tune lost nothing and tore nothing"
else
  echo "$failures failure(s); logs in $out"
fi
((failures == 0))
