#!/usr/bin/env bash
# Session 39, device call 4: f32 contractions the spec does not cut, now on CUDA cores (an FMA
# per product in the tiles of the mma.sync variants) where they were row reductions. Every
# variant of examples/f32_matmul.kiln end to end (tf32 and FMA kernels, NaN and infinities
# too), memcheck on the FMA kernels, then bench/contraction.py's fp32 cases beside cuBLAS's f32
# GEMM and torch.compile (no tf32).
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call4.tgz *.txt 2>/dev/null); }
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="f32_matmul" KILN_GPU_SHARD=$i/4 timeout 280 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP|mismatch" $W/e2e_$i.log | head -8; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
$K compile examples/f32_matmul.kiln -o $W/f --arch sm_90 > /dev/null
for c in matmul_f32:M=333,N=257,K=1000:default matmul_f32:M=1000,N=17,K=4095:default matmul_tn_f32:M=257,N=129,K=128:all bmm_f32:B=3,M=17,N=1000,K=64:3; do
  IFS=: read -r k s v <<< "$c"; f=$W/san_${k}_${s//[,=]/_}_$v.log
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/f $k --shape $s --variant $v --reps 1 > $f 2>&1
  echo "memcheck $k $s variant $v exit $? $(grep -E 'ERROR SUMMARY' $f | head -1)"
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
$K compile bench/contraction.kiln -o $W/cb --arch sm_90 > /dev/null
for k in gemm_f32 linear_f32; do timeout 60 $K run $W/cb $k --shape M=4096,N=4096,K=4096 --variant all --no-check; done > $W/variants.txt 2>&1
cat $W/variants.txt; echo "variants $(el)"; pack
tar xf .carry/lib.tar -C build
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 200 python3 bench/contraction.py $W/contraction --only "fp32 " > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $?"; grep -E "^fp32|Error|error" $W/contraction_bench.txt | tail -12
cp $W/contraction/contraction.json $W/contraction.json.txt 2>/dev/null
echo "bench $(el)"; pack
