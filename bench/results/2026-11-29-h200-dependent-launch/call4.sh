#!/usr/bin/env bash
# Session 30, device call 4: why RMSNorm then matmul stays behind torch.compile at 8192 x 4096
# x 4096 -- the GEMM under sustained load, Kiln beside cuBLAS and torch.compile, with the
# board's power and SM clock sampled (power.py).
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
tar xf .carry/lib.tar -C build
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 400 python3 bench/results/2026-11-29-h200-dependent-launch/power.py $W/power.json > $W/power.txt 2>&1
echo "power.py: exit $?"; grep -E "^round|Error|error" $W/power.txt | head -20
cp $W/power.json $W/power.json.txt
mkdir -p $OUT/call4 && cp $W/*.txt $OUT/call4/
