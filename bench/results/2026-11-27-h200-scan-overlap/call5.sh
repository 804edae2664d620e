#!/usr/bin/env bash
# Session 20, device call 5: the submitted build with the narrow split of 128 threads (v23;
# the old one is v28, for the tuner). End to end, every variant at every shape of the examples
# whose plans hold an outer reduction (tests/gpu/cases.txt, NaN and infinities where
# special_cases.txt asks), in four shards at once; compute-sanitizer memcheck, racecheck and
# synccheck on the new v23 of bench/memory_bound.kiln (compiled beforehand for sm_90) at
# awkward shapes; the rule's defaults timed at the shapes of call 4.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w5; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/mb.tar.xz -C $W
K=build/tools/kiln
ex="colsum gather_suite reduction_suite rowsum_colsum scalars spatial_mean strided weighted_colsum"
for i in 0 1 2 3; do
  KILN_REQUIRE_GPU=1 KILN_GPU_EXAMPLES="$ex" KILN_GPU_SHARD=$i/4 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e$i.txt 2>&1 &
done
wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e$i.txt)"; grep -E "FAIL|SKIP" $W/e2e$i.txt | head -5; done
for tool in memcheck racecheck synccheck; do
  for c in colsum_bf16:M=100003,N=64 colsum_bf16:M=4097,N=24 colsum_f32:M=100003,N=32 ln_wgrad:M=4097,N=64; do
    k=${c%%:*} s=${c#*:}
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/mb $k --shape $s --variant 23 --reps 1 > $W/san_${tool}_${k}_${s//[=,]/_}.txt 2>&1
    echo "$tool $k $s exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/san_${tool}_${k}_${s//[=,]/_}.txt | head -1)"
  done
done | tee $W/sanitizer.txt
for c in colsum_bf16:M=1048576,N=64 colsum_bf16:M=524288,N=128 colsum_bf16:M=4194304,N=16 ln_wgrad:M=1048576,N=64 colsum_f32:M=1048576,N=32 colsum_bf16:M=65536,N=2048; do
  k=${c%%:*} s=${c#*:}
  $K run $W/mb $k --shape $s --variant default --reps 200 --copy-baseline > $W/default_${k}_${s//[=,]/_}.txt 2>&1
  echo "$k $s: $(grep -E '^ *v[0-9]+' $W/default_${k}_${s//[=,]/_}.txt)"
done | tee $W/defaults.txt
tar czf $OUT/call5.tgz -C $W --exclude=mb --exclude='e2e?' .
