#!/usr/bin/env bash
# Session 46, device call 3: outer.kiln compiled here by one binary as A (HEAD: .minnctapersm
# for 1536 threads an SM) and D (KILN_OUTER_ASM=maxnreg: the same images' registers asked as
# .maxnreg instead, no occupancy target). Loads in flight in every sm_90 image's SASS, then
# every variant at call 2's 11 shapes, A and D in turn at each shape.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
D=bench/results/2026-12-01-h200-outer-scalar
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call3.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
for b in A D; do
  timeout 120 cuobjdump -sass $W/exp/b$b/*.sm_90.cubin | python3 $D/sass_inflight.py | grep _s0_ | sed "s/^/$b /"
done > $W/inflight.txt
echo "sass $(el)"; pack
for c in "colsum_f32 M=4096,N=32768" "colsum_f32 M=6000,N=20001" "colsum_bf16 M=8192,N=32768" \
         "colsum_bf16 M=8192,N=20001" "colsum_bf16 M=8191,N=8193" "mid_mean B=64,M=1024,N=513" \
         "mid_mean B=16,M=4096,N=1001" "mid_mean_bf16 B=8,M=2048,N=4097" "mid_mean_bf16 B=8,M=2048,N=4096" \
         "ln_wgrad M=4096,N=32768" "ln_wgrad M=4001,N=20001"; do
  set -- $c
  for b in A D; do
    f=$W/all_${b}_$1_${2//[=,]/_}.txt
    timeout 90 $K run $W/exp/b$b $1 --shape $2 --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
    echo "== $b $1 $2 $(grep -E '^ *v[0-9]+\*' $f | awk '{print "default", $1, $(NF-3)}') best $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3)}' | sort -k2 -n | head -1)"
  done
done | tee $W/sweep.txt
echo "sweep $(el)"; pack
