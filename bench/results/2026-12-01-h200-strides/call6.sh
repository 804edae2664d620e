#!/usr/bin/env bash
# Session 43, device call 6: the other f32 tiled kernels whose odd extents the rule now runs on
# 64 x 64 tiles of 128 threads (bundle/rule.cpp odd_tiles: half the elements a thread of the
# default's 64 x 64 of 64 holds): every variant at odd shapes (the rule's pick is v1 at each),
# then the rule's pick checked against the interpreter at small odd shapes.
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call6.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/ex.tar.xz -C $W
for c in perm:transpose_add:M=8191,N=8193 perm:transpose_add:M=8191,N=8192 perm:transpose_add:M=3001,N=1000 \
         perm:heads_keys_f32:B=4,S=2047,H=16,D=127 perm:heads_keys_f32:B=4,S=2047,H=16,D=128 \
         perm:transpose_cast:M=8191,N=8193 perm:rotate3:A=255,B=511,C=63 tr:transpose_scale:M=4097,N=3001; do
  b=${c%%:*}; r=${c#*:}; k=${r%%:*}; s=${r#*:}
  f=$W/all_${k}_${s//[=,]/_}.txt
  timeout 60 $K run $W/$b $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
  echo "== $k $s"; grep -E '^ *v[0-9]+' $f | awk '{print $1, $2, $3, $4, $(NF-3), "us", $NF "%"}' | head -16
done | tee $W/times.txt
echo "times $(el)"; pack
for c in perm:transpose_add:M=1001,N=999 perm:heads_keys_f32:B=2,S=101,H=3,D=33 perm:transpose_cast:M=999,N=1001 \
         perm:rotate3:A=31,B=33,C=35 tr:transpose_scale:M=1001,N=999; do
  b=${c%%:*}; r=${c#*:}; k=${r%%:*}; s=${r#*:}
  timeout 60 $K run $W/$b $k --shape $s --variant default --reps 2 --inputs specials 2>&1 | grep -E "^ *v[0-9]|MISMATCH|error" | sed "s/^/$k $s: /"
done | tee $W/checks.txt
echo "checks $(el)"; pack
