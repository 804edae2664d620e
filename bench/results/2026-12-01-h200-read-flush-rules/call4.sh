#!/usr/bin/env bash
# Session 44, device call 4: every variant of the outer reductions at wide aligned shapes, where
# the unsplit default has between one and eight tiles an SM (call 1 found it 1.28x the fastest
# variant at bf16 8192 x 32768 and the weight gradient 1.38x the split at 8192 x 20000).
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call4.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/rb.tar.xz -C $W
sweep() {  # kernel shape...
  local k=$1; shift
  for s in "$@"; do
    f=$W/all_${k}_${s//[=,]/_}.txt
    timeout 90 $K run $W/rb $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
    echo "== $k $s"; grep -E '^ *v[0-9]+' $f | awk '{print $1, $2, $3, $4, $5, $6, $(NF-3), "us", $NF "%"}' | sort -k7 -n | head -5
    grep -E '^ *v[0-9]+\*' $f | awk '{print "default", $1, $(NF-3), "us", $NF "%"}'
  done
}
{
sweep colsum_f32 M=65536,N=8448 M=16384,N=9000 M=8192,N=12288 M=4096,N=16384 M=2048,N=24576 M=1024,N=65536
sweep colsum_bf16 M=8192,N=16896 M=8192,N=20480 M=8192,N=24576 M=4096,N=49152 M=1024,N=131072 M=16384,N=32768
sweep ln_wgrad M=8192,N=24576 M=16384,N=16896 M=2048,N=65536
sweep mid_mean B=16,M=2048,N=1024 B=32,M=512,N=1024 B=8,M=4096,N=2048
} | tee $W/outer_wide.txt
echo "outer $(el)"; pack
