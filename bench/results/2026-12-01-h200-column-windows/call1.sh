#!/usr/bin/env bash
# Session 45, device call 1: the column windows (compiler/lower/reduction_outer.cpp, step 3b)
# with three numbers of steps in flight a thread (U = items, items / 2, 1: builds A, B, C),
# beside the build before them (O), every variant of outer.kiln's four kernels at odd and
# aligned shapes; then build A's variants checked against the interpreter at odd shapes
# (random, NaN and infinities) and under memcheck. Bundles: `kiln compile outer.kiln`
# by each build, carried as .carry/exp.tar.xz.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
sweep() {  # bundle kernel shape...
  local b=$1 k=$2; shift 2
  for s in "$@"; do
    f=$W/all_${b}_${k}_${s//[=,]/_}.txt
    timeout 90 $K run $W/exp/b$b $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
    echo "== $b $k $s"; grep -E '^ *v[0-9]+' $f | awk '{print $1, $2, $3, $4, $5, $6, $(NF-3), "us", $NF "%"}' | sort -k7 -n | head -4
  done
}
for b in A B C O; do
  {
  sweep $b colsum_f32 M=4095,N=32769 M=6000,N=20001 M=4096,N=32768
  sweep $b colsum_bf16 M=6000,N=20001 M=3000,N=40001 M=8192,N=32768
  sweep $b mid_mean B=63,M=1024,N=513 B=3,M=1001,N=7777 B=64,M=1024,N=512
  sweep $b ln_wgrad M=4001,N=20001 M=4096,N=32768
  } | tee $W/sweep_$b.txt
  echo "sweep $b $(el)"; pack
done
{
for c in "colsum_f32 M=1001,N=2001" "colsum_f32 M=3,N=1001" "colsum_bf16 M=1001,N=2001" \
         "mid_mean B=3,M=101,N=777" "mid_mean B=5,M=9,N=17" "ln_wgrad M=1001,N=2001"; do
  set -- $c
  for inputs in random specials; do
    timeout 120 $K run $W/exp/bA $1 --shape $2 --variant all --reps 1 --inputs $inputs > $W/chk_${1}_${2//[=,]/_}_$inputs.txt 2>&1; rc=$?; cp $W/chk_${1}_${2//[=,]/_}_$inputs.txt $W/chk.txt
    echo "$1 $2 $inputs: rc=$rc ok=$(grep -cE '^ *v[0-9]+ .* ok ' $W/chk.txt) bad=$(grep -E '^ *v[0-9]+' $W/chk.txt | grep -vcE ' ok ')"
    grep -E '^ *v[0-9]+' $W/chk.txt | grep -vE ' ok ' | head -3
  done
done
} > $W/checks.txt 2>&1
cat $W/checks.txt; echo "checks $(el)"; pack
for c in "colsum_f32 M=1001,N=2001 0" "colsum_bf16 M=1001,N=2001 20" "mid_mean B=3,M=101,N=777 0" "ln_wgrad M=1001,N=2001 20"; do
  set -- $c
  timeout 120 compute-sanitizer --tool memcheck $K run $W/exp/bA $1 --shape $2 --variant $3 --reps 2 > $W/mc.txt 2>&1
  echo "memcheck $1 $2 v$3: rc=$? $(grep -E 'ERROR SUMMARY' $W/mc.txt)"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
