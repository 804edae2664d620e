#!/usr/bin/env bash
# Device call 3: every variant of the contraction examples end to end (16-byte epilogue stores,
# linear_relu), then bench/contraction.py: Kiln beside cuBLAS and torch.compile.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p build/tools build/lib
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xf .carry/lib.tar -C build
W=/tmp/w; mkdir -p $W; t0=$(date +%s)
el() { echo "($(( $(date +%s) - t0 )) s)"; }
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="matmul scalars" KILN_GPU_SHARD=$i/8 timeout 230 tests/gpu/run_gpu_tests.sh build/tools/kiln $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $OUT/gpu.txt
grep -c ' ok$' $W/e2e.txt; grep -E 'FAIL' -A6 $W/e2e.txt | head -30
echo "e2e $(el)"
cp $W/e2e.txt $OUT/
PYTHONPATH=python KILN_BIN=build/tools/kiln KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 320 python3 bench/contraction.py $W/contraction > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $? $(el)"
cp $W/contraction_bench.txt $OUT/; cp $W/contraction/contraction.json $OUT/ 2>/dev/null
grep -E '^(gemm|bmm|bias|rmsnorm)' $W/contraction_bench.txt
