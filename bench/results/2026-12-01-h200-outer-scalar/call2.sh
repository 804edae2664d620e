#!/usr/bin/env bash
# Session 46, device call 2: the occupancy hint's cost to outer kernels. outer.kiln compiled
# here by one binary three ways (.carry/exp.tar.xz): A as HEAD (nvJitLink, .minnctapersm asked
# for 1536 threads an SM), B without the hint (KILN_OUTER_ASM=nohint), C assembled by ptxas as
# a whole program without the hint (KILN_OUTER_ASM=whole). For each: the loads in flight in
# every variant's SASS (sass_inflight.py) and every variant at 11 shapes.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
D=bench/results/2026-12-01-h200-outer-scalar
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
for b in A B C; do
  for f in $W/exp/b$b/*.sm_90.cubin; do
    n=$(basename $f .sm_90.cubin)
    echo "$b $n $(cuobjdump -sass $f | python3 $D/sass_inflight.py)"
  done
done > $W/inflight.txt
echo "sass $(el)"
for b in A B C; do
  for c in "colsum_f32 M=4096,N=32768" "colsum_f32 M=6000,N=20001" "colsum_bf16 M=8192,N=32768" \
           "colsum_bf16 M=8192,N=20001" "colsum_bf16 M=8191,N=8193" "mid_mean B=64,M=1024,N=513" \
           "mid_mean B=16,M=4096,N=1001" "mid_mean_bf16 B=8,M=2048,N=4097" "mid_mean_bf16 B=8,M=2048,N=4096" \
           "ln_wgrad M=4096,N=32768" "ln_wgrad M=4001,N=20001"; do
    set -- $c
    f=$W/all_${b}_$1_${2//[=,]/_}.txt
    timeout 90 $K run $W/exp/b$b $1 --shape $2 --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
    echo "== $b $1 $2 $(grep -E '^ *v[0-9]+\*' $f | awk '{print "default", $1, $(NF-3)}') best $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3)}' | sort -k2 -n | head -1)"
  done
done | tee $W/sweep.txt
echo "sweep $(el)"; pack
