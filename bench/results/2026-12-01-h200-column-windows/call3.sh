#!/usr/bin/env bash
# Session 45, device call 3: after call 2, the thread whose columns are partly past the last
# row walks as many steps at a time as the windows (call 2 gave it items / vec: one, at 4
# columns, so it still took R / group dependent loads). Builds A (U = items) and B (U = items /
# 2), every variant of outer.kiln's kernels at the odd shapes of call 2 and two more.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call3.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
sweep() {  # bundle kernel shape...
  local b=$1 k=$2; shift 2
  for s in "$@"; do
    f=$W/all_${b}_${k}_${s//[=,]/_}.txt
    timeout 90 $K run $W/exp/b$b $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
    echo "== $b $k $s"; grep -E '^ *v[0-9]+' $f | awk '{print $1, $2, $3, $4, $5, $6, $(NF-3), "us", $NF "%"}' | sort -k7 -n | head -4
  done
}
for b in A B; do
  {
  sweep $b colsum_f32 M=4095,N=32769 M=6000,N=20001 M=2000,N=100003 M=1000,N=50001
  sweep $b colsum_bf16 M=6000,N=20001 M=3000,N=40001 M=10000,N=12345
  sweep $b mid_mean B=63,M=1024,N=513 B=3,M=1001,N=7777
  sweep $b ln_wgrad M=4001,N=20001 M=8191,N=8191
  } | tee $W/sweep_$b.txt
  echo "sweep $b $(el)"; pack
done
