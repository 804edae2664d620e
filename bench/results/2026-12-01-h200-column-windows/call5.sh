#!/usr/bin/env bash
# Session 45, device call 5: call 4's comparison of the rule's picks, its time column read
# right (call 4 read a column that `kiln run` prints without --copy-baseline as "-"), and every
# variant at the three other means over the middle axis of call 4. Bundles as in call 4.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call5.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
B=$W/exp/bN
run1() { timeout 60 $K run $B $1 --shape $2 --variant $3 --reps 50 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-2)}' | head -1; }
{
for round in 1 2; do
  while read -r k s old; do
    echo "round $round | $k $s | new $(run1 $k $s default) | old $(run1 $k $s $old)"
  done <<'CASES'
mid_mean B=64,M=1024,N=513 17
mid_mean B=16,M=4096,N=1001 22
mid_mean B=4,M=8192,N=1025 22
mid_mean_bf16 B=8,M=2048,N=4097 22
CASES
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
sweep() {  # kernel shape...
  local k=$1; shift
  for s in "$@"; do
    f=$W/all_N_${k}_${s//[=,]/_}.txt
    timeout 90 $K run $B $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
    echo "== $k $s"; grep -E '^ *v[0-9]+' $f | awk '{print $1, $2, $3, $4, $5, $6, $(NF-3), "us", $NF "%"}' | sort -k7 -n | head -4
  done
}
{
sweep mid_mean B=16,M=4096,N=1001 B=4,M=8192,N=1025
sweep mid_mean_bf16 B=8,M=2048,N=4097
} | tee $W/sweep.txt
echo "sweep $(el)"; pack
