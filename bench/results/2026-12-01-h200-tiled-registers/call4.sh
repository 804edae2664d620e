#!/usr/bin/env bash
# Session 42, device call 4: call 3's "hold" bundles were not held (its script set
# KILN_EXP_NO_HOLD to the empty string, which the hook read as set): both of its columns are
# the build without the hold. Here the submitted build itself compiles examples/permute.kiln
# and bf16_add.kiln (held), and call 3's cases run again, twice each.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
D=bench/results/2026-12-01-h200-tiled-registers
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call4.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
$K compile examples/permute.kiln -o $W/perm --arch sm_90 > /dev/null &
$K compile $D/bf16_add.kiln -o $W/ba --arch sm_90 > /dev/null &
wait; echo "compiled $(el)"
for c in transpose_add:N=8192,M=8192 transpose_add:N=8191,M=8193 transpose_add:N=8191,M=8192 \
         transpose_add:N=1000,M=3001 heads_keys_f32:B=4,S=2048,H=16,D=128 heads_keys_f32:B=4,S=2047,H=16,D=127 \
         transpose_bf16:N=8191,M=8192 transpose_bf16:N=4096,M=12288 transpose_bf16:N=3001,M=5003 \
         heads_keys:B=8,S=2047,H=32,D=127 heads_keys:B=2,S=4096,H=16,D=64 \
         ba:transpose_add_bf16:N=8192,M=8192 ba:transpose_add_bf16:N=8191,M=8192 ba:transpose_add_bf16:N=8191,M=8193; do
  p=perm; [[ $c == ba:* ]] && { p=ba; c=${c#ba:}; }
  k=${c%%:*} s=${c#*:} line="$k $s:"
  for r in 1 2; do
    f=$W/run_${r}_${k}_${s//[=,]/_}.txt
    timeout 40 $K run $W/$p $k --shape $s --variant default --copy-baseline --reps 50 > $f 2>&1
    line="$line | held $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3), "us", $NF "%"}')"
  done
  echo "$line"
done | tee $W/times.txt
echo "times $(el)"; pack
