#!/usr/bin/env bash
# Session 37, device call 3: the rule runs 64 x 64 tiles where the default's 128 x 128 would run
# the shifted or element-by-element path or lie mostly outside the space (bundle/rule.h
# tiled_variant, kOddTileSide; the manifest's "tiles"). Every variant of the transpose and permute
# examples end to end against the interpreter (three shards), compute-sanitizer memcheck on the
# rule's pick at odd shapes; then the memory-bound suite's transposes and permutations (Kiln's
# default, now the rule's pick at each shape, checked; every variant timed; torch eager and
# torch.compile; the copy bandwidth in the same run).
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call3.tgz *.txt suite/*.txt suite/*.json suite/*.md 2>/dev/null); }
$K compile examples/permute.kiln -o $W/new --arch sm_90 > /dev/null &
mkdir -p $W/suite; $K compile bench/memory_bound.kiln -o $W/bundle --arch sm_90 > /dev/null &
export KILN_REQUIRE_GPU=1
for i in 0 1 2; do
  KILN_GPU_EXAMPLES="transpose permute" KILN_GPU_SHARD=$i/3 timeout 240 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
for c in heads_keys:B=1,S=300,H=2,D=133 transpose_bf16:M=1000,N=3001 heads_keys:B=2,S=50,H=1,D=40; do
  k=${c%%:*} s=${c#*:} f=$W/san_memcheck_${k}_${s//[=,]/_}.log
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/new $k --shape $s --variant default --reps 1 > $f 2>&1
  echo "memcheck $k $s exit $? $(grep -E 'ERROR SUMMARY' $f | head -1) $(grep -E '^ *v[0-9]+' $f | head -1)"
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
BENCH_BUNDLE=$W/bundle timeout 330 bash bench/memory_bound.sh $K $W/suite transpose heads rotate > $W/suite.txt 2>&1
grep -E "^\| (transpose|heads|rotate)|torch (transpose|heads|rotate)" $W/suite.txt
echo "suite $(el)"; pack
