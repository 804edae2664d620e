#!/usr/bin/env bash
# Session 45, device call 2: after call 1, the thread whose columns are partly past the last
# row walks whole chunks (it took R / group dependent single steps, the whole grid waiting on
# it). Builds A (U = items) and B (U = items / 2) of the windows beside the build before them
# (O): every variant of outer.kiln's kernels at odd and aligned shapes. Bundles as in call 1.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
sweep() {  # bundle kernel shape...
  local b=$1 k=$2; shift 2
  for s in "$@"; do
    f=$W/all_${b}_${k}_${s//[=,]/_}.txt
    timeout 90 $K run $W/exp/b$b $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
    echo "== $b $k $s"; grep -E '^ *v[0-9]+' $f | awk '{print $1, $2, $3, $4, $5, $6, $(NF-3), "us", $NF "%"}' | sort -k7 -n | head -4
  done
}
for b in A B O; do
  {
  sweep $b colsum_f32 M=4095,N=32769 M=6000,N=20001 M=2000,N=100003 M=4096,N=32768
  sweep $b colsum_bf16 M=6000,N=20001 M=3000,N=40001 M=10000,N=12345 M=8192,N=32768
  sweep $b mid_mean B=63,M=1024,N=513 B=3,M=1001,N=7777 B=64,M=1024,N=512
  sweep $b ln_wgrad M=4001,N=20001 M=8191,N=8191 M=4096,N=32768
  } | tee $W/sweep_$b.txt
  echo "sweep $b $(el)"; pack
done
