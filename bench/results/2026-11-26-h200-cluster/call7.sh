#!/usr/bin/env bash
# Session 14, device call 7: after the review's mends (one builder for the cluster launch's
# config, the block's rank kept as i32): every variant of examples/matmul.kiln end to end,
# the Python contraction tests, memcheck on the cluster default.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w7; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools build/lib
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xf .carry/lib.tar -C build
K=build/tools/kiln; export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="matmul" KILN_GPU_SHARD=$i/8 timeout 280 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -20
PYTHONPATH=python KILN_BIN=$K KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so KILN_CACHE_DIR=/tmp/pc \
  timeout 150 python3 -m pytest -q -p no:cacheprovider python/tests/test_gpu_kernels.py -k "matmul or linear or scores" > $W/pytest.txt 2>&1
echo "pytest: exit $? $(tail -1 $W/pytest.txt)" | tee -a $W/gpu.txt
$K compile examples/matmul.kiln -o $W/mm --arch sm_90 > /dev/null
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/mm matmul_nt --shape M=333,N=257,K=4096 --variant default --reps 1 > $W/san.txt 2>&1
echo "memcheck matmul_nt 333x257x4096: exit $?" | tee -a $W/gpu.txt
tar czf $OUT/call7.tgz -C $W --exclude='mm' --exclude='e2e' .
