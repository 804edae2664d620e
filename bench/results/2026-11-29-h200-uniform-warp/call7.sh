#!/usr/bin/env bash
# Session 31, device call 7: the sum of one f32 row of 2^24 elements, where Kiln's default
# trails torch.compile (29.2 us against 24.5, call 4): each kernel's duration under Nsight
# Compute at the board's clocks (--clock-control none), Kiln's two phases and torch.compile's
# two kernels, to tell the kernels' time from what lies between them.
set -uo pipefail
W=/tmp/w7; source bench/device_setup.sh
D=bench/results/2026-11-29-h200-uniform-warp
$K compile bench/memory_bound.kiln -o $W/mb --arch sm_90 -j 8 > /dev/null
sec="--clock-control none --section SpeedOfLight --section LaunchStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
for n in 16777216 67108864; do
  timeout 60 ncu $sec -k regex:total --launch-count 2 $K run $W/mb total_f32 --shape M=1,N=$n --variant default --reps 1 --no-check > $W/ncu_kiln_$n.txt 2>&1
  TORCHINDUCTOR_CACHE_DIR=/tmp/ti timeout 150 ncu $sec --profile-from-start off python3 $D/torch_sum.py $n > $W/ncu_torch_$n.txt 2>&1
  for f in $W/ncu_kiln_$n.txt $W/ncu_torch_$n.txt; do echo "$(basename $f): $(grep -E '^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|dram__bytes|torch.compile sum' $f | tr -s ' ' | tr '\n' ';')"; done
done | tee $W/ncu_sizes.txt
mkdir -p $OUT/call7 && cp $W/*.txt $OUT/call7/
