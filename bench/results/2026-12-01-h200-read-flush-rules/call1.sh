#!/usr/bin/env bash
# Session 44, device call 1: every variant of the tiled steps (bf16 and f32 transposes, the 4-D
# heads_keys, an f32 rotation) and of the outer reductions at shapes where the rule's
# tiled and outer choices were measured under the write flush, now under the read flush.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/rb.tar.xz -C $W
sweep() {  # kernel shape...
  local k=$1; shift
  for s in "$@"; do
    f=$W/all_${k}_${s//[=,]/_}.txt
    timeout 90 $K run $W/rb $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
    echo "== $k $s"; grep -E '^ *v[0-9]+' $f | awk '{print $1, $2, $3, $4, $5, $6, $(NF-3), "us", $NF "%"}' | sort -k7 -n | head -8
    grep -E 'default|rule|runs' $f | head -2
  done
}
{
sweep transpose_bf16 M=8191,N=8193 M=8191,N=8192 M=8192,N=8191 M=8192,N=8192 M=4095,N=4097 \
  M=4096,N=4095 M=1000,N=3000 M=3000,N=1000 M=2047,N=16385 M=16384,N=2047 M=1001,N=999 M=5000,N=40
sweep heads_keys B=8,S=2047,H=32,D=127 B=8,S=2048,H=32,D=127 B=8,S=2047,H=32,D=128 \
  B=4,S=4096,H=12,D=100 B=2,S=1023,H=16,D=64 B=16,S=1000,H=8,D=64
} | tee $W/tiled_bf16.txt
echo "bf16 $(el)"; pack
{
sweep transpose_f32 M=8191,N=8193 M=8192,N=8191 M=4095,N=4097 M=4096,N=4095 M=1000,N=3000 \
  M=2047,N=16385
sweep rotate3 A=1000,B=999,C=33 A=512,B=512,C=63 A=64,B=1024,C=1023
} | tee $W/tiled_f32.txt
echo "f32 $(el)"; pack
{
sweep colsum_f32 M=4096,N=32768 M=8192,N=16384 M=2048,N=65536 M=1024,N=131072 M=4095,N=32769 \
  M=6000,N=20001
sweep colsum_bf16 M=8192,N=32768 M=2048,N=65536 M=6000,N=20001
sweep mid_mean B=64,M=1024,N=512 B=16,M=4096,N=1024 B=256,M=256,N=256
sweep ln_wgrad M=4096,N=32768 M=8192,N=20000
} | tee $W/outer.txt
echo "outer $(el)"; pack
