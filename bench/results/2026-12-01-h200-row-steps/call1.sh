#!/usr/bin/env bash
# Session 48, device call 1: row reductions over reduced indices apart with their coordinates
# and offsets stepped from group to group (compiler/lower/reduction_rows.cpp row_groups), three
# bundles of rows.kiln compiled on the build machine (.carry/exp.tar.xz): bB by main at 42c9ae6
# (dividing at every group), bN stepping the vector paths of looped and split rows, bS stepping
# their scalar paths too. The default variant at 16 cases, 50 launches, the three interleaved,
# two rounds; every variant at 7 of them; torch eager and torch.compile at the 16 cases.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
D=bench/results/2026-12-01-h200-row-steps
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
run1() { timeout 60 $K run $W/exp/$1 $2 --shape $3 --variant default --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
CASES="channel_sums:N=64,C=256,H=56,W=56 channel_sums:N=32,C=64,H=28,W=28 channel_sums:N=8,C=512,H=14,W=14
channel_sums:N=128,C=64,H=56,W=56 channel_sums:N=256,C=32,H=32,W=32 channel_sums:N=4,C=3,H=224,W=224
channel_sums:N=128,C=128,H=17,W=17 channel_sums:N=64,C=512,H=7,W=7
channel_var_bf16:N=64,C=256,H=56,W=56 channel_var_bf16:N=32,C=128,H=28,W=28
channel_var_bf16:N=128,C=64,H=56,W=56 channel_var_bf16:N=64,C=128,H=17,W=17
channel_mean_bf16:N=64,C=256,L=3136 channel_mean_bf16:N=512,C=64,L=256 channel_mean_bf16:N=16,C=512,L=3001
diag_sums:N=16,C=256,H=32,W=32"
{
for round in 1 2; do
  for c in $CASES; do
    k=${c%%:*}; s=${c#*:}
    echo "round $round | $k $s | B $(run1 bB $k $s) | N $(run1 bN $k $s) | S $(run1 bS $k $s)"
  done
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
{
for c in channel_sums:N=64,C=256,H=56,W=56 channel_sums:N=128,C=64,H=56,W=56 channel_sums:N=128,C=128,H=17,W=17 \
         channel_var_bf16:N=64,C=256,H=56,W=56 channel_var_bf16:N=64,C=128,H=17,W=17 \
         channel_mean_bf16:N=64,C=256,L=3136 diag_sums:N=16,C=256,H=32,W=32; do
  k=${c%%:*}; s=${c#*:}
  for b in bB bN bS; do
    echo "== $b $k $s"
    timeout 120 $K run $W/exp/$b $k --shape $s --variant all --reps 20 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3)}' | tr '\n' ' '; echo
  done
done
} > $W/sweep.txt 2>&1
echo "sweep $(el)"; pack
timeout 300 python3 $D/torch_rows.py $W/torch.json > $W/torch.txt 2>&1; tail -20 $W/torch.txt
echo "torch $(el)"; pack
