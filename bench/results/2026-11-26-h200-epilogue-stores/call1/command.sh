#!/usr/bin/env bash
# Device call 1: unpack the binaries, the memory-bound pointwise cases with the old and the new
# kiln, the GEMM sweep, and the end-to-end cases of the examples the divisor change touches.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p build/tools build/lib build/tests /tmp/old
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_old.xz /tmp/old/kiln && chmod +x /tmp/old/kiln
tar xf .carry/lib.tar -C build
W=/tmp/w; mkdir -p $W
t0=$(date +%s)
# 1. Memory-bound cases, old and new (default variant checked, every variant timed).
cases="add_f32 add_pos_3d bias_gelu silu_mul scale_cast heads_first heads_keys rotate3 mid_mean"
for which in old new; do
  bin=build/tools/kiln; [[ $which == old ]] && bin=/tmp/old/kiln
  BENCH_ARCH=sm_90 BENCH_TORCH=0 BENCH_REPS=30 timeout 110 bench/memory_bound.sh $bin $W/mb_$which $cases > $W/mb_$which.log 2>&1
  echo "memory_bound $which: exit $? ($(( $(date +%s) - t0 )) s)"
done
(cd bench && timeout 100 python3 torch_memory_bound.py $W/mb_new/torch.json heads_first add_pos > $W/mb_new/torch.txt 2>&1); echo "torch: exit $?"
python3 bench/summarize_memory_bound.py $W/mb_new > $W/summary_new.md 2>&1
python3 bench/summarize_memory_bound.py $W/mb_old > $W/summary_old.md 2>&1
echo "bench done ($(( $(date +%s) - t0 )) s)"
# 2. GEMM sweep.
PYTHONPATH=python KILN_BIN=build/tools/kiln KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 120 python3 bench/experiments/gemm_sweep/sweep.py $W/gemm_sweep.json > $W/gemm_sweep.txt 2>&1
echo "sweep: exit $? ($(( $(date +%s) - t0 )) s)"
# 3. End-to-end cases of the touched examples, every variant, 8 shards.
export KILN_REQUIRE_GPU=1
ex="add bias_gelu swiglu mixed causal_mask transpose permute gelu_tanh gather_suite embedding rotary dropout scalars strided spatial_mean cross_entropy"
pids=()
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="$ex" KILN_GPU_SHARD=$i/8 timeout 170 tests/gpu/run_gpu_tests.sh build/tools/kiln $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $OUT/gpu.txt
grep -E 'FAIL' $W/e2e.txt | head -20
echo "e2e done ($(( $(date +%s) - t0 )) s)"
cp $W/summary_new.md $W/summary_old.md $W/gemm_sweep.txt $W/gemm_sweep.json $W/e2e.txt $OUT/ 2>/dev/null
tar czf $OUT/logs.tgz -C $W mb_old mb_new e2e --exclude='bundle' --exclude='bundles' 2>/dev/null
cat $W/gemm_sweep.txt | tail -20
grep -E 'heads|add_pos|bias_gelu|mid_mean|rotate|silu|scale_cast|add_f32' $W/summary_new.md | cut -c1-230
echo ---old; grep -E 'heads|add_pos|bias_gelu|mid_mean|rotate|silu|scale_cast|add_f32' $W/summary_old.md | cut -c1-160
