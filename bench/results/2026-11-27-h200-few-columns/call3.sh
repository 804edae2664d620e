#!/usr/bin/env bash
# Session 21, device call 3: the submitted build (outer reductions sum each chunk's steps of a
# column plainly and compensate once per chunk). End to end, every variant at every shape of
# the examples whose plans hold an outer reduction (tests/gpu/cases.txt, NaN and infinities
# where special_cases.txt asks), four shards at once; compute-sanitizer memcheck, racecheck and
# synccheck on the split, narrow split, scalar split and plain outer variants of
# bench/memory_bound.kiln (compiled beforehand for sm_90) at awkward shapes; then the outer
# cases of the memory-bound suite beside torch eager and torch.compile in one run.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w3; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/mb.tar.xz -C $W
K=build/tools/kiln
pack() { tar czf $OUT/call3.tgz -C $W --exclude=mb --exclude='e2e?' --exclude=suite/bundle . ; }
t0=$(date +%s)
ex="colsum gather_suite reduction_suite rowsum_colsum scalars spatial_mean strided weighted_colsum"
for i in 0 1 2 3; do
  KILN_REQUIRE_GPU=1 KILN_GPU_EXAMPLES="$ex" KILN_GPU_SHARD=$i/4 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e$i.txt 2>&1 &
done
wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e$i.txt)"; grep -E "FAIL|SKIP" $W/e2e$i.txt | head -5; done | tee $W/e2e.txt
echo "e2e $(( $(date +%s) - t0 )) s"; pack
for tool in memcheck racecheck synccheck; do
  for c in colsum_bf16:M=100003,N=64:23 colsum_bf16:M=4097,N=24:26 colsum_bf16:M=30001,N=200:22 colsum_f32:M=100003,N=32:23 ln_wgrad:M=4097,N=64:23 mid_mean:B=3,M=1001,N=77:17; do
    k=${c%%:*} r=${c#*:} s=${r%:*} v=${r##*:}
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/mb $k --shape $s --variant $v --reps 1 > $W/san_${tool}_${k}_${s//[=,]/_}.txt 2>&1
    echo "$tool $k $s v$v exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/san_${tool}_${k}_${s//[=,]/_}.txt | head -1) $(grep -E '^ *v[0-9]+' $W/san_${tool}_${k}_${s//[=,]/_}.txt | awk '{print $(NF-4)}')"
  done
done | tee $W/sanitizer.txt
echo "sanitizer $(( $(date +%s) - t0 )) s"; pack
BENCH_BUNDLE=$W/mb BENCH_REPS=100 bench/memory_bound.sh $K $W/suite colsum mid_mean ln_wgrad > $W/suite.txt 2>&1
tail -20 $W/suite.txt
echo "suite $(( $(date +%s) - t0 )) s"; pack
