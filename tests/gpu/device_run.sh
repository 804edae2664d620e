#!/usr/bin/env bash
# Everything the GPU machine runs in one call (docs/testing.md): the GPU end-to-end tests,
# the runtime's launch tests, compute-sanitizer (memcheck, racecheck, initcheck) on both,
# and the pointwise benchmark. Expects build/tools/kiln and build/tests/kiln_gpu_runtime_tests
# (carried from the build machine). Logs go to $OUT (or ./device-out); a table is printed last.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-device-out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
kiln=build/tools/kiln rt_tests=build/tests/kiln_gpu_runtime_tests
summary=()
note() { summary+=("$1"); }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
tests/gpu/run_gpu_tests.sh "$kiln" "$out/gpu" > "$out/gpu_tests.txt" 2>&1
note "gpu end-to-end:        $(tail -1 "$out/gpu_tests.txt")"
"$rt_tests" "$out/gpu/bundles/add" > "$out/runtime_tests.txt" 2>&1
note "runtime launch tests:  $(grep -E 'passed|failed' "$out/runtime_tests.txt" | tail -1)"
for tool in memcheck racecheck initcheck; do
  san=(compute-sanitizer --tool $tool --error-exitcode 9)
  tests/gpu/run_gpu_tests.sh "$kiln" "$out/gpu" "${san[@]}" > "$out/sanitizer_$tool.txt" 2>&1
  e2e=$(tail -1 "$out/sanitizer_$tool.txt")
  "${san[@]}" "$rt_tests" "$out/gpu/bundles/add" >> "$out/sanitizer_$tool.txt" 2>&1
  rc=$?
  note "$(printf '%-22s' "$tool:") e2e $e2e; runtime tests rc=$rc"
done
bench/pointwise.sh "$kiln" "$out/bench" > "$out/bench.txt" 2>&1
note "bench: exit $?"
(cd "$out" && tar czf logs.tgz --remove-files gpu bench 2>/dev/null)
echo; cat "$out/bench.txt" | grep -E '^kernel|v[0-9]+\*|copy baseline|^torch' ; echo
printf '%s\n' "${summary[@]}"
