#!/usr/bin/env bash
# Session 21, device call 2: outer reductions with each chunk's steps of a column summed
# plainly and compensated once per chunk (was: Kahan per step), and the store-only phase of a
# split outer reduction folding its records 4, 8 or 16 at a time. Bundles of four outer
# kernels compiled beforehand for sm_90 (.carry/ocb.tar.xz): old (HEAD's kiln), a4, a8, a16 (the
# new kiln with KILN_EXP_FOLD_AHEAD). Each default checked against the interpreter (a4 and a16 at
# one shape), then timed
# interleaved (200 launches, three rounds); Nsight Compute on both phases (a8); then the new
# kiln (ahead 8) end to end on every variant of the examples with outer reductions, and
# compute-sanitizer on its split variants.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w2; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/ocb.tar.xz -C $W
K=build/tools/kiln
pack() { tar czf $OUT/call2.tgz -C $W --exclude=ocb --exclude='e2e?' . ; }
cases="colsum_bf16:M=1048576,N=64 colsum_bf16:M=4194304,N=16 colsum_bf16:M=524288,N=128 colsum_bf16:M=262144,N=200 colsum_bf16:M=65536,N=2048 colsum_bf16:M=8192,N=8192 colsum_f32:M=1048576,N=32 colsum_f32:M=4096,N=32768 ln_wgrad:M=1048576,N=64 ln_wgrad:M=32768,N=4096 mid_mean:B=64,M=1024,N=512"
for c in $cases; do
  k=${c%%:*} s=${c#*:}
  for b in old a8 $([[ $c == colsum_bf16:M=1048576,N=64 ]] && echo a4 a16); do
    echo "check $b $k $s: $($K run $W/ocb/$b $k --shape $s --variant default --reps 1 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-4), $(NF-3)}')"
  done
done | tee $W/checks.txt
$K run $W/ocb/old colsum_f32 --shape M=256,N=256 --copy-baseline --reps 5 --no-check | tail -1 | tee $W/copy.txt
for round in 1 2 3; do
  for c in $cases; do
    k=${c%%:*} s=${c#*:}
    for b in old a4 a8 a16; do
      echo "$round $b $k $s $($K run $W/ocb/$b $k --shape $s --variant default --reps 200 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-2)}')"
    done
  done
done | tee $W/interleaved.txt
pack
M="gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum"
for c in colsum_bf16:M=1048576,N=64 colsum_bf16:M=4194304,N=16 ln_wgrad:M=1048576,N=64 mid_mean:B=64,M=1024,N=512; do
  k=${c%%:*} s=${c#*:}
  for b in old a8; do
    ncu --metrics $M $K run $W/ocb/$b $k --shape $s --variant default --reps 1 --no-check > $W/ncu_${b}_${k}_${s//[=,]/_}.txt 2>&1
  done
done
pack
ex="colsum gather_suite reduction_suite rowsum_colsum scalars spatial_mean strided weighted_colsum"
for i in 0 1 2 3; do
  KILN_REQUIRE_GPU=1 KILN_GPU_EXAMPLES="$ex" KILN_GPU_SHARD=$i/4 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e$i.txt 2>&1 &
done
wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e$i.txt)"; grep -E "FAIL|SKIP" $W/e2e$i.txt | head -5; done | tee $W/e2e.txt
pack
for tool in memcheck racecheck synccheck; do
  for c in colsum_bf16:M=100003,N=64:23 colsum_bf16:M=4097,N=24:26 colsum_f32:M=100003,N=32:23 ln_wgrad:M=4097,N=64:23 colsum_bf16:M=30001,N=200:22 mid_mean:B=3,M=1001,N=77:17; do
    k=${c%%:*} r=${c#*:} s=${r%:*} v=${r##*:}
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/ocb/a8 $k --shape $s --variant $v --reps 1 > $W/san_${tool}_${k}_${s//[=,]/_}.txt 2>&1
    echo "$tool $k $s v$v exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/san_${tool}_${k}_${s//[=,]/_}.txt | head -1)"
  done
done | tee $W/sanitizer.txt
pack
