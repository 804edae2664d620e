#!/usr/bin/env bash
# Session 27, device call 5: main's build (the experiments reverted) end to end on every variant
# of examples/matmul.kiln and examples/scalars.kiln, the two cases added to tests/gpu/cases.txt
# among them.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
$K compile examples/matmul.kiln -o $W/pre/matmul > /dev/null &
$K compile examples/scalars.kiln -o $W/pre/scalars > /dev/null &
wait
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  mkdir -p $W/e2e/$i/bundles; cp -r $W/pre/* $W/e2e/$i/bundles/
  KILN_GPU_EXAMPLES="matmul scalars" KILN_GPU_SHARD=$i/4 timeout 240 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-3].txt > $W/e2e.txt; rm -f $W/e2e_[0-3].txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'M=1024,N=2048,K=256|B=4,M=512,N=512,D=64' $W/e2e.txt | head -4
grep -E 'FAIL' -A6 $W/e2e.txt | head -30
mkdir -p $OUT/call5 && cp $W/*.txt $OUT/call5/
