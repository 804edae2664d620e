#!/usr/bin/env bash
# Session 36, device call 8: call 7's suite found [8, 2047, 32, 127] -> [8, 32, 127, 2047] at
# 1.52x torch.compile's time: D = 127 leaves no tile inside the space along A, so every tile
# ran step 4's checked path. This build bounds rows past A per chunk in tiles inside the space
# along I. Every variant of the transpose and permute examples end to end, memcheck and
# racecheck at two shapes with such tiles, then the suite's odd transposes again (Kiln and
# torch in the same run).
set -uo pipefail
W=/tmp/w8; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call8 && cp $W/*.txt $OUT/call8/ 2>/dev/null; mkdir -p $OUT/call8/suite && cp $W/suite/*.txt $W/suite/*.json $W/suite/*.md $W/suite/*.png $OUT/call8/suite/ 2>/dev/null; }
$K compile bench/results/2026-11-29-h200-odd-transpose/odd.kiln -o $W/new --arch sm_90 > /dev/null &
mkdir -p $W/suite; $K compile bench/memory_bound.kiln -o $W/bundle --arch sm_90 > /dev/null &
export KILN_REQUIRE_GPU=1
for i in 0 1 2; do
  KILN_GPU_EXAMPLES="transpose permute" KILN_GPU_SHARD=$i/3 timeout 200 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
for tool in memcheck racecheck; do
  for c in heads_keys:B=1,S=300,H=2,D=133 transpose_add:M=200,N=203; do
    k=${c%%:*} s=${c#*:} f=$W/san_${tool}_${k}_${s//[=,]/_}.log
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/new $k --shape $s --variant default --reps 1 > $f 2>&1
    echo "$tool $k $s exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | head -1) $(grep -E '^ *v[0-9]+' $f | head -1)"
  done
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
BENCH_BUNDLE=$W/bundle timeout 200 bash bench/memory_bound.sh $K $W/suite transpose_bf16_odd heads_keys_4d_odd transpose_f32_odd > $W/suite.txt 2>&1
grep -E "^\| (transpose|heads)|torch (transpose|heads)" $W/suite.txt
echo "suite $(el)"; pack
