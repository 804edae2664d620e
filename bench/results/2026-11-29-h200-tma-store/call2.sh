#!/usr/bin/env bash
# Session 28, device call 2: the TMA-store build after call 1, its writes' addresses computed
# for each tile (hoisted, they had made the scaled matmul_tn spill) and the 128 x 128 and
# 128 x 64 TMA tiles (problems of few tiles) storing through TMA too, against main before
# (kiln_old): (a) the default variant at 26 shapes, both builds interleaved, 100 launches; (b) every variant of the contraction examples end to end; (c) memcheck and
# racecheck on the small tiles' defaults; (d) the Python package's contraction tests; (e) round 2
# of (a) when the call has time left.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
tar xf .carry/lib.tar -C build
KO=build/tools/kiln_old
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call2 && cp $W/*.txt $OUT/call2/ 2>/dev/null; }
for b in new old; do
  k=$K; [ $b = old ] && k=$KO
  $k compile bench/contraction.kiln -o $W/bc_$b --arch sm_90 -j 8 > /dev/null &
  $k compile examples/matmul.kiln -o $W/mm_$b --arch sm_90 -j 8 > /dev/null &
done
mkdir -p $W/pre; $K compile examples/scalars.kiln -o $W/pre/scalars > /dev/null &
wait; cp -r $W/mm_new $W/pre/matmul; echo "compiled $(el)"
cases=("bc gemm M=8192,N=4096,K=512" "bc gemm M=8192,N=4096,K=4096" "bc gemm M=4096,N=4096,K=4096"
  "bc gemm M=4095,N=4096,K=4096" "bc gemm M=3000,N=5000,K=2048" "bc gemm M=2048,N=11008,K=4096"
  "bc bmm B=16,M=2048,N=2048,K=512" "bc bmm B=64,M=512,N=512,K=128"
  "bc linear_bias_gelu M=8192,N=4096,K=4096" "bc linear_bias_gelu M=2048,N=11008,K=4096"
  "bc linear_bias_gelu M=4096,N=1024,K=512" "bc rmsnorm_linear M=8192,N=4096,K=4096"
  "mm matmul_nt M=4096,N=4096,K=4096" "mm scores B=32,M=1024,N=1024,D=128"
  "mm matmul_tn M=4096,N=4096,K=1024" "mm matmul_tn M=8192,N=4096,K=4096" "mm matmul M=4096,N=4096,K=1024"
  "bc gemm M=1024,N=1024,K=1024" "bc gemm M=128,N=4096,K=4096" "bc gemm M=2048,N=1024,K=1024"
  "bc gemm M=512,N=512,K=512" "bc gemm M=1024,N=1024,K=4096" "bc bmm B=4,M=512,N=512,K=1024"
  "bc gemm M=2048,N=2048,K=1024" "mm matmul_nt M=1024,N=1024,K=2048" "bc linear_bias_gelu M=512,N=4096,K=1024")
ab() {
  for c in "${cases[@]}"; do
    set -- $c
    for b in new old; do
      k=$K; [ $b = old ] && k=$KO
      t=$($k run $W/${1}_$b $2 --shape $3 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-2)}')
      echo "round $1 $2 $3 $b $t"
    done
  done
}
# (a)
ab | sed "s/^round/round 1/" | tee $W/ab.txt; echo "ab1 $(el)"; pack
# (b)
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  mkdir -p $W/e2e/$i/bundles; cp -r $W/pre/* $W/e2e/$i/bundles/
  KILN_GPU_EXAMPLES="matmul scalars" KILN_GPU_SHARD=$i/8 timeout 200 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.log 2>&1 &
done; wait
cat $W/e2e_[0-7].log > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
unset KILN_REQUIRE_GPU
# (c) the rule's small tiles (128 x 128 and 128 x 64) at edge shapes
for c in "matmul M=1000,N=1000,K=1000" "matmul_nt M=333,N=520,K=300" "scores B=3,M=200,N=136,D=64"; do
  set -- $c
  for tool in memcheck racecheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/pre/matmul $1 --shape $2 --variant default --reps 1 > $W/san_${tool}_$1.log 2>&1
    echo "$tool $c: exit $? $(grep -E '^ *v[0-9]' $W/san_${tool}_$1.log | awk '{print $1, $NF}') $(grep -m1 'ERROR SUMMARY' $W/san_${tool}_$1.log)"
  done
done | tee $W/sanitizers.txt; echo "sanitizers $(el)"; pack
# (d)
PYTHONPATH=python KILN_BIN=$K KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so KILN_CACHE_DIR=/tmp/pc \
  timeout 150 python3 -m pytest -q -p no:cacheprovider python/tests/test_gpu_kernels.py python/tests/test_gpu_torch.py -k "matmul or linear or scores or any_address" > $W/pytest.txt 2>&1
echo "pytest: exit $? $(tail -1 $W/pytest.txt) $(el)" | tee -a $W/gpu.txt; pack
# (e) round 2 while the call has time left
if [ $(( $(date +%s) - t0 )) -lt 420 ]; then ab | sed "s/^round/round 2/" | tee -a $W/ab.txt; fi; echo "ab2 $(el)"; pack
