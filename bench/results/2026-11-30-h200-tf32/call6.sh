#!/usr/bin/env bash
# Session 39, device call 6: the submitted build's default for f32 on CUDA cores (128 x 256) at
# the fp32 shapes of bench/contraction.py, and Nsight Compute's warp states, instruction mix and
# shared-memory traffic for it at 4096^3: what bounds the FMA kernel at 37 TF/s.
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
pack() { (cd $W && tar czf $OUT/call6.tgz *.txt 2>/dev/null); }
$K compile bench/contraction.kiln -o $W/cb --arch sm_90 > /dev/null
for s in M=4096,N=4096,K=4096 M=3000,N=5000,K=1000; do
  for k in gemm_f32 linear_f32; do timeout 60 $K run $W/cb $k --shape $s --variant default --no-check; done
done > $W/default.txt 2>&1
cat $W/default.txt; pack
timeout 200 ncu --clock-control none --section WarpStateStats --section ComputeWorkloadAnalysis \
  --section InstructionStats --section MemoryWorkloadAnalysis_Tables --section LaunchStats --section Occupancy \
  -k regex:linear_f32_s0_v --launch-count 1 $K run $W/cb linear_f32 --shape M=4096,N=4096,K=4096 \
  --variant default --reps 1 --no-check > $W/ncu_linear_f32.txt 2>&1
grep -E "Stall|stall|Issue Slots|Executed Ipc|Registers|Achieved Occupancy|Theoretical Occupancy|Bank|Warp Cycles|Shared" $W/ncu_linear_f32.txt | head -40
pack
