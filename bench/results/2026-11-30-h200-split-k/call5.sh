#!/usr/bin/env bash
# Session 35, device call 5: where split-K's time goes at two shapes of few tiles, under Nsight
# Compute (base clocks): each phase's duration, DRAM throughput and achieved occupancy, beside
# cuBLAS's kernels at the same shapes.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
mkdir -p $OUT/call5
$K compile bench/contraction.kiln -o $W/bc --arch sm_90 -j 8 > /dev/null
m="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__grid_size"
for s in 256,256,65536 512,512,8192 1024,1024,16384; do IFS=, read mm nn kk <<< "$s"
  timeout 120 ncu --metrics $m -k regex:gemm --launch-count 4 $K run $W/bc gemm --shape M=$mm,N=$nn,K=$kk --variant default --reps 2 --no-check > $W/ncu_kiln_$s.txt 2>&1
  cat > $W/cb.py <<PY
import torch
x = torch.randn($mm, $kk, device="cuda", dtype=torch.bfloat16); w = torch.randn($kk, $nn, device="cuda", dtype=torch.bfloat16)
for _ in range(3): torch.matmul(x, w)
torch.cuda.synchronize()
PY
  timeout 120 ncu --metrics $m --launch-skip 1 --launch-count 2 python3 $W/cb.py > $W/ncu_cublas_$s.txt 2>&1
  for f in $W/ncu_kiln_$s.txt $W/ncu_cublas_$s.txt; do echo "== $f"; grep -E '^  [a-zA-Z_0-9]+.*\(|gpu__time|dram__|sm__warps|hmma|grid_size' $f | tr -s ' '; done
done | tee $W/ncu_summary.txt
cp $W/*.txt $OUT/call5/
