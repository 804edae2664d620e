#!/usr/bin/env bash
# Everything the GPU machine runs in one call (docs/testing.md), in this order:
#  1. the benchmarks named by BENCH (default "pointwise reductions"), alone on the GPU;
#  2. the GPU end-to-end cases, every variant at every shape, in KILN_GPU_SHARDS (default 4)
#     shards at once;
#  3. the runtime's launch tests and the C API tests; the hostile-bundle tests and concurrent
#     tuners (issue 7) when build/tests/kiln_gpu_hostile_tests was carried;
#  4. compute-sanitizer (memcheck, racecheck, initcheck, one tool per shard at once) on the
#     default variant of the smaller cases and on the runtime tests, and initcheck on every
#     variant of the split and buffered kernels (outputs, buffers and workspaces poisoned).
#  5. (phase "big", only when PHASES names it) the default variant of a tiled transpose and of a
#     bf16 column sum at two shapes each of more than 2^31 elements;
#  6. (phase "tune", only when PHASES names it) tests/gpu/tune_shapes.sh: shapes recorded by a
#     real run (KILN_RECORD_SHAPES), kiln tune --shapes-from, two shards merged with the keys
#     of one unsharded run.
# KILN_REQUIRE_GPU=1 is exported: a missing driver fails instead of skipping. The script exits
# 1 when any phase failed (the summary says which), 0 when everything passed.
# PHASES picks some of them (default "bench e2e runtime sanitizers"): the whole set takes
# longer than one device call allows with every variant checked, so run it as two calls.
# Each summary line is also appended to $OUT/summary.txt as soon as it is known.
# Expects build/tools/kiln, build/tests/kiln_gpu_runtime_tests and
# build/tests/kiln_gpu_c_api_tests (carried from the build machine). Bundles and logs are written under WORK (default /tmp/kiln-device-run), not under
# $OUT: the device tool walks $OUT when the call ends, and thousands of cubins there cost the
# call its time. Logs are packed into $OUT/logs.tgz; a table is printed last, with the first
# lines of every failed case.
set -uo pipefail
cd "$(dirname "$0")/../.."
result=${OUT:-device-out}
out=${WORK:-/tmp/kiln-device-run}
phases=" ${PHASES:-bench e2e runtime sanitizers} "
mkdir -p "$out" "$result"
result=$(cd "$result" && pwd)
export PATH=/usr/local/cuda/bin:$PATH
export KILN_REQUIRE_GPU=1
kiln=build/tools/kiln rt_tests=build/tests/kiln_gpu_runtime_tests
c_api_tests=build/tests/kiln_gpu_c_api_tests
hostile=build/tests/kiln_gpu_hostile_tests
summary=() failed=()
note() { summary+=("$1"); echo "$1" >> "$result/summary.txt"; }
# check NAME RC: a non-zero RC marks NAME failed (the exit status and the summary's last line).
check() { if (( $2 != 0 )); then failed+=("$1"); note "FAILED: $1 (exit $2)"; fi; }
wants() { [[ $phases == *" $1 "* ]]; }
seconds() { echo $(( $(date +%s) - $1 )); }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

if wants bench; then
  for bench in ${BENCH:-pointwise reductions}; do
    bench/$bench.sh "$kiln" "$out/bench_$bench" > "$out/bench_$bench.txt" 2>&1
    rc=$?
    note "bench $bench: exit $rc"
    check "bench $bench" $rc
  done
fi

if wants e2e; then
  t0=$(date +%s)
  pids=() n=${KILN_GPU_SHARDS:-4}
  for ((i = 0; i < n; i++)); do
    KILN_GPU_SHARD=$i/$n tests/gpu/run_gpu_tests.sh "$kiln" "$out/gpu/$i" > "$out/gpu_tests.$i.txt" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < n; i++)); do wait "${pids[$i]}"; check "gpu end-to-end shard $i/$n" $?; done
  cat "$out"/gpu_tests.[0-9]*.txt > "$out/gpu_tests.txt"
  totals=$(awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "%d passed, %d failed, %d skipped", p, f, s}' "$out/gpu_tests.txt")
  note "gpu end-to-end (all variants): $totals ($(seconds "$t0") s)"
fi

for ex in add rowsum global_max_norm; do
  "$kiln" compile examples/$ex.kiln -o "$out/$ex.bundle" > /dev/null
  check "compile $ex" $?
