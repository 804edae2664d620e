#!/usr/bin/env bash
# Session 42, device call 1: an experiment, not a build of main. The tiled kernels hold every
# path (vector, scalar, shifted, aligned-rows) in one function, and nvJitLink gives it the
# registers of the hungriest: 152 a thread for the 64 x 128 tiles of 128 threads (3 blocks an
# SM, 12 warps), 228 for 128 x 128 (2 blocks). The carried kiln reads KILN_EXP_TILED_REGS=R
# (an experiment's hook, not committed) and asks for max(1, 65536 / (R x block)) blocks an SM
# (nvvm minctasm: ptxas then fits R registers). The bench bundle compiled with R = none, 128
# and 96; each tiled case timed at its default and at 128 x 128 (v0) and 64 x 128 (v5) tiles.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
for R in 0 128 96; do
  KILN_EXP_TILED_REGS=$R $K compile bench/memory_bound.kiln -o $W/mb$R --arch sm_90 > /dev/null &
done; wait; echo "compiled $(el)"
for c in transpose_bf16:N=8192,M=8192 transpose_bf16:N=8191,M=8192 transpose_bf16:N=8191,M=8193 \
         heads_keys:B=8,S=2048,H=32,D=128 heads_keys:B=8,S=2047,H=32,D=127 heads_keys:B=4,S=4095,H=12,D=64 \
         transpose_f32:N=8192,M=8192 transpose_f32:N=8191,M=8192 transpose_f32:N=8193,M=8191 \
         transpose_add:N=8192,M=8192 rotate3:A=256,B=512,C=64; do
  k=${c%%:*} s=${c#*:}
  for v in default 0 5; do
    line="$k $s v=$v:"
    for R in 0 128 96; do
      f=$W/run_${R}_${k}_${v}_${s//[=,]/_}.txt
      timeout 60 $K run $W/mb$R $k --shape $s --variant $v --copy-baseline --reps 50 > $f 2>&1
      line="$line | R=$R $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3), "us", $NF "%"}')"
    done
    echo "$line"
  done
done | tee $W/times.txt
echo "times $(el)"; pack
