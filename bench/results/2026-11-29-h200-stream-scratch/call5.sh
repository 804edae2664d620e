#!/usr/bin/env bash
# Session 33, device call 5: why one f32 row of 2^24 elements still sums slower than
# torch.compile's best (28.3 against 25.2 us): every variant of total_f32 timed at 2^24 (this
# session's build; 100 launches, L2 flushed), dependent launches on and off for the default,
# and Nsight Compute on Kiln's two kernels and on torch.compile's (mode
# "max-autotune-no-cudagraphs", ../2026-11-29-h200-uniform-warp/torch_sum.py at N = 2^24).
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call5 && cp $W/*.txt $OUT/call5/ 2>/dev/null; }
$K compile bench/memory_bound.kiln -o $W/mb --arch sm_90 -j 16 > /dev/null; echo "compiled $(el)"
$K run $W/mb total_f32 --shape M=1,N=16777216 --variant all --reps 100 --no-check > $W/variants.txt 2>&1
grep -E '^ *v[0-9]' $W/variants.txt | sort -k2 | head -40
for r in 1 2; do for d in 1 0; do
  echo "round $r KILN_DEPENDENT_LAUNCH=$d: $(KILN_DEPENDENT_LAUNCH=$d $K run $W/mb total_f32 --shape M=1,N=16777216 --variant default --reps 200 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-2)}')"
done; done | tee $W/dependent.txt; echo "timed $(el)"; pack
sec="--section SpeedOfLight --section LaunchStats --section Occupancy --metrics dram__bytes_read.sum,gpu__time_duration.sum"
timeout 90 ncu $sec -k regex:total --launch-count 2 $K run $W/mb total_f32 --shape M=1,N=16777216 --variant default --reps 1 --no-check > $W/ncu_kiln.txt 2>&1
TORCHINDUCTOR_CACHE_DIR=/tmp/ti timeout 200 ncu $sec --profile-from-start off python3 bench/results/2026-11-29-h200-uniform-warp/torch_sum.py 16777216 > $W/ncu_torch.txt 2>&1
for f in $W/ncu_kiln.txt $W/ncu_torch.txt; do echo "$(basename $f): $(grep -E '^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|Grid Size|Block Size|Registers Per|Achieved Occupancy|dram__bytes_read|torch.compile' $f | tr -s ' ' | tr '\n' ';')"; done | tee $W/ncu_sum.txt
echo "ncu $(el)"; pack
