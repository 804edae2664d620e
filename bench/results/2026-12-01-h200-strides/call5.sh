#!/usr/bin/env bash
# Session 43, device call 5: the f32 transpose whose odd extents run element by element (the
# suite's 8191 x 8193: the rule's v0, 64 threads a tile of 64 x 64, 154.3 us; v1, 128 threads,
# 147.4; torch.compile 144.4) at six more shapes of that path and one of the aligned-rows path,
# every variant; then memcheck on `kiln run`, whose timing launches the L2 flush's kernel.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call5.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/sb.tar.xz -C $W
for s in M=8191,N=8193 M=8191,N=8192 M=4097,N=3001 M=3001,N=5003 M=1001,N=999 M=16383,N=2048 \
         M=2047,N=16385 M=8192,N=8191; do
  f=$W/all_${s//[=,]/_}.txt
  timeout 60 $K run $W/sb transpose_f32 --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
  echo "== $s"; grep -E '^ *v[0-9]+' $f | awk '{print $1, $2, $3, $(NF-3), "us", $NF "%"}'
done | tee $W/times.txt
echo "times $(el)"; pack
timeout 120 compute-sanitizer --tool memcheck $K run $W/sb mid_mean --shape B=3,M=101,N=33 --variant default --reps 3 > $W/memcheck.txt 2>&1
echo "memcheck exit $?"; tail -4 $W/memcheck.txt; echo "$(el)"; pack
