#!/usr/bin/env bash
# Session 35, device call 4: the few-tile GEMMs of bench/contraction.py (Kiln's rule, cuBLAS,
# torch eager and torch.compile(mode="max-autotune-no-cudagraphs") in one run, each checked
# first), on call 3's build.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
mkdir -p $OUT/call4
tar xf .carry/lib.tar -C build
PYTHONPATH=python KILN_BIN=$K KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so KILN_CACHE_DIR=$W/cache \
  TORCHINDUCTOR_CACHE_DIR=$W/ti timeout 560 python3 bench/contraction.py $W/out --only few-tiles 2>&1 | tee $W/contraction_bench.txt
cp $W/contraction_bench.txt $W/out/contraction.json $OUT/call4/ 2>/dev/null; cp $W/gpu.txt $OUT/call4/; echo "done $(el)"
