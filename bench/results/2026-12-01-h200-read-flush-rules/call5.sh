#!/usr/bin/env bash
# Session 44, device call 5: outer splits from 2 blocks a tile (kOuterSplitMinBlocks). The
# rule's pick checked against the interpreter (random, then NaN and infinities) where it now
# splits, then timed against the unsplit default it ran before (v17), interleaved, two rounds.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call5.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/rb.tar.xz -C $W
B=$W/rb
{
for c in "colsum_bf16 M=16383,N=32768" "ln_wgrad M=8191,N=20000" "colsum_bf16 M=3001,N=32768"; do
  set -- $c
  for inputs in random specials; do
    timeout 120 $K run $B $1 --shape $2 --variant default --reps 3 --inputs $inputs 2>&1 | grep -E "^ *(v[0-9]|default)|error|FAIL" | head -3 | sed "s|^|$1 $2 $inputs: |"
  done
done
} > $W/checks.txt 2>&1
cat $W/checks.txt; echo "checks $(el)"; pack
run1() { timeout 60 $K run $B $1 --shape $2 --variant $3 --reps 50 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-2)}' | head -1; }
{
for round in 1 2; do
  while read -r k s old; do
    n=$(run1 $k $s default); o=$(run1 $k $s $old)
    echo "round $round | $k $s | new $n | old $o"
  done <<'CASES'
colsum_bf16 M=16384,N=32768 17
colsum_bf16 M=8192,N=32768 17
colsum_bf16 M=4096,N=32768 17
colsum_bf16 M=2048,N=32768 17
colsum_bf16 M=8192,N=28672 17
ln_wgrad M=8192,N=20000 17
ln_wgrad M=8192,N=24576 17
ln_wgrad M=4096,N=32768 17
ln_wgrad M=32768,N=4096 17
colsum_f32 M=4096,N=16384 17
colsum_f32 M=8192,N=12288 17
colsum_f32 M=4096,N=32768 17
mid_mean B=16,M=2048,N=1024 17
CASES
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
