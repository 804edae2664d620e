#!/usr/bin/env bash
# Session 28, device call 5, the submitted build (call 4's): bench/contraction.py, every case,
# Kiln beside cuBLAS and torch.compile (mode="max-autotune-no-cudagraphs") in one run.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
tar xf .carry/lib.tar -C build
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 420 python3 bench/contraction.py $W/contraction > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $?"
grep -E '^(gemm|bmm|bias|rmsnorm)' $W/contraction_bench.txt
mkdir -p $OUT/call5 && cp -r $W/gpu.txt $W/contraction_bench.txt $W/contraction $OUT/call5/
