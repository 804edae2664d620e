#!/usr/bin/env bash
# Session 31, device call 8: the sum of one f32 row of 2^24 and 2^26 elements with dependent
# launches on and off (KILN_DEPENDENT_LAUNCH=0), interleaved, three rounds: whether the time
# outside the two kernels (call 7) is the second launch's.
set -uo pipefail
W=/tmp/w8; source bench/device_setup.sh
$K compile bench/memory_bound.kiln -o $W/mb --arch sm_90 -j 8 > /dev/null
for r in 1 2 3; do for n in 16777216 67108864; do for d in 1 0; do
  echo "round $r total_f32 N=$n dependent=$d $(KILN_DEPENDENT_LAUNCH=$d $K run $W/mb total_f32 --shape M=1,N=$n --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')"
done; done; done | tee $W/dependent.txt
mkdir -p $OUT/call8 && cp $W/*.txt $OUT/call8/
