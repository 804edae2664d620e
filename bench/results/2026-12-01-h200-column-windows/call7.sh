#!/usr/bin/env bash
# Session 45, device call 7: build N3 (the scalar path's partly valid thread walks whole chunks,
# its columns past the last row loading the last row's into partials never stored: no masks
# unless the kernel stores elements, so the other threads' code is the build before's) against
# O (before): every variant of outer.kiln's kernels at call 6's shapes. Call 6 found build N
# (every thread's columns masked) 1.05x O at the bf16 mean's default and up to 1.27x at other
# variants, and N2 (masks in the last tile only, a branch) up to 1.63x.
set -uo pipefail
W=/tmp/w7; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call7.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
sweep() {  # bundle kernel shape...
  local b=$1 k=$2; shift 2
  for s in "$@"; do
    f=$W/all_${b}_${k}_${s//[=,]/_}.txt
    timeout 90 $K run $W/exp/b$b $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
  done
}
for b in N3 O; do
  sweep $b colsum_f32 M=4095,N=32769 M=6000,N=20001 M=4096,N=32768
  sweep $b colsum_bf16 M=6000,N=20001 M=8192,N=32768
  sweep $b mid_mean B=64,M=1024,N=513 B=64,M=1024,N=512
  sweep $b ln_wgrad M=4001,N=20001 M=4096,N=32768
  sweep $b mid_mean_bf16 B=8,M=2048,N=4097 B=8,M=2048,N=4096
  echo "sweep $b $(el)"; pack
done
