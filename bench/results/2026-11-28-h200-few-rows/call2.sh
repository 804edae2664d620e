#!/usr/bin/env bash
# Session 26, device call 2, the submitted form: few-rows variants for rows of up to 1024 only
# on at most half the SMs' rows (bundle/rule.h kFewRowsShortLimit, from call 1). New kiln
# (.carry/kiln.xz) against main before it (.carry/kiln_old.xz, c0d1584), both compiling
# norms.kiln and heldout.kiln here for sm_90.
#  1. A/B at 33 and 66 rows (now the few-rows variant) and 67 (the tier, as before) of 768
#     and 1000, two rounds interleaved, 100 launches each.
#  2. The new defaults against the interpreter at awkward shapes (random inputs), the
#     few-rows variants and their shifted twins among them.
#  3. Every variant end to end of the examples whose row kernels read such a weight
#     (tests/gpu/run_gpu_tests.sh, four shards), then compute-sanitizer memcheck on new
#     defaults that run few-rows variants.
set -uo pipefail
W=/tmp/w2
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
for f in $W/compile_*.txt; do echo "$f: $(tail -n1 $f)"; done
echo "compiled $(( $(date +%s) - t0 )) s"
kernels="norms:layernorm_f32 norms:layernorm_bf16 norms:rmsnorm_bf16 heldout:rmsnorm_f32
heldout:add_rmsnorm_bf16 heldout:layernorm_f16 heldout:softmax_w_f32"
for round in 1 2; do
  for kk in $kernels; do
    spec=${kk%%:*} k=${kk#*:}
    for n in 768 1000; do
      for m in 33 66 67; do
        for which in new old; do
          line=$($K run $W/${which}_$spec $k --shape M=$m,N=$n --variant default --reps 100 --no-check 2>&1 |
                 grep -E '^  v[0-9]|rror' | head -1)
          echo "$round $which $k M=$m,N=$n $line"
        done
      done
    done
  done
done > $W/ab.txt 2>&1
python3 bench/results/2026-11-28-h200-row-split-bytes/ab_summary.py $W/ab.txt | tee $W/ab_summary.txt
for kk in $kernels; do
  spec=${kk%%:*} k=${kk#*:}
  for s in M=1,N=1 M=1,N=1001 M=5,N=4095 M=66,N=999 M=131,N=3001 M=1,N=8191 M=17,N=2047 M=132,N=6144 M=3,N=70001; do
    echo "$k $s $($K run $W/new_$spec $k --shape $s --variant default --reps 3 2>&1 |
                   grep -E '^  v[0-9]|rror|MISMATCH' | head -2)"
  done
done > $W/checked.txt 2>&1
echo "checked: $(grep -c ' ok ' $W/checked.txt) ok of $(wc -l < $W/checked.txt)"
grep -v ' ok ' $W/checked.txt | head -5
ex="add_rmsnorm layernorm rmsnorm scalars strided reduction_suite"
for i in 0 1 2 3; do
  KILN_REQUIRE_GPU=1 KILN_GPU_EXAMPLES="$ex" KILN_GPU_SHARD=$i/4 timeout 300 \
    tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e$i.txt 2>&1 &
done
wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e$i.txt)"; grep -E "FAIL|SKIP" $W/e2e$i.txt | head -5; done | tee $W/e2e.txt
for c in norms:layernorm_f32:M=8,N=4095 norms:rmsnorm_bf16:M=3,N=1001 heldout:add_rmsnorm_bf16:M=66,N=2047 heldout:softmax_w_f32:M=1,N=8190; do
  spec=${c%%:*} r=${c#*:} k=${r%%:*} s=${r#*:}
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/new_$spec $k --shape $s --reps 1 \
    > $W/san_${k}_${s//[=,]/_}.txt 2>&1
  echo "memcheck $k $s exit $? $(grep -E 'ERROR SUMMARY' $W/san_${k}_${s//[=,]/_}.txt | head -1) $(grep -E '^  v[0-9]' $W/san_${k}_${s//[=,]/_}.txt | head -1)"
done | tee $W/sanitizer.txt
echo "total $(( $(date +%s) - t0 )) s"
tar czf $OUT/call2.tgz -C $W --exclude='new_*' --exclude='old_*' --exclude=kiln_old --exclude='e2e?' .
