#!/usr/bin/env bash
# Contraction benchmark (issue 18), in one call: every variant of bench/contraction.kiln's
# gemm at each shape with `kiln run` (no check: the GPU tests check every variant at awkward
# shapes, and bench/contraction.py checks the heuristic's variant here), then
# bench/contraction.py: Kiln's heuristic variant beside cuBLAS and torch.compile
# (max-autotune-no-cudagraphs), each result checked before it is timed.
#   bench/contraction.sh KILN_BINARY OUT_DIR [--quick]
# Needs build/lib/libkiln_runtime.so and torch with CUDA and Triton.
set -uo pipefail
kiln=$1 out=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$out/gpu.txt"
"$kiln" compile "$root/bench/contraction.kiln" -o "$out/bundle" > /dev/null || exit 1
rc=0
for shape in M=1024,N=1024,K=1024 M=4096,N=4096,K=4096 M=8192,N=8192,K=8192 M=8192,N=4096,K=4096 \
    M=2048,N=2048,K=2048 M=4096,N=4096,K=1000 M=3000,N=5000,K=4095; do
  "$kiln" run "$out/bundle" gemm --shape "$shape" --variant all --no-check || rc=1
done
PYTHONPATH="$root/python" KILN_BIN="$kiln" KILN_RUNTIME_LIB="${KILN_RUNTIME_LIB:-$root/build/lib/libkiln_runtime.so}" \
  python3 "$root/bench/contraction.py" "$out" "$@" || rc=1
exit $rc
