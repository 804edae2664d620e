#!/usr/bin/env bash
# Session 22, device call 4: the submitted build (the deep split: the narrow split with 16
# steps in flight, a variant of its own, run from 65536 reduced rows; the narrow split keeps 8).
# End to end, every variant at every shape of the 8 examples whose plans hold an outer
# reduction (tests/gpu/cases.txt, NaN and infinities where special_cases.txt asks), four
# shards at once, beside compute-sanitizer memcheck, racecheck and synccheck on the deep split
# v29 of cs.kiln (compiled beforehand for sm_90: csd) at awkward shapes, each the rule's pick.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w4; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/csd.tar.xz -C $W
K=build/tools/kiln
t0=$(date +%s)
ex="colsum gather_suite reduction_suite rowsum_colsum scalars spatial_mean strided weighted_colsum"
for i in 0 1 2 3; do
  KILN_REQUIRE_GPU=1 KILN_GPU_EXAMPLES="$ex" KILN_GPU_SHARD=$i/4 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e$i.txt 2>&1 &
done
for tool in memcheck racecheck synccheck; do
  for c in colsum_bf16:M=100003,N=64 colsum_f32:M=65536,N=32 ln_wgrad:M=70001,N=64; do
    k=${c%%:*} s=${c#*:}
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/csd $k --shape $s --reps 1 > $W/san_${tool}_${k}_${s//[=,]/_}.txt 2>&1
    echo "$tool $k $s exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/san_${tool}_${k}_${s//[=,]/_}.txt | head -1) $(grep -E '^ *v[0-9]+' $W/san_${tool}_${k}_${s//[=,]/_}.txt | awk '{print $1, $(NF-4)}')"
  done
done > $W/sanitizer.txt 2>&1
wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e$i.txt)"; grep -E "FAIL|SKIP" $W/e2e$i.txt | head -5; done | tee $W/e2e.txt
cat $W/sanitizer.txt
echo "e2e and sanitizers $(( $(date +%s) - t0 )) s"
tar czf $OUT/call4.tgz -C $W --exclude=csd --exclude='e2e?' .
