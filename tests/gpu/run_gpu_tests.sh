#!/usr/bin/env bash
# The GPU end-to-end tests without CTest, for a GPU machine that has only the driver and the
# kiln binary: compile every example in tests/gpu/cases.txt and tests/gpu/special_cases.txt
# (inputs with NaN and infinities) and run it at each shape.
#   tests/gpu/run_gpu_tests.sh KILN_BINARY OUT_DIR [WRAPPER...]
# Every variant of a kernel runs at every shape. WRAPPER (e.g. `compute-sanitizer --tool
# memcheck`) prefixes each `kiln run`; then only the default variant at the first three shapes
# of each line of cases.txt runs, with few repetitions.
# `kiln run` exits 77 only when the CUDA driver library cannot be loaded; with
# KILN_REQUIRE_GPU=1 (which device_run.sh exports) kiln run itself fails then, and a skip is
# counted as a failure here too. Exits non-zero when anything failed.
set -uo pipefail
kiln=$1 out=$2
shift 2
wrapper=("$@")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$out"
require=0
[[ -n "${KILN_REQUIRE_GPU:-}" && "${KILN_REQUIRE_GPU}" != 0 ]] && require=1
# KILN_GPU_SHARD=i/n runs only every n-th case line from the i-th (0-based): shards can run at
# once, each with its own OUT_DIR.
IFS=/ read -r shard shards <<< "${KILN_GPU_SHARD:-0/1}"
# KILN_GPU_EXAMPLES="a b": only the cases of those examples (a run after a change to them).
only=" ${KILN_GPU_EXAMPLES:-} "
pass=0 fail=0 skip=0 line=0
# One line per case: INPUTS EXAMPLE KERNEL SHAPES...
cases() {
  grep -E '^[a-z]' "$here/cases.txt" | sed 's/^/random /'
  if (( ${#wrapper[@]} == 0 )); then grep -E '^[a-z]' "$here/special_cases.txt"; fi
}
while read -r inputs example kernel shapes; do
  (( line++ % shards == shard )) || continue
  [[ $only == "  " || $only == *" $example "* ]] || continue
  bundle="$out/bundles/$example"
  if [[ ! -f "$bundle/manifest.json" ]]; then
    "$kiln" compile "$root/examples/$example.kiln" -o "$bundle" > /dev/null || { echo "FAIL compile $example"; fail=$((fail+1)); continue; }
  fi
  read -ra list <<< "$shapes"
  # Every variant is checked against the interpreter (its timing is not the point here).
  args=(--variant all --reps 3)
  if (( ${#wrapper[@]} )); then list=("${list[@]:0:3}"); args=(--reps 2); fi
  for shape in "${list[@]}"; do
    log="$out/$example.$kernel.$inputs.$shape.log"
    KILN_RUN_INPUTS=$inputs "${wrapper[@]}" "$kiln" run "$bundle" "$kernel" --shape "$shape" "${args[@]}" > "$log" 2>&1
    rc=$?
    if (( rc == 0 )); then pass=$((pass+1)); status=ok
    elif (( rc == 77 && !require )); then skip=$((skip+1)); status=SKIP
    else fail=$((fail+1)); status="FAIL(rc=$rc)"; fi
    printf '%-16s %-20s %-11s %-20s %s\n' "$example" "$kernel" "$inputs" "$shape" "$status"
    if [[ $status != ok ]]; then grep -m 5 '^kiln run:' "$log"; tail -5 "$log"; fi
  done
done < <(cases)
echo "$pass passed, $fail failed, $skip skipped"
(( fail == 0 ))
