#!/usr/bin/env bash
# Session 17, device call 5: the build to commit (as call 4): issue 20's pointwise and scan
# cases beside torch (bench/everyday.sh), then end to end every variant of
# examples/reduction_suite.kiln (its pointwise steps; call 3 reached 41 of its cases) and
# examples/permute.kiln with this build.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w5; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call5.tgz -C $W --exclude='pre' --exclude='e2e' --exclude='every/*/' . ; }
K=build/tools/kiln
BENCH_REPS=30 BENCH_KERNELS="embedding cumsum_rows dropout_bf16 rotary" BENCH_TORCH="embedding cumsum dropout rotary" timeout 240 bench/everyday.sh $K $W/every > $W/every.txt 2>&1
echo "everyday: exit $? $(el)"; tail -8 $W/every.txt; pack
EX="reduction_suite permute"
for ex in $EX; do $K compile examples/$ex.kiln -o $W/pre/$ex > /dev/null & done; wait
echo "compiled $(el)"
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  mkdir -p $W/e2e/$i/bundles; cp -r $W/pre/* $W/e2e/$i/bundles/
  KILN_GPU_EXAMPLES="$EX" KILN_GPU_SHARD=$i/8 timeout 250 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
echo "case lines: $(grep -cE ' ok$' $W/e2e.txt) ok, $(grep -cE 'FAIL' $W/e2e.txt) failing"
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
