#!/usr/bin/env bash
# Session 14, device call 6: the submitted build (contractions in clusters of two by default):
# every variant of the contraction examples end to end, the Python package's contraction tests,
# the sanitizers on the cluster default where B is K-major (matmul_nt, f32 output) and batched
# (scores), then bench/contraction.py: Kiln beside cuBLAS and torch.compile.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w6; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools build/lib
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xf .carry/lib.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call6.tgz -C $W --exclude='mm' --exclude='e2e' --exclude='contraction/*.bundle' --exclude='*.cubin' --exclude='*.ptx' . ; }
K=build/tools/kiln
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="matmul scalars" KILN_GPU_SHARD=$i/8 timeout 280 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
PYTHONPATH=python KILN_BIN=$K KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so KILN_CACHE_DIR=/tmp/pc \
  timeout 150 python3 -m pytest -q -p no:cacheprovider python/tests/test_gpu_kernels.py -k "matmul or linear or scores" > $W/pytest.txt 2>&1
echo "pytest: exit $? $(tail -1 $W/pytest.txt) $(el)"; pack
$K compile examples/matmul.kiln -o $W/mm --arch sm_90 > /dev/null
for c in "matmul_nt M=333,N=257,K=4096" "matmul_nt M=513,N=1024,K=100" "scores B=3,M=100,N=300,D=64" "matmul M=1,N=17,K=1000"; do
  set -- $c
  for tool in memcheck racecheck synccheck; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/mm $1 --shape $2 --variant default --reps 1 > $W/san_${tool}_$1_$2.txt 2>&1
    echo "$tool $c: exit $?"
  done
done | tee $W/sanitizers.txt; echo "sanitizers $(el)"; pack
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 330 python3 bench/contraction.py $W/contraction > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $? $(el)"
grep -E '^(gemm|bmm|bias|rmsnorm)' $W/contraction_bench.txt; pack
