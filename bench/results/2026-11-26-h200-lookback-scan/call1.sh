#!/usr/bin/env bash
# Device call 1 (twelfth session): the single-pass look-back scan. Correctness first (every
# variant of examples/scan.kiln end to end, memcheck on the split variants), then cumsum of one
# 64M row and other split shapes, every variant timed with the copy baseline; the old two-pass
# binary's default beside it; Nsight Compute on the look-back kernel; torch beside.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p build/tools /tmp/old
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2" && chmod +x "$2"; }
unxz .carry/kiln.xz build/tools/kiln; unxz .carry/kiln_old.xz /tmp/old/kiln
W=/tmp/w; mkdir -p $W; t0=$(date +%s)
el() { echo "($(( $(date +%s) - t0 )) s)"; }
K=build/tools/kiln
$K compile examples/scan.kiln -o $W/scan > /dev/null && /tmp/old/kiln compile examples/scan.kiln -o $W/scan_old > /dev/null
echo "compiled $(el)"
# Timing first, alone on the GPU.
{
for s in N=67108864 N=67108863 N=16777216 N=2000001; do
  echo "== cumsum_row $s"; $K run $W/scan cumsum_row --shape $s --variant all --copy-baseline --reps 30 --no-check
  echo "-- old binary, default"; /tmp/old/kiln run $W/scan_old cumsum_row --shape $s --variant default --reps 30 --no-check
done
for s in M=8,N=4194304 M=64,N=1048576 M=2,N=3000017; do
  echo "== cumsum_rows $s"; $K run $W/scan cumsum_rows --shape $s --variant all --reps 30 --no-check
  echo "-- old binary, default"; /tmp/old/kiln run $W/scan_old cumsum_rows --shape $s --variant default --reps 30 --no-check
done
} > $W/timing.txt 2>&1
cp $W/timing.txt $OUT/; echo "timing $(el)"
ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --metrics lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum \
  $K run $W/scan cumsum_row --shape N=67108864 --variant default --reps 1 --no-check > $W/ncu.txt 2>&1
cp $W/ncu.txt $OUT/; echo "ncu $(el)"
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="scan" KILN_GPU_SHARD=$i/8 timeout 200 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt; cp $W/e2e.txt $OUT/
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $OUT/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"
{
for v in 6 10 11 12; do for s in N=300001 N=2000000 N=1; do
  compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/scan cumsum_row --shape $s --variant $v --reps 1 2>&1 | tail -2
done; done
compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/scan cumsum_rows --shape M=3,N=100003 --variant 6 --reps 1 2>&1 | tail -2
compute-sanitizer --tool racecheck --error-exitcode 9 $K run $W/scan cumsum_row --shape N=2000000 --variant 6 --reps 1 2>&1 | tail -2
} > $W/san.txt 2>&1; cp $W/san.txt $OUT/; grep -c "ERROR SUMMARY: 0" $W/san.txt; echo "sanitizers $(el)"
BENCH_REPS=30 BENCH_KERNELS="cumsum_row cumsum_rows" BENCH_TORCH="cumsum" timeout 240 bench/everyday.sh $K $W/every > $W/every.txt 2>&1
echo "everyday: exit $? $(el)"; cp -r $W/every/*.txt $W/every/*.json $W/every/summary.md $OUT/ 2>/dev/null; tail -8 $W/every.txt
