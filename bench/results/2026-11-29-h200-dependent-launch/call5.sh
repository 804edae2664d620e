#!/usr/bin/env bash
# Session 30, device call 5: Nsight Compute on Kiln's GEMM of 8192 x 4096 x 4096 and cuBLAS's
# (clocks locked at base by ncu, so cycles, not the power limit, compare): duration, cycles,
# the tensor pipes' and memory's utilization (SpeedOfLight, ComputeWorkloadAnalysis,
# MemoryWorkloadAnalysis, Occupancy, LaunchStats), the third launch of each.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
tar xf .carry/lib.tar -C build
export PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so
timeout 120 python3 bench/results/2026-11-29-h200-dependent-launch/ncu_gemm.py && echo "warm-up run ok"
timeout 300 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section Occupancy --section LaunchStats --metrics sm__cycles_elapsed.max,smsp__cycles_active.avg \
  -k regex:'gemm_s0|nvjet|sm90|cutlass|gemm' --launch-skip 2 --launch-count 4 \
  python3 bench/results/2026-11-29-h200-dependent-launch/ncu_gemm.py > $W/ncu_gemm.txt 2>&1
echo "ncu: exit $?"
grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|Elapsed Cycles|SM Busy|Compute \(SM\) Throughput|Memory Throughput|Issue Slots|Registers Per|Achieved Occupancy|sm__cycles_elapsed.max|smsp__cycles_active|L2 Hit|DRAM Throughput|Executed Ipc" $W/ncu_gemm.txt | head -80
mkdir -p $OUT/call5 && cp $W/*.txt $OUT/call5/
