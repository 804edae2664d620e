#!/usr/bin/env bash
# Session 19, device call 7, the build with 128 x 64 TMA tiles and the rule's cascade (the
# largest smaller tiles that give half the SMs a tile): (a) every variant of every kernel of
# examples/matmul.kiln and scalars.kiln end to end; the Python package's contraction tests;
# (b) the rule's pick (default) at the shapes of call 6; (c) bench/contraction.py's small and
# batched cases beside cuBLAS and torch.compile.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w7; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xf .carry/lib.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call7.tgz -C $W --exclude='bc' --exclude='pre' --exclude='e2e' --exclude='*.bundle' . ; }
K=build/tools/kiln
# (a)
for ex in matmul scalars; do $K compile examples/$ex.kiln -o $W/pre/$ex > /dev/null & done
$K compile bench/contraction.kiln -o $W/bc --arch sm_90 > /dev/null &
wait
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  mkdir -p $W/e2e/$i/bundles; cp -r $W/pre/* $W/e2e/$i/bundles/
  KILN_GPU_EXAMPLES="matmul scalars" KILN_GPU_SHARD=$i/8 timeout 250 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt; rm -f $W/e2e_[0-7].txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
unset KILN_REQUIRE_GPU
PYTHONPATH=python KILN_BIN=$K KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so KILN_CACHE_DIR=/tmp/pc \
  timeout 150 python3 -m pytest -q -p no:cacheprovider python/tests/test_gpu_kernels.py -k "matmul or linear or scores" > $W/pytest.txt 2>&1
echo "pytest: exit $? $(tail -1 $W/pytest.txt) $(el)"; pack
# (b)
for ks in "gemm M=512,N=512,K=512" "gemm M=1024,N=1024,K=1024" "gemm M=1024,N=1024,K=4096" "gemm M=2048,N=1024,K=1024" \
    "gemm M=128,N=4096,K=4096" "gemm M=256,N=4096,K=4096" "gemm M=4096,N=512,K=4096" "gemm M=1536,N=1024,K=2048" \
    "gemm M=2048,N=2048,K=1024" "bmm B=4,M=512,N=512,K=1024"; do
  set -- $ks
  $K run $W/bc $1 --shape $2 --variant default --reps 200 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk -v k="$ks" '{print k, $1, $(NF-2)}'
done | tee $W/defaults.txt; echo "defaults $(el)"; pack
# (c)
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 200 python3 bench/contraction.py $W/contraction --only "gemm 1024x" "bmm" > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $? $(el)"
grep -E '^(gemm|bmm|bias|rmsnorm)' $W/contraction_bench.txt; pack
