#!/usr/bin/env bash
# Session 25, device call 1: row blocks prefetch the weights their store pass reads (norm
# weight and bias) into L1 before their first pass. norms.kiln compiled for sm_90 on the build
# machine by main's kiln (4c2a0f8, "old") and by this session's ("new"), carried as
# .carry/sp.tar.xz; the new kiln as .carry/kiln.xz.
#  1. A/B: the default variant of the three norms at 1, 8, 64, 132 and 4096 rows of 1000,
#     4095, 4096, 8192 and 16384 elements, two rounds interleaved, 100 launches each.
#  2. The new defaults against the interpreter at awkward shapes (random inputs).
#  3. Every variant end to end of the examples whose row kernels read such a weight
#     (tests/gpu/run_gpu_tests.sh, four shards), beside compute-sanitizer memcheck on new
#     defaults.
set -uo pipefail
W=/tmp/w1
source bench/device_setup.sh
tar xJf .carry/sp.tar.xz -C $W
t0=$(date +%s)
for round in 1 2; do
  for k in layernorm_f32 layernorm_bf16 rmsnorm_bf16; do
    for n in 1000 4095 4096 8192 16384; do
      for m in 1 8 64 132 4096; do
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
for k in layernorm_f32 layernorm_bf16 rmsnorm_bf16 softmax_f32; do
  for s in M=1,N=1 M=8,N=4096 M=131,N=1001 M=3,N=70001 M=1000,N=4095 M=7,N=65536; do
    echo "$k $s $($K run $W/new $k --shape $s --variant default --reps 3 2>&1 |
                   grep -E '^  v[0-9]|rror|MISMATCH' | head -2)"
  done
done > $W/checked.txt 2>&1
echo "checked: $(grep -c ' ok ' $W/checked.txt) ok of $(wc -l < $W/checked.txt)"
ex="add_rmsnorm layernorm rmsnorm scalars strided reduction_suite"
for i in 0 1 2 3; do
  KILN_REQUIRE_GPU=1 KILN_GPU_EXAMPLES="$ex" KILN_GPU_SHARD=$i/4 timeout 360 \
    tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e$i.txt 2>&1 &
done
for c in layernorm_f32:M=8,N=4096 layernorm_bf16:M=5,N=4095 rmsnorm_bf16:M=3,N=1001 layernorm_f32:M=2,N=70001; do
  k=${c%%:*} s=${c#*:}
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/new $k --shape $s --reps 1 \
    > $W/san_${k}_${s//[=,]/_}.txt 2>&1
  echo "memcheck $k $s exit $? $(grep -E 'ERROR SUMMARY' $W/san_${k}_${s//[=,]/_}.txt | head -1)"
done > $W/sanitizer.txt 2>&1
wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e$i.txt)"; grep -E "FAIL|SKIP" $W/e2e$i.txt | head -5; done | tee $W/e2e.txt
cat $W/sanitizer.txt
echo "total $(( $(date +%s) - t0 )) s"
tar czf $OUT/call1.tgz -C $W --exclude=new --exclude=old --exclude='e2e?' .
