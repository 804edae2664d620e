#!/usr/bin/env bash
# Session 23, device call 4: the submitted build (272af69, carried as .carry/kiln.xz) end to end:
# every variant and the rule's default at every shape of the 8 examples whose plans hold an
# outer reduction, NaN and infinities where special_cases.txt asks, four shards at once.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w4; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
K=build/tools/kiln
t0=$(date +%s)
ex="colsum gather_suite reduction_suite rowsum_colsum scalars spatial_mean strided weighted_colsum"
for i in 0 1 2 3; do
  KILN_REQUIRE_GPU=1 KILN_GPU_EXAMPLES="$ex" KILN_GPU_SHARD=$i/4 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e$i.txt 2>&1 &
done
wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e$i.txt)"; grep -E "FAIL|SKIP" $W/e2e$i.txt | head -5; done | tee $W/e2e.txt
echo "e2e $(( $(date +%s) - t0 )) s"
tar czf $OUT/call4.tgz -C $W --exclude='e2e?' .
