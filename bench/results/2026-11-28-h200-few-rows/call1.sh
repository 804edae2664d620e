#!/usr/bin/env bash
# Session 26, device call 1: few-rows variants (config.h row_few_rows_config). norms.kiln (the
# kernels whose variants were measured in bench/results/2026-11-28-h200-weight-prefetch, calls
# 4 and 5) and heldout.kiln (kernels not measured before) compiled here for sm_90 by the new
# kiln (.carry/kiln.xz, "new") and by main before it (.carry/kiln_old.xz, c0d1584, "old").
#  A/B: the default variant at 1, 16 and 132 rows (at most the SMs: where the rule changes)
#  of lengths the choice was made on (1000, 4096, 8192) and lengths it was not (768, 1536,
#  2048, 3000, 4095, 6144), two rounds interleaved, 100 launches each.
set -uo pipefail
W=/tmp/w1
source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
  .carry/kiln_old.xz $W/kiln_old && chmod +x $W/kiln_old
D=bench/results/2026-11-28-h200-few-rows
t0=$(date +%s)
for spec in norms heldout; do
  $K compile $D/$spec.kiln -o $W/new_$spec --arch sm_90 -j 8 > $W/compile_new_$spec.txt 2>&1 &
  $W/kiln_old compile $D/$spec.kiln -o $W/old_$spec --arch sm_90 -j 8 > $W/compile_old_$spec.txt 2>&1 &
done
wait
tail -n1 $W/compile_*.txt
echo "compiled $(( $(date +%s) - t0 )) s"
kernels="norms:layernorm_f32 norms:layernorm_bf16 norms:rmsnorm_bf16 heldout:rmsnorm_f32
heldout:add_rmsnorm_bf16 heldout:layernorm_f16 heldout:softmax_w_f32"
for round in 1 2; do
  for kk in $kernels; do
    spec=${kk%%:*} k=${kk#*:}
    for n in 768 1000 1536 2048 3000 4095 4096 6144 8192; do
      for m in 1 16 132; do
        for which in new old; do
          line=$($K run $W/${which}_$spec $k --shape M=$m,N=$n --variant default --reps 100 --no-check 2>&1 |
                 grep -E '^  v[0-9]|rror' | head -1)
          echo "$round $which $k M=$m,N=$n $line"
        done
      done
    done
  done
  echo "round $round $(( $(date +%s) - t0 )) s" >&2
done > $W/ab.txt 2>&1
python3 bench/results/2026-11-28-h200-row-split-bytes/ab_summary.py $W/ab.txt | tee $W/ab_summary.txt
echo "total $(( $(date +%s) - t0 )) s"
tar czf $OUT/call1.tgz -C $W --exclude='new_*' --exclude='old_*' --exclude=kiln_old .
