#!/usr/bin/env bash
# Session 39, device call 7: the submitted build (after the review's fixes). Every variant of
# examples/f32_matmul.kiln end to end again, and the review's programs (call7.kiln: a tf32
# temporary read by a row sum, a bf16 output read back by the contraction through a tensor
# map, an f32 product beside a strided input, a named tf32 temporary with K not contiguous, a
# cut of a sum) checked against the interpreter, every variant, with memcheck on two.
set -uo pipefail
W=/tmp/w7; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call7.tgz *.txt 2>/dev/null); }
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="f32_matmul" KILN_GPU_SHARD=$i/4 timeout 200 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP|mismatch" $W/e2e_$i.log | head -8; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
R=bench/results/2026-11-30-h200-tf32
$K compile $R/call7.kiln -o $W/r --arch sm_90 > /dev/null
for k in red back strided_other named cut_sum; do
  timeout 60 $K run $W/r $k --shape M=333,N=257,K=1000 --variant all --reps 2 2>&1 | grep -vE "^\s*$"
done | tee $W/review.txt
for k in back named; do
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/r $k --shape M=333,N=257,K=1000 --variant default --reps 1 > $W/san_$k.log 2>&1
  echo "memcheck $k exit $? $(grep -E 'ERROR SUMMARY' $W/san_$k.log | head -1)"
done | tee $W/sanitizer.txt
echo "review $(el)"; pack
