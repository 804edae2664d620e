#!/usr/bin/env bash
# Device call 6 (twelfth session): the committed build. Every variant of examples/scan.kiln end
# to end again, the Python package's scan tests against torch, and the read-twice tiles (rows
# of more tiles than their records hold: 100 rows of 4M, 2 blocks a row) checked against the
# interpreter and under memcheck. Logs in $OUT/call6.tgz.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w6; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools build/lib
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xf .carry/lib.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call6.tgz -C $W --exclude='scan' --exclude='e2e' . ; }
K=build/tools/kiln
$K compile examples/scan.kiln -o $W/scan > /dev/null
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="scan" KILN_GPU_SHARD=$i/8 timeout 150 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done
PYTHONPATH=python KILN_BIN=$K KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so KILN_CACHE_DIR=/tmp/pc \
  timeout 150 python3 -m pytest -q python/tests/test_gpu_kernels.py -k "scan or cum" > $W/python.txt 2>&1 &
wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -20; tail -3 $W/python.txt; echo "e2e, python $(el)"; pack
{ echo "== cumsum_rows M=100,N=4194304 v6 (read twice), checked"
  timeout 200 $K run $W/scan cumsum_rows --shape M=100,N=4194304 --variant 6 --reps 3; echo "exit $?"
  echo "== memcheck cumsum_rows M=101,N=4194301 v6 (read twice, scalar)"
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/scan cumsum_rows --shape M=101,N=4194301 --variant 6 --reps 1 --no-check 2>&1 | tail -3; echo "exit $?"
} > $W/twice.txt 2>&1; cat $W/twice.txt; echo "twice $(el)"; pack
