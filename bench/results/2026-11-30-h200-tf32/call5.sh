#!/usr/bin/env bash
# Session 39, device call 5: the FMA kernels with 16-byte loads of K-major rows (4 reduced
# indices a load) and 8-byte loads of N-contiguous pairs, and 256 x 128 tiles by default. Every
# variant of examples/f32_matmul.kiln end to end, memcheck, every FMA variant at two shapes,
# then bench/contraction.py's fp32 cases.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call5.tgz *.txt 2>/dev/null); }
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="f32_matmul" KILN_GPU_SHARD=$i/4 timeout 200 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP|mismatch" $W/e2e_$i.log | head -8; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
$K compile examples/f32_matmul.kiln -o $W/f --arch sm_90 > /dev/null
for c in matmul_f32:M=333,N=257,K=1000:all linear_relu_f32:M=300,N=1028,K=33:all; do
  IFS=: read -r k s v <<< "$c"; f=$W/san_${k}_${s//[,=]/_}_$v.log
  timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/f $k --shape $s --variant $v --reps 1 > $f 2>&1
  echo "memcheck $k $s variant $v exit $? $(grep -E 'ERROR SUMMARY' $f | head -1)"
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
$K compile bench/contraction.kiln -o $W/cb --arch sm_90 > /dev/null
for s in M=4096,N=4096,K=4096 M=3000,N=5000,K=1000; do
  for k in gemm_f32 linear_f32; do timeout 60 $K run $W/cb $k --shape $s --variant all --no-check; done
done > $W/variants.txt 2>&1
cat $W/variants.txt; echo "variants $(el)"; pack
tar xf .carry/lib.tar -C build
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 280 python3 bench/contraction.py $W/contraction --only "fp32 " > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $?"; grep -E "^fp32" $W/contraction_bench.txt | tail -12
cp $W/contraction/contraction.json $W/contraction.json.txt 2>/dev/null
echo "bench $(el)"; pack
