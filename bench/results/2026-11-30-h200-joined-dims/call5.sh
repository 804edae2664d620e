#!/usr/bin/env bash
# Session 37, device call 5: the submitted build (7a8dfb0: one constant of zeros per module,
# Emitter::zeros, for the gathers of empty tensors and the tiled spans outside their tensor).
# Every variant of the examples with gathers and tiled steps end to end against the interpreter
# (four shards), memcheck on the defaults of a gather and of a tiled step at odd shapes.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call5.tgz *.txt 2>/dev/null); }
export KILN_REQUIRE_GPU=1
ex="gather_suite cross_entropy embedding permute transpose"
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="$ex" KILN_GPU_SHARD=$i/4 timeout 280 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
$K compile examples/cross_entropy.kiln -o $W/ce --arch sm_90 > /dev/null
$K compile examples/permute.kiln -o $W/perm --arch sm_90 > /dev/null
for c in ce:cross_entropy:M=7,V=1000 perm:transpose_bf16:M=1000,N=3001 perm:heads_keys:B=1,S=300,H=2,D=133; do
  IFS=: read -r bun k s <<< "$c"; f=$W/san_${k}.log
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/$bun $k --shape $s --variant default --reps 1 > $f 2>&1
  echo "memcheck $k $s exit $? $(grep -E 'ERROR SUMMARY' $f | head -1) $(grep -E '^ *v[0-9]+' $f | head -1 | cut -c1-60)"
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
