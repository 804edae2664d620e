#!/usr/bin/env bash
# Session 22, device call 1: the narrow split of outer reductions with 16 steps in flight
# (branch next/narrow-split-16, kiln built from it, carried as .carry/kiln.xz).
#  1. The split rule's threshold: cs.kiln (beside this script) compiled for sm_90 by main's kiln
#     (cs8: narrow split v23 with 8 steps, taken from M >= 1024) and the branch's (cs16: 16
#     steps, taken from M >= 2048); every variant at M from 1024 to 4096, 100 launches each.
#  2. The default bf16 column sum at two shapes of more than 2^31 elements, checked.
#  3. End to end, every variant at every shape of the 8 examples whose plans hold an outer
#     reduction, four shards at once, beside compute-sanitizer memcheck, racecheck and synccheck
#     on the narrow split v23 (now 16 steps) at awkward shapes.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w1; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/cs.tar.xz -C $W
K=build/tools/kiln
pack() { tar czf $OUT/call1.tgz -C $W --exclude=cs8 --exclude=cs16 --exclude='e2e?' --exclude=big.bundle . ; }
t0=$(date +%s)
for shape in colsum_bf16:N=16 colsum_bf16:N=64 colsum_f32:N=32 ln_wgrad:N=64; do
  k=${shape%%:*} n=${shape#*:}
  for m in 1024 1536 2047 2048 3072 4096; do
    for b in cs8 cs16; do
      echo "== $b $k M=$m,$n"
      $K run $W/$b $k --shape M=$m,$n --variant all --reps 100 --no-check
    done
  done
done > $W/threshold.txt 2>&1
echo "threshold $(( $(date +%s) - t0 )) s"; pack
$K compile examples/reduction_suite.kiln -o $W/big.bundle > /dev/null
for shape in M=33554433,N=64 M=1048577,N=2048; do
  $K run $W/big.bundle colsum_bf16 --shape $shape --reps 2; echo "exit $?"
done > $W/big.txt 2>&1
cat $W/big.txt
echo "big $(( $(date +%s) - t0 )) s"; pack
ex="colsum gather_suite reduction_suite rowsum_colsum scalars spatial_mean strided weighted_colsum"
for i in 0 1 2 3; do
  KILN_REQUIRE_GPU=1 KILN_GPU_EXAMPLES="$ex" KILN_GPU_SHARD=$i/4 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e$i.txt 2>&1 &
done
for tool in memcheck racecheck synccheck; do
  for c in colsum_bf16:M=100003,N=64 colsum_bf16:M=2049,N=16 colsum_f32:M=100003,N=32 ln_wgrad:M=4097,N=64; do
    k=${c%%:*} s=${c#*:}
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/cs16 $k --shape $s --variant 23 --reps 1 > $W/san_${tool}_${k}_${s//[=,]/_}.txt 2>&1
    echo "$tool $k $s v23 exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/san_${tool}_${k}_${s//[=,]/_}.txt | head -1) $(grep -E '^ *v[0-9]+' $W/san_${tool}_${k}_${s//[=,]/_}.txt | awk '{print $(NF-4)}')"
  done
done > $W/sanitizer.txt 2>&1
wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e$i.txt)"; grep -E "FAIL|SKIP" $W/e2e$i.txt | head -5; done | tee $W/e2e.txt
cat $W/sanitizer.txt
echo "e2e and sanitizers $(( $(date +%s) - t0 )) s"; pack
