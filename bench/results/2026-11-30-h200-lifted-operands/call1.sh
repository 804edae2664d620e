#!/usr/bin/env bash
# Session 38, device call 1: contractions whose operands the spec computes per element and
# rounds (lifted operands, examples/norm_linear.kiln). Every variant of the example end to end
# against the interpreter (four shards), memcheck on the rule's pick at a TMA shape and at a
# copying one, then bench/contraction.py's RMSNorm cases beside cuBLAS and torch.compile.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call1.tgz *.txt 2>/dev/null); }
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="norm_linear" KILN_GPU_SHARD=$i/4 timeout 250 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
$K compile examples/norm_linear.kiln -o $W/nl --arch sm_90 > /dev/null
for c in rmsnorm_linear:M=333,N=257,K=4096 rmsnorm_linear:M=1000,N=17,K=4095 cast_products:B=2,M=100,N=72,K=1000 gain_linear:M=17,N=24,K=8191; do
  IFS=: read -r k s <<< "$c"; f=$W/san_${k}_${s//[,=]/_}.log
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/nl $k --shape $s --variant default --reps 1 > $f 2>&1
  echo "memcheck $k $s exit $? $(grep -E 'ERROR SUMMARY' $f | head -1)"
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
tar xf .carry/lib.tar -C build
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 300 python3 bench/contraction.py $W/contraction --only rmsnorm gemm\ 8192x4096 > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $?"; grep -v "^ *$" $W/contraction_bench.txt | tail -12
cp $W/contraction/contraction.json $W/contraction.json.txt 2>/dev/null
echo "bench $(el)"; pack
