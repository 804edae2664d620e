#!/usr/bin/env bash
# Everything the GPU machine runs in one call (docs/testing.md), in this order:
#  1. the benchmarks named by BENCH (default "pointwise reductions"), alone on the GPU;
#  2. the GPU end-to-end cases, every variant at every shape, in 4 shards at once;
#  3. the runtime's launch tests; the hostile-bundle tests and concurrent tuners (issue 7) when
#     build/tests/kiln_gpu_hostile_tests was carried;
#  4. compute-sanitizer (memcheck, racecheck, initcheck, one tool per shard at once) on the
#     default variant of the smaller cases and on the runtime tests.
# PHASES picks some of them (default "bench e2e runtime sanitizers"): the whole set takes
# longer than one device call allows with every variant checked, so run it as two calls.
# Each summary line is also appended to $OUT/summary.txt as soon as it is known.
# Expects build/tools/kiln and build/tests/kiln_gpu_runtime_tests (carried from the build
# machine). Bundles and logs are written under WORK (default /tmp/kiln-device-run), not under
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
kiln=build/tools/kiln rt_tests=build/tests/kiln_gpu_runtime_tests
hostile=build/tests/kiln_gpu_hostile_tests
summary=()
note() { summary+=("$1"); echo "$1" >> "$result/summary.txt"; }
wants() { [[ $phases == *" $1 "* ]]; }
seconds() { echo $(( $(date +%s) - $1 )); }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

if wants bench; then
  for bench in ${BENCH:-pointwise reductions}; do
    bench/$bench.sh "$kiln" "$out/bench_$bench" > "$out/bench_$bench.txt" 2>&1
    note "bench $bench: exit $?"
  done
fi

if wants e2e; then
  t0=$(date +%s)
  for i in 0 1 2 3; do
    KILN_GPU_SHARD=$i/4 tests/gpu/run_gpu_tests.sh "$kiln" "$out/gpu/$i" > "$out/gpu_tests.$i.txt" 2>&1 &
  done
  wait
  cat "$out"/gpu_tests.[0-3].txt > "$out/gpu_tests.txt"
  totals=$(awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "%d passed, %d failed, %d skipped", p, f, s}' "$out/gpu_tests.txt")
  note "gpu end-to-end (all variants): $totals ($(seconds "$t0") s)"
fi

"$kiln" compile examples/add.kiln -o "$out/add.bundle" > /dev/null
"$kiln" compile examples/rowsum.kiln -o "$out/rowsum.bundle" > /dev/null
"$kiln" compile examples/global_max_norm.kiln -o "$out/global_max_norm.bundle" > /dev/null
if wants runtime; then
  "$rt_tests" "$out/add.bundle" "$out/rowsum.bundle" "$out/global_max_norm.bundle" > "$out/runtime_tests.txt" 2>&1
  note "runtime launch tests:  $(grep -E 'passed|failed' "$out/runtime_tests.txt" | tail -1)"
fi
if wants runtime && [[ -x "$hostile" ]]; then
  "$kiln" compile examples/swiglu.kiln -o "$out/swiglu.bundle" > /dev/null
  "$hostile" "$out/add.bundle" "$out/swiglu.bundle" > "$out/hostile_tests.txt" 2>&1
  note "hostile bundle tests:  $(grep -E 'passed|failed' "$out/hostile_tests.txt" | tail -1)"
  KILN_SHARED_BUNDLE=1 tests/gpu/concurrent_tune.sh "$kiln" "$out/add.bundle" "$out/concurrent" \
    > "$out/concurrent_tune.txt" 2>&1
  note "concurrent tuners:     $(tail -1 "$out/concurrent_tune.txt")"
fi

if wants sanitizers; then
  t0=$(date +%s)
  for tool in memcheck racecheck initcheck; do
    (
      san=(compute-sanitizer --tool $tool --error-exitcode 9)
      tests/gpu/run_gpu_tests.sh "$kiln" "$out/san_$tool" "${san[@]}" > "$out/sanitizer_$tool.txt" 2>&1
      "${san[@]}" "$rt_tests" "$out/add.bundle" "$out/rowsum.bundle" "$out/global_max_norm.bundle" >> "$out/sanitizer_$tool.txt" 2>&1
      echo "runtime tests rc=$?" >> "$out/sanitizer_$tool.txt"
    ) &
  done
  wait
  for tool in memcheck racecheck initcheck; do
    e2e=$(grep -E 'passed,.*failed' "$out/sanitizer_$tool.txt" | tail -1)
    note "$(printf '%-22s' "$tool:") e2e $e2e; $(tail -1 "$out/sanitizer_$tool.txt")"
  done
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
