#!/usr/bin/env bash
# Session 19, device call 4, the build whose erf-GELU GEMM default is the staged epilogue in
# clusters (v13): (a) bench/contraction.py's GELU and RMSNorm cases and the plain GEMM at the
# same shape beside cuBLAS and torch.compile; (b) end to end every variant of the changed
# examples, the Python package's tests of them against torch; (c) memcheck and racecheck on
# the new default; (d) every variant of the short-K and small GEMMs (where Kiln is furthest
# from cuBLAS), 200 launches each.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w4; mkdir -p $W/v
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xf .carry/lib.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call4.tgz -C $W --exclude='*.bundle' --exclude='bc' --exclude='pre' --exclude='e2e' --exclude='*.cubin' --exclude='*.ptx' . ; }
K=build/tools/kiln
# (a)
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 250 python3 bench/contraction.py $W/contraction --only "gemm 8192x4096x4096" gelu rmsnorm > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $? $(el)"
grep -E '^(gemm|bmm|bias|rmsnorm)' $W/contraction_bench.txt; pack
# (b)
for ex in bias_gelu erf matmul; do $K compile examples/$ex.kiln -o $W/pre/$ex > /dev/null & done; wait
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  mkdir -p $W/e2e/$i/bundles; cp -r $W/pre/* $W/e2e/$i/bundles/
  KILN_GPU_EXAMPLES="bias_gelu erf matmul" KILN_GPU_SHARD=$i/8 timeout 200 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt; rm -f $W/e2e_[0-7].txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
unset KILN_REQUIRE_GPU
PYTHONPATH=python KILN_BIN=$K KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so KILN_CACHE_DIR=/tmp/pc \
  timeout 150 python3 -m pytest -q -p no:cacheprovider python/tests/test_gpu_kernels.py -k "gelu or erf or tanh or linear or every_example" > $W/pytest.txt 2>&1
echo "pytest: exit $? $(tail -1 $W/pytest.txt) $(el)"; pack
# (c)
for c in "linear_gelu M=1100,N=4100,K=200" "linear_gelu M=1000,N=17,K=4095" "linear_gelu M=256,N=4096,K=256"; do
  set -- $c
  for tool in memcheck racecheck synccheck; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/pre/matmul $1 --shape $2 --variant default --reps 1 > $W/san_${tool}_$1_$2.txt 2>&1
    echo "$tool $c: exit $?"
  done
done | tee $W/sanitizers.txt; echo "sanitizers $(el)"; pack
# (d)
$K compile bench/contraction.kiln -o $W/bc --arch sm_90 > /dev/null
for ks in "bmm B=16,M=2048,N=2048,K=512" "gemm M=8192,N=4096,K=512" "gemm M=1024,N=1024,K=1024" "gemm M=8192,N=4096,K=4096"; do
  set -- $ks
  timeout 100 $K run $W/bc $1 --shape $2 --variant all --reps 200 --no-check > $W/v/$1_$2.txt 2>&1
  echo "== $ks"; grep -E '^ *v[0-9]+' $W/v/$1_$2.txt | awk '{print $1, $(NF-2)}' | tr '\n' ' '; echo
done | tee $W/variants.txt; echo "variants $(el)"; pack
