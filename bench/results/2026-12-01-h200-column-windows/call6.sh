#!/usr/bin/env bash
# Session 45, device call 6: build N2 (the scalar path masks the columns only in the block whose
# columns pass the last row, other blocks walking unmasked as before build N; a branch the same
# for the block's threads) against N (committed: every block's scalar path masks them) and O
# (before): every variant of outer.kiln's kernels at odd and aligned shapes.
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call6.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
sweep() {  # bundle kernel shape...
  local b=$1 k=$2; shift 2
  for s in "$@"; do
    f=$W/all_${b}_${k}_${s//[=,]/_}.txt
    timeout 90 $K run $W/exp/b$b $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
  done
}
for b in N2 N O; do
  sweep $b colsum_f32 M=4095,N=32769 M=6000,N=20001 M=4096,N=32768
  sweep $b colsum_bf16 M=6000,N=20001 M=8192,N=32768
  sweep $b mid_mean B=64,M=1024,N=513 B=64,M=1024,N=512
  sweep $b ln_wgrad M=4001,N=20001 M=4096,N=32768
  sweep $b mid_mean_bf16 B=8,M=2048,N=4097 B=8,M=2048,N=4096
  echo "sweep $b $(el)"; pack
done
