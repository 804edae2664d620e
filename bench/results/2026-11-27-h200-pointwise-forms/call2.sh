#!/usr/bin/env bash
# Session 16, device call 2: the committed design (each flat pointwise variant has its own entry,
# 32-bit and row-aligned, and a general entry for every other launch). End to end on every
# example with pointwise steps (every variant at every shape), launches of more than 2^31
# elements (the general entry's 64-bit copy), memcheck (call3.sh times it).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/s16c2; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
un() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" $1 $2 && chmod +x $2; }
mkdir -p build/tools; un .carry/kiln_new.xz build/tools/kiln
K=build/tools/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W --exclude='b_*' --exclude='kiln_base' --exclude='e2e' --exclude='every/*/' --exclude='mb/bundle' . ; }
export KILN_REQUIRE_GPU=1
EX="add bias_gelu causal_mask dropout embedding gather_suite gelu_tanh mixed permute rotary scalars strided swiglu transpose cross_entropy"
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="$EX" KILN_GPU_SHARD=$i/8 timeout 270 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
for ex in add causal_mask embedding rotary; do
  $K compile examples/$ex.kiln -o $W/b_new_$ex > /dev/null &
done; wait
{
echo "big add N=2147483650 (general entry, 64-bit)"; timeout 150 $K run $W/b_new_add add --shape N=2147483650 --variant default --reps 3 2>&1 | tail -2
echo "big causal_mask T=46344 (general entry, 64-bit rows)"; timeout 150 $K run $W/b_new_causal_mask causal_mask --shape T=46344 --variant default --reps 3 2>&1 | tail -2
} > $W/big.txt 2>&1; cat $W/big.txt; echo "big $(el)"; pack
{
for k in "embedding T=7,V=3,D=4099" "embedding T=1000,V=50,D=1024" "rotary T=7,H=3,R=33,P=5" "rotary T=1000,H=8,R=64,P=4096" "add N=1000"; do
  set -- $k
  echo "memcheck $1 $2"; compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/b_new_$1 $1 --shape $2 --variant default --reps 1 2>&1 | tail -2
done
} > $W/san.txt 2>&1; grep -c "ERROR SUMMARY: 0 errors" $W/san.txt; grep -B4 "ERROR SUMMARY: [1-9]" $W/san.txt | head; echo "sanitizers $(el)"; pack
