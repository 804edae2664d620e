#!/usr/bin/env bash
# Session 47, device call 5 (data for the next rule, no change made from it): every variant of
# the committed build at shapes of 128-400 column tiles of 32, where the prefetching rule's pick
# (bundle/rule.h prefetching_variant: at least the SMs' worth of tiles) ran 1.4x the fastest
# variant's time at [2, 128, 1000, 33] in call 3. Bundles bR (axes.kiln) and bR1 (outer.kiln)
# compiled on the build machine by the committed build (.carry/exp.tar.xz).
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
pack() { tar czf $OUT/call5.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
for c in R:sum_bh:B=2,C=128,H=1000,W=33 R:sum_bh:B=4,C=64,H=500,W=65 R:sum_bh:B=2,C=256,H=1000,W=17 \
         R:sum_bh:B=8,C=96,H=256,W=63 R:sum_bh:B=4,C=128,H=512,W=99 R:dbias_bf16:B=4,H=8,Q=512,K=1023 \
         R:dbias_bf16:B=2,H=16,Q=1024,K=257 R1:mid_mean:B=8,M=8192,N=999 R1:mid_mean:B=4,M=4096,N=1057 \
         R1:mid_mean:B=6,M=8192,N=705 R1:mid_mean:B=32,M=2048,N=257 R1:mid_mean_bf16:B=4,M=8192,N=1057; do
  b=${c%%:*}; c=${c#*:}; k=${c%%:*}; s=${c#*:}
  f=$W/all_${k}_${s//[=,]/_}.txt
  timeout 90 $K run $W/exp/b$b $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
  echo "== $k $s $(grep -E '^ *v[0-9]+\*' $f | awk '{print "default", $1, $(NF-3)}') best $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3)}' | sort -k2 -n | head -4 | tr '\n' ' ')"
done | tee $W/sweep.txt
pack
