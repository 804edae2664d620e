#!/usr/bin/env bash
# Session 35, device call 7: the split-K tidy-up (71feccf: S read only from the grid, the
# phase compared with 0) checked again: every variant of examples/matmul.kiln end to end, the
# sm_80 images at two shapes that split, memcheck on the rule's pick there.
set -uo pipefail
W=/tmp/w7; source bench/device_setup.sh
$K compile examples/matmul.kiln -o $W/pre/matmul --arch sm_90 -j 16 > /dev/null
$K compile examples/matmul.kiln -o $W/mm80 --arch sm_80 -j 16 > /dev/null
export KILN_REQUIRE_GPU=1
for i in $(seq 0 15); do mkdir -p $W/e2e/$i/bundles; ln -s $W/pre/matmul $W/e2e/$i/bundles/matmul
  KILN_GPU_EXAMPLES=matmul KILN_GPU_SHARD=$i/16 timeout 250 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.log 2>&1 & done
for c in "matmul M=17,N=24,K=8191" "matmul M=300,N=136,K=3000"; do set -- $c
  timeout 200 $K run $W/mm80 $1 --shape $2 --variant all --reps 2 > $W/sm80_$1.log 2>&1; echo "sm_80 $c: exit $? $(grep -c ' ok' $W/sm80_$1.log) ok-lines"; done
wait; cat $W/e2e_*.log | awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}'
cat $W/e2e_*.log | grep FAIL | head
for c in "M=17,N=24,K=8191" "M=300,N=136,K=3000"; do timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/pre/matmul matmul --shape $c --variant default --reps 2 > $W/san.log 2>&1; echo "memcheck $c: exit $? $(grep -m1 'ERROR SUMMARY' $W/san.log)"; done
