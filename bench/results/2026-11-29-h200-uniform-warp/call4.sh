#!/usr/bin/env bash
# Session 31, device call 4: where the sum of one f32 row stays behind torch.compile -- the
# time against the row's length, Kiln (this session's build, its default) and torch.compile in
# the same run: the slope is the pass's bandwidth, the intercept what each pays once (launches,
# the last phase).
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
D=bench/results/2026-11-29-h200-uniform-warp
$K compile bench/memory_bound.kiln -o $W/mb --arch sm_90 -j 8 > /dev/null
sizes="4194304 8388608 16777216 33554432 67108864 134217728"
for r in 1 2; do for n in $sizes; do
  echo "round $r kiln $n $($K run $W/mb total_f32 --shape M=1,N=$n --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')"
done; done | tee $W/kiln_sizes.txt
TORCHINDUCTOR_CACHE_DIR=/tmp/ti timeout 300 python3 $D/torch_sum.py $sizes 2>&1 | grep -v "^ *$" | tee $W/torch_sizes.txt
for n in $sizes; do
  echo "round 3 kiln $n $($K run $W/mb total_f32 --shape M=1,N=$n --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')"
done | tee -a $W/kiln_sizes.txt
mkdir -p $OUT/call4 && cp $W/*.txt $OUT/call4/
