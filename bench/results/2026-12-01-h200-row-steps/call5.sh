#!/usr/bin/env bash
# Session 48, device call 5: the scalar path of stepped rows (a trailing run not a multiple of
# the vector: 7 x 7, 17 x 17, 49, 1001) with 8 loads in flight a thread instead of 4 (X8: an
# experiment, kSteppedItems in compiler/lower/reduction_lowering.h) against the committed build
# (P, 168a2dc), both bundles of rows.kiln: the default variant at 7 such shapes and 4 aligned
# ones, interleaved, two rounds; every variant of X8 at 3 of them.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call5.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
run1() { timeout 60 $K run $W/exp/$1 $2 --shape $3 --variant default --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
CASES="channel_sums:N=64,C=512,H=7,W=7 channel_sums:N=32,C=1024,H=7,W=7 channel_sums:N=128,C=128,H=17,W=17
channel_sums:N=16,C=64,H=35,W=35 channel_mean_bf16:N=32,C=768,L=49 channel_mean_bf16:N=8,C=256,L=1001
channel_var_bf16:N=64,C=512,H=7,W=7 channel_sums:N=64,C=256,H=56,W=56 channel_sums:N=128,C=64,H=56,W=56
channel_var_bf16:N=64,C=256,H=56,W=56 channel_mean_bf16:N=64,C=256,L=3136"
{
for round in 1 2; do
  for c in $CASES; do
    k=${c%%:*}; s=${c#*:}
    echo "round $round | $k $s | P $(run1 bP $k $s) | X8 $(run1 bX8 $k $s)"
  done
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
{
for c in channel_sums:N=64,C=512,H=7,W=7 channel_sums:N=128,C=128,H=17,W=17 channel_mean_bf16:N=32,C=768,L=49; do
  k=${c%%:*}; s=${c#*:}
  echo "== bX8 $k $s"
  timeout 120 $K run $W/exp/bX8 $k --shape $s --variant all --reps 20 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-2)}' | tr '\n' ' '; echo
done
} > $W/sweep.txt 2>&1
echo "sweep $(el)"; pack