done
if wants runtime; then
  "$rt_tests" "$out/add.bundle" "$out/rowsum.bundle" "$out/global_max_norm.bundle" > "$out/runtime_tests.txt" 2>&1
  rc=$?
  note "runtime launch tests:  $(grep -E 'passed|failed|GPU' "$out/runtime_tests.txt" | tail -1)"
  check "runtime launch tests" $rc
  "$c_api_tests" "$out/add.bundle" "$out/rowsum.bundle" > "$out/c_api_tests.txt" 2>&1
  rc=$?
  note "C API tests:           $(grep -E 'passed|failed|GPU' "$out/c_api_tests.txt" | tail -1)"
  check "C API tests" $rc
fi
# The unit tests that need a real GPU (tag [gpu]: the tuner's comparison kernel against the
# host check), when the unit test binary was carried; they skip with a warning elsewhere.
unit_tests=build/tests/kiln_unit_tests
if wants runtime && [[ -x "$unit_tests" ]]; then
  "$unit_tests" "[gpu]" > "$out/unit_gpu_tests.txt" 2>&1
  rc=$?
  grep -q "skipped: no GPU" "$out/unit_gpu_tests.txt" && rc=1
  note "unit tests [gpu]:      $(grep -E 'passed|failed' "$out/unit_gpu_tests.txt" | tail -1)"
  check "unit tests [gpu]" $rc
