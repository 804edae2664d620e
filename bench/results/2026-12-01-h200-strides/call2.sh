#!/usr/bin/env bash
# Session 43, device call 2: the L2 flush as a read of twice the L2 (autotune/l2_flush.h)
# against the write it replaces (KILN_EXP_FLUSH set: an experiment's hook, not committed), in
# one kiln binary: each suite case's default variant both ways in turn, and torch.compile of
# ten of them both ways (torch_flush.py).
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
D=bench/results/2026-12-01-h200-strides
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/mb.tar.xz -C $W
while read -r id k s; do
  line="$id $k $s:"
  for f in read write read; do
    o=$W/run_${id}_$f.txt
    if [[ $f == write ]]; then
      KILN_EXP_FLUSH=1 timeout 60 $K run $W/mb $k --shape $s --variant default --copy-baseline --reps 50 --no-check > $o 2>&1
    else
      timeout 60 $K run $W/mb $k --shape $s --variant default --copy-baseline --reps 50 --no-check > $o 2>&1
    fi
    line="$line | $f $(grep -E '^ *v[0-9]+' $o | awk '{print $(NF-3), "us", $NF "%"}') copy $(grep -oE '[0-9.]+ GB/s' $o | tail -1)"
  done
  echo "$line"
done < <(python3 bench/memory_bound_cases.py --list) | tee $W/times.txt
echo "kiln $(el)"; pack
timeout 300 python3 $D/torch_flush.py mid_mean_3d rotate3_3d colsum_f32 total_f32_64m layernorm_f32_odd \
  ln_wgrad_64 logsumexp_bf16 transpose_f32_odd add_f32 softmax_f32_small > $W/torch.txt 2>&1
cat $W/torch.txt; echo "torch $(el)"; pack
