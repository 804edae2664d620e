#!/usr/bin/env bash
# Session 29, device call 7: the submitted build (call 6's "s": only the scalar stores at
# consecutive elements): every variant of the examples with tiled steps end to end
# (transpose, permute, gather_suite, strided; NaN and infinities where special_cases.txt asks),
# four shards at once; compute-sanitizer memcheck and racecheck on the default variants at odd
# shapes.
set -uo pipefail
W=/tmp/w7; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call7 && cp $W/*.txt $OUT/call7/ 2>/dev/null; }
$K compile bench/results/2026-11-29-h200-odd-transpose/odd.kiln -o $W/new --arch sm_90 > /dev/null &
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="transpose permute gather_suite strided" KILN_GPU_SHARD=$i/4 timeout 220 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
for tool in memcheck racecheck; do
  for c in transpose_f32:M=1001,N=999 transpose_bf16:M=1000,N=3001 transpose_add:M=63,N=65 heads_keys:B=1,S=1000,H=7,D=5; do
    k=${c%%:*} s=${c#*:}
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/new $k --shape $s --variant default --reps 1 > $W/san_${tool}_${k}.log 2>&1
    echo "$tool $k $s exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/san_${tool}_${k}.log | head -1) $(grep -E '^ *v[0-9]+' $W/san_${tool}_${k}.log | head -1)"
  done
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