fi
# A launch with a symbol of 0, -1 or 2^62 on every kernel of every example returns an error
# and the process lives (tests/host/launch_checks.cpp, tag [real], on this machine's driver).
host_tests=build/tests/kiln_host_launch_tests
if wants runtime && [[ -x "$host_tests" ]]; then
  mkdir -p "$out/default"
  for f in examples/*.kiln; do
    ex=$(basename "$f" .kiln)
    [[ -f "$out/default/$ex/manifest.json" ]] ||
      "$kiln" compile "$f" -o "$out/default/$ex" --default-only --arch sm_90 > /dev/null &
  done
  wait
  "$host_tests" real "$out"/default/* -- "[real]" > "$out/symbol_tests.txt" 2>&1
  rc=$?
  note "bad symbols, every example: $(grep -E 'passed|failed' "$out/symbol_tests.txt" | tail -1)"
  check "bad-symbol launches" $rc
fi
if wants runtime && [[ -x "$hostile" ]]; then
  "$kiln" compile examples/swiglu.kiln -o "$out/swiglu.bundle" > /dev/null
  "$hostile" "$out/add.bundle" "$out/swiglu.bundle" > "$out/hostile_tests.txt" 2>&1
  rc=$?
  note "hostile bundle tests:  $(grep -E 'passed|failed|GPU' "$out/hostile_tests.txt" | tail -1)"
  check "hostile bundle tests" $rc
  KILN_SHARED_BUNDLE=1 tests/gpu/concurrent_tune.sh "$kiln" "$out/add.bundle" "$out/concurrent" \
    > "$out/concurrent_tune.txt" 2>&1
  rc=$?
  note "concurrent tuners:     $(tail -1 "$out/concurrent_tune.txt")"
  check "concurrent tuners" $rc
fi

# The default variant of KERNEL of SPEC at each of SHAPES (more than 2^31 elements each),
# checked against the interpreter: big NAME SPEC KERNEL SHAPES...
big() {
  local name=$1 spec=$2 kernel=$3 t0 rc=0
  shift 3
  local bundle="$out/$(basename "$spec" .kiln).bundle"
  t0=$(date +%s)
  "$kiln" compile "$spec" -o "$bundle" > /dev/null
  for shape in "$@"; do
    "$kiln" run "$bundle" "$kernel" --shape "$shape" --reps 2 >> "$out/big.txt" 2>&1 || rc=1
  done
  note "$name of more than 2^31 elements: exit $rc ($(seconds "$t0") s)"
  check "big $name" $rc
}

# Tiled transposes (tests/gpu/cases.txt says why not every variant), and column sums: the deep
# split (64 columns) and the wide one (2048), each row's offset past 2^31 elements.
if wants big; then
  big transposes examples/permute.kiln transpose_bf16 M=46341,N=46341 M=32768,N=65544
  big "column sums" examples/reduction_suite.kiln colsum_bf16 M=33554433,N=64 M=1048577,N=2048
fi

if wants tune; then
  t0=$(date +%s)
  tests/gpu/tune_shapes.sh "$kiln" "$rt_tests" "$out/tune_shapes" > "$out/tune_shapes.txt" 2>&1
  rc=$?
  note "recorded shapes, --shapes-from, shards + merge: $(tail -1 "$out/tune_shapes.txt") ($(seconds "$t0") s)"
  check "tune_shapes.sh" $rc
fi

# initcheck on every variant (kiln run --variant all) of the kernels whose launches allocate
# scratch memory: split rows and columns (workspaces) and buffers between steps; and of
# contractions (their tiles' edges, copies zero-filled past them, and the epilogue's bounds).
# kiln run poisons that memory before each checked launch, so a read of what no launch wrote
# is both an initcheck report and a wrong result.
initcheck_all() {
  local dir=$out/san_initcheck_all pass=0 fail=0
  mkdir -p "$dir"
  while read -r example kernel shape; do
    local bundle=$dir/bundles/$example log=$dir/$kernel.$shape.log
    [[ -f $bundle/manifest.json ]] || "$kiln" compile examples/$example.kiln -o "$bundle" > /dev/null
    compute-sanitizer --tool initcheck --error-exitcode 9 \
      "$kiln" run "$bundle" "$kernel" --shape "$shape" --variant all --reps 1 > "$log" 2>&1
    local rc=$?
    if (( rc == 0 )); then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL(rc=$rc) $kernel $shape"; tail -5 "$log"; fi
  done <<'CASES'
rowsum           rowsum               M=3,N=100003
softmax          softmax              M=3,N=100003
mean_var         mean_var             M=3,N=100003
colsum           colsum               M=100003,N=3
reduction_suite  colsum_bf16          M=100003,N=3
rowsum_colsum    rowsum_colsum        M=3,N=100003
rowsum_colsum    rowsum_colsum        M=100003,N=3
global_max_norm  global_max_norm      M=1000003,N=3
reduction_suite  global_max_norm_bf16 M=1000,N=33
matmul           linear_gelu          M=333,N=257,K=100
matmul           scores               B=3,M=17,N=130,D=64
matmul           matmul_tn            M=65,N=300,K=37
CASES
  echo "$pass passed, $fail failed, 0 skipped"
  (( fail == 0 ))
}

if wants sanitizers; then
  t0=$(date +%s)
  pids=()
  for tool in memcheck racecheck initcheck; do
    (
      san=(compute-sanitizer --tool $tool --error-exitcode 9)
      tests/gpu/run_gpu_tests.sh "$kiln" "$out/san_$tool" "${san[@]}" > "$out/sanitizer_$tool.txt" 2>&1
      e2e=$?
      "${san[@]}" "$rt_tests" "$out/add.bundle" "$out/rowsum.bundle" "$out/global_max_norm.bundle" >> "$out/sanitizer_$tool.txt" 2>&1
      rc=$?
      echo "runtime tests rc=$rc" >> "$out/sanitizer_$tool.txt"
      (( e2e == 0 && rc == 0 ))
    ) &
    pids+=($!)
  done
  initcheck_all > "$out/sanitizer_initcheck_all.txt" 2>&1 &
  pids+=($!)
  tools=(memcheck racecheck initcheck)
  for i in 0 1 2; do wait "${pids[$i]}"; check "compute-sanitizer ${tools[$i]}" $?; done
  wait "${pids[3]}"
  check "initcheck, every variant of split and buffered kernels" $?
  for tool in memcheck racecheck initcheck; do
    e2e=$(grep -E 'passed,.*failed' "$out/sanitizer_$tool.txt" | tail -1)
    note "$(printf '%-22s' "$tool:") e2e $e2e; $(tail -1 "$out/sanitizer_$tool.txt")"
  done
  note "initcheck, all variants of split/buffered: $(tail -1 "$out/sanitizer_initcheck_all.txt")"
  note "sanitizers: $(seconds "$t0") s"
fi

echo
grep -hE '^kernel|v[0-9]+\*|copy baseline|^torch' "$out"/bench_*.txt 2>/dev/null
echo
grep -h -A6 'FAIL' "$out"/gpu_tests.txt 2>/dev/null | head -60
echo
printf '%s\n' "${summary[@]}"
# The device tool returns at most 8 files: every log goes into logs.tgz, beside summary.txt.
(cd "$out" && tar czf "$result/logs.tgz" --exclude='*.bundle' --exclude=bundles \
  --exclude='*.cubin' --exclude='*.ptx' ./* 2>/dev/null)
if (( ${#failed[@]} )); then
  note "device_run.sh: ${#failed[@]} failed: $(IFS=';'; echo "${failed[*]}")"
  exit 1
fi
note "device_run.sh: everything passed (phases:$phases)"
exit 0
