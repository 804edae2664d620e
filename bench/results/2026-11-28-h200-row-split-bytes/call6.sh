#!/usr/bin/env bash
# Session 24, device call 6 (an experiment on branch store-pass-loads, not on main): row
# kernels whose store pass loads each vector's inputs (the row again, a weight and bias) and
# stores it before the next vector's loads (call 5: 8 round trips in a row for the f32
# layernorm's 128-thread tier). The branch evaluates every vector's value before the first
# store. store_pass.kiln compiled for sm_90 by the branch's kiln ("new") and by main's at
# e4479ff ("old"), carried as .carry/sp.tar.xz; the default variant at 8, 132 and 4096 rows
# of 1000, 4096 and 8192 elements, two rounds interleaved, 100 launches each; then the new
# defaults checked against the interpreter.
set -uo pipefail
W=/tmp/w6
source bench/device_setup.sh
tar xJf .carry/sp.tar.xz -C $W
t0=$(date +%s)
for round in 1 2; do
  for k in layernorm_f32 layernorm_bf16 rmsnorm_bf16 softmax_f32 softmax_bf16; do
    for n in 1000 4096 8192; do
      for m in 8 132 4096; do
        for which in new old; do
          line=$($K run $W/$which $k --shape M=$m,N=$n --variant default --reps 100 --no-check 2>&1 |
                 grep -E '^  v[0-9]|rror' | head -1)
          echo "$round $which $k M=$m,N=$n $line"
        done
      done
    done
  done
  echo "round $round $(( $(date +%s) - t0 )) s" >&2
done > $W/ab.txt 2>&1
python3 bench/results/2026-11-28-h200-row-split-bytes/ab_summary.py $W/ab.txt | tee $W/ab_summary.txt
for k in layernorm_f32 layernorm_bf16 rmsnorm_bf16 softmax_f32 softmax_bf16; do
  for s in M=8,N=4096 M=131,N=1001; do
    echo "$k $s $($K run $W/new $k --shape $s --variant default --reps 3 2>&1 |
                   grep -E '^  v[0-9]|rror|MISMATCH' | head -2)"
  done
done > $W/checked.txt 2>&1
echo "checked: $(grep -c ' ok ' $W/checked.txt) ok of $(wc -l < $W/checked.txt)"
echo "total $(( $(date +%s) - t0 )) s"
tar czf $OUT/call6.tgz -C $W --exclude=new --exclude=old .
