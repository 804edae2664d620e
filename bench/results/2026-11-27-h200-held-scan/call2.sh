#!/usr/bin/env bash
# Session 15, device call 2: held tiles with every look-back record polled in one round (new)
# against the previous session's binary (old): split variants timed, every variant of
# examples/scan.kiln end to end, sanitizers, torch beside on the everyday scan cases.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w2; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" $1 $2 && chmod +x $2; }
unxz .carry/kiln.xz build/tools/kiln; unxz .carry/kiln_old.xz /tmp/kiln_old
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W --exclude='b_*' --exclude='e2e' --exclude='every/scan' --exclude='every/cross_entropy' --exclude='every/embedding' --exclude='every/dropout' --exclude='every/rotary' --exclude='every/spatial_mean' --exclude='every/strided' . ; }
K=build/tools/kiln
$K compile examples/scan.kiln -o $W/b_new > /dev/null
/tmp/kiln_old compile examples/scan.kiln -o $W/b_old > /dev/null
run() { # bundle-binary kernel shape
  local b=$1 k=$2 s=$3 BIN=$K; [ $b = old ] && BIN=/tmp/kiln_old
  for v in 6 11 10; do $BIN run $W/b_$b $k --shape $s --variant $v --reps 30 --no-check | grep -E "^  v"; done
}
{
for s in N=67108864 N=16777216 N=67108863 N=2000001; do
  for b in old new old new; do echo "== $b cumsum_row $s"; run $b cumsum_row $s; done
done
for s in M=8,N=4194304 M=64,N=1048576 M=2,N=3000017; do
  for b in old new; do echo "== $b cumsum_rows $s"; run $b cumsum_rows $s; done
done
for b in old new; do echo "== $b cumsum_bf16 M=4,N=16777216"; run $b cumsum_bf16 M=4,N=16777216; done
$K run $W/b_new cumsum_row --shape N=67108864 --variant 6 --copy-baseline --reps 30 --no-check | grep copy
} > $W/timing.txt 2>&1
grep -E "^==|^  v6" $W/timing.txt | paste - - | awk '{print $2,$3,$4,$(NF-3)}'; tail -1 $W/timing.txt; echo "timing $(el)"; pack
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="scan" KILN_GPU_SHARD=$i/8 timeout 150 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
{
for v in 6 12; do for s in N=300001 N=1 N=67108863 N=2000000; do
  echo "memcheck cumsum_row v$v $s"; compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/b_new cumsum_row --shape $s --variant $v --reps 1 2>&1 | tail -2
done; done
for k in "cumsum_rows M=3,N=100003" "cumsum_bf16 M=2,N=1000000" "cumsum_fused M=3,N=100003" "cummax_rows M=2,N=3000017"; do
  set -- $k; echo "memcheck $1 v6 $2"; compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/b_new $1 --shape $2 --variant 6 --reps 1 2>&1 | tail -2
done
echo "racecheck v6"; compute-sanitizer --tool racecheck --error-exitcode 9 $K run $W/b_new cumsum_row --shape N=2000000 --variant 6 --reps 1 2>&1 | tail -2
echo "synccheck v6"; compute-sanitizer --tool synccheck --error-exitcode 9 $K run $W/b_new cumsum_row --shape N=2000000 --variant 6 --reps 1 2>&1 | tail -2
} > $W/san.txt 2>&1; grep -c "ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0" $W/san.txt; grep -c "^memcheck\|^racecheck\|^synccheck" $W/san.txt; grep -B4 "ERROR SUMMARY: [1-9]" $W/san.txt | head; echo "sanitizers $(el)"; pack
BENCH_REPS=30 BENCH_KERNELS="cumsum_row cumsum_rows" BENCH_TORCH="cumsum" timeout 200 bench/everyday.sh $K $W/every > $W/every.txt 2>&1
echo "everyday: exit $? $(el)"; tail -7 $W/every.txt; pack
