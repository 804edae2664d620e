#!/usr/bin/env bash
# Session 36, device call 7: the submitted build (the shifted path of call 5, element by element
# where every load is a tiled 32-bit one: compiler/plan.h Tiling::shifts). Every variant of the
# examples with tiled steps end to end against the interpreter (four shards; NaN and infinities
# where special_cases.txt asks), compute-sanitizer memcheck and racecheck on default variants at
# odd shapes; then the memory-bound suite's transposes and permutations (bench/memory_bound.sh:
# Kiln's default checked, every variant timed, torch eager and torch.compile, the copy
# bandwidth in the same run), the bundle compiled while the end-to-end tests run.
set -uo pipefail
W=/tmp/w7; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call7 && cp $W/*.txt $OUT/call7/ 2>/dev/null; cp -r $W/suite $OUT/call7/ 2>/dev/null; }
odd=bench/results/2026-11-29-h200-odd-transpose/odd.kiln
$K compile $odd -o $W/new --arch sm_90 > /dev/null &
mkdir -p $W/suite; $K compile bench/memory_bound.kiln -o $W/suite/bundle --arch sm_90 > /dev/null &
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="transpose permute gather_suite strided" KILN_GPU_SHARD=$i/4 timeout 240 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
for tool in memcheck racecheck; do
  for c in transpose_bf16:M=1000,N=3001 transpose_bf16:M=3,N=7 transpose_add:M=63,N=65 transpose_add:M=200,N=203 heads_keys:B=1,S=1000,H=7,D=5 heads_keys:B=1,S=300,H=2,D=133 transpose_f32:M=1001,N=999; do
    k=${c%%:*} s=${c#*:} f=$W/san_${tool}_${k}_${s//[=,]/_}.log
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/new $k --shape $s --variant default --reps 1 > $f 2>&1
    echo "$tool $k $s exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | head -1) $(grep -E '^ *v[0-9]+' $f | head -1)"
  done
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
BENCH_BUNDLE=$W/suite/bundle timeout 330 bash bench/memory_bound.sh $K $W/suite transpose heads_keys rotate3 > $W/suite.txt 2>&1
tail -16 $W/suite.txt
echo "suite $(el)"; pack
