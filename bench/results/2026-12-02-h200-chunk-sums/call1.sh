#!/usr/bin/env bash
# Session 49, device call 1: looped reductions' chunks summed plainly and compensated once a
# chunk (N, the change to compiler/lower/reduction_common.cpp fold) against main at 18849ae
# (B), both bundles of rows.kiln and mb_rows.kiln (the row kernels of bench/memory_bound.kiln)
# compiled on the build machine for sm_90: the default variant at every case, interleaved,
# two rounds, 50 launches each beside the copy.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
run1() { timeout 60 $K run $W/exp/$1 $2 --shape $3 --variant default --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
CASES="rows:channel_sums:N=64,C=512,H=7,W=7 rows:channel_sums:N=32,C=1024,H=7,W=7 rows:channel_sums:N=128,C=128,H=17,W=17
rows:channel_sums:N=16,C=64,H=35,W=35 rows:channel_mean_bf16:N=32,C=768,L=49 rows:channel_mean_bf16:N=8,C=256,L=1001
rows:channel_var_bf16:N=64,C=512,H=7,W=7 rows:channel_sums:N=64,C=256,H=56,W=56 rows:channel_sums:N=32,C=64,H=28,W=28
rows:channel_sums:N=128,C=64,H=56,W=56 rows:channel_sums:N=256,C=32,H=32,W=32 rows:channel_sums:N=4,C=3,H=224,W=224
rows:channel_var_bf16:N=64,C=256,H=56,W=56 rows:channel_var_bf16:N=128,C=64,H=56,W=56 rows:channel_var_bf16:N=64,C=128,H=17,W=17
rows:channel_mean_bf16:N=64,C=256,L=3136 rows:channel_mean_bf16:N=512,C=64,L=256 rows:channel_mean_bf16:N=16,C=512,L=3001
rows:diag_sums:N=16,C=256,H=32,W=32 rows:channel_sums:N=65,C=64,H=17,W=17 rows:channel_mean_bf16:N=15,C=512,L=3001
mb:rowsum_f32:M=32768,N=4096 mb:rowsum_f32:M=1024,N=65536 mb:rowsum_f32:M=4096,N=30001 mb:rowmax_bf16:M=32768,N=4096
mb:rowmax_bf16:M=1024,N=65537 mb:softmax_bf16:M=32768,N=1024 mb:softmax_bf16:M=16384,N=4095 mb:softmax_f32:M=32768,N=1001
mb:softmax_f32:M=4096,N=32768 mb:logsumexp_bf16:M=4096,N=32768 mb:total_f32:M=1,N=67108864 mb:layernorm_f32:M=16383,N=1023
mb:layernorm_bf16:M=32768,N=4096 mb:rmsnorm_bf16:M=32768,N=4096 mb:add_rmsnorm:M=32768,N=4096"
{
for round in 1 2; do
  for c in $CASES; do
    IFS=: read -r f k s <<< "$c"
    echo "round $round | $k $s | B $(run1 B_$f $k $s) | N $(run1 N_$f $k $s)"
  done
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
