#!/usr/bin/env bash
# Device call 2 (twelfth session): the look-back scan with register-held tiles. Timing first
# (every variant, copy baseline; the old two-pass binary's default beside it), Nsight Compute,
# every variant of examples/scan.kiln end to end, memcheck and racecheck on the split
# variants, torch beside. Logs in $OUT/call2.tgz.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w2; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools /tmp/old
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2" && chmod +x "$2"; }
unxz .carry/kiln.xz build/tools/kiln; unxz .carry/kiln_old.xz /tmp/old/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W --exclude='scan' --exclude='scan_old' --exclude='e2e' --exclude='every/scan' . ; }
K=build/tools/kiln
$K compile examples/scan.kiln -o $W/scan > /dev/null && /tmp/old/kiln compile examples/scan.kiln -o $W/scan_old > /dev/null
{
for s in N=67108864 N=67108863 N=16777216 N=2000001; do
  echo "== cumsum_row $s"; $K run $W/scan cumsum_row --shape $s --variant all --copy-baseline --reps 30 --no-check
  echo "-- old binary, default"; /tmp/old/kiln run $W/scan_old cumsum_row --shape $s --variant default --reps 30 --no-check
done
for s in M=8,N=4194304 M=64,N=1048576 M=2,N=3000017; do
  echo "== cumsum_rows $s"; $K run $W/scan cumsum_rows --shape $s --variant all --reps 30 --no-check
  echo "-- old binary, default"; /tmp/old/kiln run $W/scan_old cumsum_rows --shape $s --variant default --reps 30 --no-check
done
echo "== cumsum_bf16 M=4,N=16777216"; $K run $W/scan cumsum_bf16 --shape M=4,N=16777216 --variant all --reps 30 --no-check
echo "-- old binary, default"; /tmp/old/kiln run $W/scan_old cumsum_bf16 --shape M=4,N=16777216 --variant default --reps 30 --no-check
} > $W/timing.txt 2>&1
grep -E "^==|^--|v6|v1[0-4]|copy baseline" $W/timing.txt | head -80; echo "timing $(el)"; pack
ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats --metrics lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum \
  $K run $W/scan cumsum_row --shape N=67108864 --variant default --reps 1 --no-check > $W/ncu.txt 2>&1
grep -E "Duration|DRAM Through|dram__bytes|Registers|Achieved Occ|Stall|Warp Cycles Per Issued" $W/ncu.txt | head -30; echo "ncu $(el)"; pack
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="scan" KILN_GPU_SHARD=$i/8 timeout 200 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
{
for v in 6 10 11 12 13; do for s in N=300001 N=2000000 N=1 N=67108863; do
  echo "memcheck cumsum_row v$v $s"; compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/scan cumsum_row --shape $s --variant $v --reps 1 2>&1 | tail -2
done; done
for k in "cumsum_rows M=3,N=100003" "cumsum_bf16 M=2,N=1000000" "cumsum_fused M=3,N=100003" "cummax_rows M=2,N=3000017"; do
  set -- $k; echo "memcheck $1 v6 $2"; compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/scan $1 --shape $2 --variant 6 --reps 1 2>&1 | tail -2
done
echo "racecheck v6"; compute-sanitizer --tool racecheck --error-exitcode 9 $K run $W/scan cumsum_row --shape N=2000000 --variant 6 --reps 1 2>&1 | tail -2
echo "synccheck v6"; compute-sanitizer --tool synccheck --error-exitcode 9 $K run $W/scan cumsum_row --shape N=2000000 --variant 6 --reps 1 2>&1 | tail -2
} > $W/san.txt 2>&1; grep -c "ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0" $W/san.txt; grep -B3 "ERROR SUMMARY: [1-9]" $W/san.txt | head; echo "sanitizers $(el)"; pack
BENCH_REPS=30 BENCH_KERNELS="cumsum_row cumsum_rows" BENCH_TORCH="cumsum" timeout 200 bench/everyday.sh $K $W/every > $W/every.txt 2>&1
echo "everyday: exit $? $(el)"; tail -7 $W/every.txt; pack
