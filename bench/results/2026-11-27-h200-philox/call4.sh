#!/usr/bin/env bash
# Session 17, device call 4: the build to commit (call 3's, with the tiled transposes back on
# nvJitLink, as before this session): end to end, every variant at every shape of
# tests/gpu/cases.txt, for the examples with flat pointwise or scan steps that call 3's time did
# not reach (its 110 cases all passed: add, bias_gelu, causal_mask, gelu_tanh, mixed, permute,
# reduction_suite, swiglu, transpose). Bundles compiled once, before the shards start.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w4; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call4.tgz -C $W --exclude='pre' --exclude='e2e' . ; }
K=build/tools/kiln
EX="dropout embedding rotary gather_suite scalars scan strided global_max_norm"
for ex in $EX; do $K compile examples/$ex.kiln -o $W/pre/$ex > /dev/null & done; wait
echo "compiled $(el)"
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  mkdir -p $W/e2e/$i/bundles; cp -r $W/pre/* $W/e2e/$i/bundles/
  KILN_GPU_EXAMPLES="$EX" KILN_GPU_SHARD=$i/8 timeout 480 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
echo "case lines: $(grep -cE ' ok$' $W/e2e.txt) ok, $(grep -cE 'FAIL' $W/e2e.txt) failing"
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
