#!/usr/bin/env bash
# Session 48, device call 4: (1) the whole-program fallback on the suite's row kernels over one
# reduced index (compiler/compile.cpp row_image_below_target switches some of their
# one-row-a-block images from nvJitLink's to the whole program's): the row kernels of
# bench/memory_bound.kiln (mb_rows.kiln)
# compiled by main at 42c9ae6 (bMB) and by this build (bMP), the default variant at the suite's
# 14 row-reduction cases, interleaved, two rounds; (2) every variant of rows.kiln by this build
# (bP) at 7 shapes whose trailing run is not a multiple of the vector (7 x 7, 17 x 17, 35 x 35,
# 49, 1001), where the plain variants walk scalars and the shifting twins vectors; torch eager
# and torch.compile at those 7.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
D=bench/results/2026-12-01-h200-row-steps
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call4.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
run1() { timeout 60 $K run $W/exp/$1 $2 --shape $3 --variant default --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
CASES="softmax_bf16:M=32768,N=1024 softmax_bf16:M=8192,N=8192 softmax_bf16:M=16384,N=4095
softmax_f32:M=32768,N=1001 softmax_f32:M=4096,N=32768 softmax_f32:M=64,N=1000
logsumexp_bf16:M=4096,N=32768 rowsum_f32:M=32768,N=4096 rowmax_bf16:M=32768,N=4096
total_f32:M=1,N=67108864 layernorm_bf16:M=32768,N=4096 layernorm_f32:M=16383,N=1023
rmsnorm_bf16:M=32768,N=4096 add_rmsnorm:M=32768,N=4096"
{
for round in 1 2; do
  for c in $CASES; do
    k=${c%%:*}; s=${c#*:}
    echo "round $round | $k $s | B $(run1 bMB $k $s) | P $(run1 bMP $k $s)"
  done
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
{
for c in channel_sums:N=64,C=512,H=7,W=7 channel_sums:N=32,C=1024,H=7,W=7 channel_sums:N=128,C=128,H=17,W=17 \
         channel_sums:N=16,C=64,H=35,W=35 channel_mean_bf16:N=32,C=768,L=49 channel_mean_bf16:N=8,C=256,L=1001 \
         channel_var_bf16:N=64,C=512,H=7,W=7; do
  k=${c%%:*}; s=${c#*:}
  echo "== bP $k $s"
  timeout 120 $K run $W/exp/bP $k --shape $s --variant all --reps 20 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-2)}' | tr '\n' ' '; echo
done
} > $W/sweep.txt 2>&1
echo "sweep $(el)"; pack
timeout 240 python3 $D/torch_odd_runs.py $W/torch.json > $W/torch.txt 2>&1; tail -9 $W/torch.txt
echo "torch $(el)"; pack
