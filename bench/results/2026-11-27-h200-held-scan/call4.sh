#!/usr/bin/env bash
# Session 15, device call 4: the committed build (held tiles, records polled phase by phase; its
# PTX for examples/scan.kiln is byte-identical to call 3's "held"): every variant of
# examples/scan.kiln end to end, the sanitizers, the everyday scan cases beside torch.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w4; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call4.tgz -C $W --exclude='b_*' --exclude='e2e' --exclude='every/scan' --exclude='every/cross_entropy' --exclude='every/embedding' --exclude='every/dropout' --exclude='every/rotary' --exclude='every/spatial_mean' --exclude='every/strided' . ; }
K=build/tools/kiln; $K compile examples/scan.kiln -o $W/b_new > /dev/null
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="scan" KILN_GPU_SHARD=$i/8 timeout 150 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
{
for s in N=300001 N=1 N=67108863 N=2000000; do
  echo "memcheck cumsum_row v6 $s"; compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/b_new cumsum_row --shape $s --variant 6 --reps 1 2>&1 | tail -2
done
for k in "cumsum_rows M=3,N=100003" "cumsum_bf16 M=2,N=1000000" "cumsum_fused M=3,N=100003"; do
  set -- $k; echo "memcheck $1 v6 $2"; compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/b_new $1 --shape $2 --variant 6 --reps 1 2>&1 | tail -2
done
echo "racecheck v6"; compute-sanitizer --tool racecheck --error-exitcode 9 $K run $W/b_new cumsum_row --shape N=2000000 --variant 6 --reps 1 2>&1 | tail -2
echo "synccheck v6"; compute-sanitizer --tool synccheck --error-exitcode 9 $K run $W/b_new cumsum_row --shape N=2000000 --variant 6 --reps 1 2>&1 | tail -2
} > $W/san.txt 2>&1; grep -c "ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0" $W/san.txt; grep -c "^memcheck\|^racecheck\|^synccheck" $W/san.txt; grep -B4 "ERROR SUMMARY: [1-9]" $W/san.txt | head; echo "sanitizers $(el)"; pack
BENCH_REPS=30 BENCH_KERNELS="cumsum_row" BENCH_TORCH="cumsum" timeout 150 bench/everyday.sh $K $W/every > $W/every.txt 2>&1
echo "everyday: exit $? $(el)"; tail -6 $W/every.txt; pack
