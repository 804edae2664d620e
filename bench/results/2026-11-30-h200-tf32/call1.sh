#!/usr/bin/env bash
# Session 39, device call 1: f32 contractions the spec cuts to tf32 (examples/tf32_matmul.kiln).
# Every variant of the example end to end against the interpreter, with NaN and infinities too,
# and the bf16 contractions again (matmul: the ldmatrix and element-copy code is shared), in
# four shards; memcheck on the rule's picks at a TMA shape, a copying one and a split one and on
# the mma.sync variant; then bench/contraction.py's tf32 cases at 4096^3.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call1.tgz *.txt 2>/dev/null); }
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="tf32_matmul matmul" KILN_GPU_SHARD=$i/4 timeout 300 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP|mismatch" $W/e2e_$i.log | head -8; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
$K compile examples/tf32_matmul.kiln -o $W/tf --arch sm_90 > /dev/null
for c in linear_tf32:M=333,N=257,K=4096:default linear_tf32:M=1000,N=17,K=4095:default matmul_tf32:M=17,N=24,K=8191:default linear_tf32:M=300,N=136,K=3000:0 scaled_bmm_tf32:B=2,M=100,N=72,K=1000:default; do
  IFS=: read -r k s v <<< "$c"; f=$W/san_${k}_${s//[,=]/_}_$v.log
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/tf $k --shape $s --variant $v --reps 1 > $f 2>&1
  echo "memcheck $k $s variant $v exit $? $(grep -E 'ERROR SUMMARY' $f | head -1)"
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
tar xf .carry/lib.tar -C build
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 200 python3 bench/contraction.py $W/contraction --only "tf32 linear 4096x4096" "tf32 gemm 4096x4096" > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $?"; grep -v "^ *$" $W/contraction_bench.txt | tail -12
cp $W/contraction/contraction.json $W/contraction.json.txt 2>/dev/null
echo "bench $(el)"; pack
