#!/usr/bin/env bash
# Session 24, device call 5 (measured for the next step, nothing changed by it): why the f32
# layernorm's tier for rows of 4096 (v5: 128 threads a row, 8 vectors each) took 1.43x the time
# of 512 threads a row (v11, 2 vectors each) at 8 rows, when the f32 softmax's same tiers were
# within 4% (2026-11-28-h200-short-outer call 6). Nsight Compute on one launch of each, both
# kernels of examples/reduction_suite.kiln (carried in .carry/rows3.tar.xz), 8 rows of 4096;
# then the times again, every variant, 8 rows of 4096.
set -uo pipefail
W=/tmp/w5
source bench/device_setup.sh
tar xJf .carry/rows3.tar.xz -C $W reduction_suite
B=$W/reduction_suite
for k in layernorm_f32 softmax_f32; do
  for v in 5 11; do
    ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
      --section InstructionStats --section MemoryWorkloadAnalysis --launch-skip 3 --launch-count 1 \
      $K run $B $k --shape M=8,N=4096 --variant $v --reps 5 --no-check > $W/ncu_${k}_v$v.txt 2>&1
    echo "== $k v$v"
    grep -E "^    (Duration|Registers Per Thread|Executed Instructions  |Issued Warp|Warp Cycles Per Issued|Avg. Active Threads|Achieved Occupancy|Memory Throughput|L1/TEX Hit|Mem Busy|Max Bandwidth|Block Limit Registers|Theoretical Occupancy|Stall)" $W/ncu_${k}_v$v.txt | head -20
  done
done
for k in layernorm_f32 softmax_f32; do
  $K run $B $k --shape M=8,N=4096 --variant all --reps 100 --no-check > $W/all_$k.txt 2>&1
  grep -E "^  v(5|11|12|14)[* ]" $W/all_$k.txt
done
tar czf $OUT/call5.tgz -C $W --exclude=reduction_suite .
