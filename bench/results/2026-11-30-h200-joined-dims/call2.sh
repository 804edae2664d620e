#!/usr/bin/env bash
# Session 37, device call 2: call 1 found the bf16 tiles' default (128 x 128, variant 0) slower
# than 64 x 64 (variant 1) wherever the shifted path runs or the across extent is short (C = 40),
# by 3-27%, and 1-2% faster on aligned shapes. Every variant of the bf16 transpose and of
# [B, S, H, D] -> [B, H, D, S] (examples/permute.kiln, this build) timed at aligned and odd
# shapes of several sizes, to choose the default; the copy bandwidth in the same run.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
$K compile examples/permute.kiln -o $W/perm --arch sm_90 > /dev/null
for c in transpose_bf16:M=8192,N=8192 transpose_bf16:M=4096,N=4096 transpose_bf16:M=2048,N=2048 \
         transpose_bf16:M=16384,N=4096 transpose_bf16:M=1024,N=16384 transpose_bf16:M=8191,N=8193 \
         transpose_bf16:M=4095,N=4097 transpose_bf16:M=1000,N=3000 transpose_bf16:M=96,N=65536 \
         heads_keys:B=8,S=2048,H=32,D=128 heads_keys:B=4,S=4096,H=16,D=64 heads_keys:B=16,S=1024,H=8,D=64 \
         heads_keys:B=1,S=2048,H=32,D=128 heads_keys:B=8,S=1000,H=16,D=80; do
  k=${c%%:*} s=${c#*:}
  f=$W/time_${k}_${s//[=,]/_}.txt
  $K run $W/perm $k --shape $s --variant default --reps 1 > /dev/null 2>&1 || echo "$k $s: check FAILED"
  $K run $W/perm $k --shape $s --variant all --copy-baseline --reps 50 --no-check > $f 2>&1
  echo "$k $s: $(grep -E '^ *v[01]\*? ' $f | awk '{printf "%s %s us  ", $1, $(NF-3)}') best $(grep -E '^ *v[0-9]+' $f | awk '{print $(NF-3), $1}' | sort -g | head -1)"
done | tee $W/tiles.txt
echo "tiles $(el)"
(cd $W && tar czf $OUT/call2.tgz *.txt)
