#!/usr/bin/env bash
# Session 30, device call 3: every variant of the examples call 1 did not run, end to end
# against the interpreter (tests/gpu/run_gpu_tests.sh: random inputs at awkward shapes, NaN and
# infinities, outputs and scratch poisoned), with dependent launches on: every kernel now
# starts with griddepcontrol. Bundles (sm_90) compiled once, 16 shards at once.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
export KILN_REQUIRE_GPU=1
examples="reduction_suite permute matmul scalars dropout strided gelu_tanh gather_suite rotary erf transpose swiglu mixed embedding causal_mask bias_gelu add"
mkdir -p $W/pre
for ex in $examples; do $K compile examples/$ex.kiln -o $W/pre/$ex --arch sm_90 -j 16 > /dev/null || echo "FAIL compile $ex"; done
echo "compiled $(el)"
for i in $(seq 0 15); do
  mkdir -p $W/e2e/$i/bundles
  for ex in $examples; do ln -s $W/pre/$ex $W/e2e/$i/bundles/$ex; done
  KILN_GPU_EXAMPLES="$examples" KILN_GPU_SHARD=$i/16 timeout 480 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.log 2>&1 &
done; wait
cat $W/e2e_[0-9]*.log > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -c "passed,.*failed" $W/e2e.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -40; echo "e2e $(el)"
mkdir -p $OUT/call3 && cp $W/*.txt $OUT/call3/
