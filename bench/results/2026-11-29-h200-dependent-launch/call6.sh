#!/usr/bin/env bash
# Session 30, device call 6: where Kiln's GEMM of 8192 x 4096 x 4096 issues its instructions --
# Nsight Compute's source counters per SASS instruction (csv) and the warp states, the third
# launch of gemm_s0_v7 (call 5 found 1.65x cuBLAS's instructions issued).
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
tar xf .carry/lib.tar -C build
export PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so
timeout 120 python3 bench/results/2026-11-29-h200-dependent-launch/ncu_gemm.py && echo "warm-up run ok"
timeout 200 ncu --section SourceCounters --section WarpStateStats --section InstructionStats \
  -k regex:'gemm_s0' --launch-skip 2 --launch-count 1 -o $W/kiln_gemm \
  python3 bench/results/2026-11-29-h200-dependent-launch/ncu_gemm.py > $W/ncu_run.txt 2>&1
echo "ncu: exit $?"
ncu -i $W/kiln_gemm.ncu-rep --print-details all > $W/ncu_details.txt 2>&1
ncu -i $W/kiln_gemm.ncu-rep --page source --print-source sass --csv > $W/sass.csv 2>&1
echo "sass lines: $(wc -l < $W/sass.csv)"; head -2 $W/sass.csv | cut -c1-600
grep -E "Stall|Warp Cycles|Executed Instructions|Branch|Issued" $W/ncu_details.txt | head -40
gzip -k $W/sass.csv; cp $W/sass.csv.gz $W/sass.csv.gz.txt 2>/dev/null
mkdir -p $OUT/call6 && cp $W/ncu_details.txt $W/ncu_run.txt $W/sass.csv.gz $OUT/call6/
