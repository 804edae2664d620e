#!/usr/bin/env bash
# Session 51, device call 3 (data for the rule, main's build at 1657c1a): row reductions that
# store no elements (spread.kiln), f32 and bf16, at 264 to 16896 rows of 1500 to 12000
# elements: the rule's tier (64 .. 512 threads a row, 32 elements a thread: v4 .. v7) against
# its spread twin (twice the threads, 16 elements a thread: v9 .. v12), interleaved twice, 50
# launches each, no check.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call3.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
t() { timeout 60 $K run $W/exp/S $1 --shape $2 --variant $3 --reps 50 --no-check 2>&1 |
        grep -E '^ *v[0-9]+' | head -1 | awk '{print $1, $(NF-2)}'; }
for k in rowsum_f32 rowmax_f32 rowdot_f32 meanvar_f32 rowsum_bf16 meanvar_bf16; do
  for n in 1500 3000 6000 12000; do
    rows="264 1056 4224 16896"; [ $n -ge 6000 ] && rows="264 1056 4224 8448"
    for m in $rows; do
      s=M=$m,N=$n
      read -r d td1 <<<"$(t $k $s default)"
      id=${d#v}; id=${id%\*}
      [ "$id" -ge 4 ] && [ "$id" -le 7 ] || { echo "$k $s tier=$d $td1 (not a long tier)"; continue; }
      sp=$(( id + 5 ))
      read -r _ ts1 <<<"$(t $k $s $sp)"
      read -r _ td2 <<<"$(t $k $s default)"
      read -r _ ts2 <<<"$(t $k $s $sp)"
      echo "$k $s rows=$m R=$n tier=$d $td1 $td2 spread=v$sp $ts1 $ts2"
    done
  done
done | tee $W/sweep.txt
echo "sweep $(el)"; pack
