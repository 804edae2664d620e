#!/usr/bin/env bash
# Session 47, device call 2: outer kernels assembled by nvJitLink (N, as built today: ptxas
# compiles them as relocatable code) or as a whole program (Q: the same binary with the
# experiment-only switch KILN_EXP_WHOLE, not committed), each with build_image's occupancy hint;
# bundles compiled on the build machine (.carry/exp.tar.xz: bN, bQ of axes.kiln; bN1, bQ1 of
# outer.kiln). Every variant at 13 + 11 cases, then the default variant, 50 launches,
# interleaved, two rounds.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
CASES="2:sum_bh:B=8,C=64,H=128,W=511 2:sum_bh:B=4,C=32,H=512,W=1001 2:sum_bh:B=16,C=64,H=256,W=256
2:sum_bh:B=32,C=3,H=224,W=224 2:sum_bh:B=2,C=128,H=1000,W=33 2:max_bh:B=8,C=64,H=128,W=511
2:dbias_bf16:B=4,H=16,Q=1024,K=1024 2:dbias_bf16:B=8,H=12,Q=512,K=513 2:dbias_bf16:B=2,H=32,Q=2048,K=128
2:sum3:A=4,P=16,B=8,Q=16,C=32,R=64 2:sum3:A=3,P=5,B=7,Q=9,C=11,R=129 2:mean_prod_bh:B=8,C=64,H=128,W=511
2:sum_bh:B=64,C=256,H=7,W=7
1:colsum_f32:M=6000,N=20001 1:colsum_f32:M=4096,N=32768 1:colsum_f32:M=4095,N=32769
1:colsum_bf16:M=8192,N=32768 1:colsum_bf16:M=8192,N=20001 1:colsum_bf16:M=8191,N=8193
1:mid_mean:B=64,M=1024,N=513 1:mid_mean:B=16,M=4096,N=1001 1:mid_mean_bf16:B=8,M=2048,N=4097
1:mid_mean_bf16:B=24,M=2048,N=1001 1:ln_wgrad:M=32768,N=1024"
for c in $CASES; do
  set=${c%%:*}; c=${c#*:}; k=${c%%:*}; s=${c#*:}
  b=""; [[ $set == 1 ]] && b=1
  for x in N Q; do
    f=$W/all_${x}_${k}_${s//[=,]/_}.txt
    timeout 90 $K run $W/exp/b$x$b $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
    echo "== $x $k $s $(grep -E '^ *v[0-9]+\*' $f | awk '{print "default", $1, $(NF-3)}') best $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3)}' | sort -k2 -n | head -3 | tr '\n' ' ')"
  done
done | tee $W/sweep.txt
echo "sweep $(el)"; pack
run1() { timeout 60 $K run $W/exp/$1 $2 --shape $3 --variant default --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
{
for round in 1 2; do
  for c in $CASES; do
    set=${c%%:*}; c=${c#*:}; k=${c%%:*}; s=${c#*:}
    b=""; [[ $set == 1 ]] && b=1
    echo "round $round | $k $s | N $(run1 bN$b $k $s) | Q $(run1 bQ$b $k $s)"
  done
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
