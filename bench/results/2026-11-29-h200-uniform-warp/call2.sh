#!/usr/bin/env bash
# Session 31, device call 2: a split row reduction's last phase, when it only stores, is the
# row leader's alone (the row's other blocks leave at once), with the uniform warp index of
# call 1 (kiln) against main before both (kiln_base): (a) every variant of the examples with
# split reductions end to end, the runtime's GPU tests (graph capture of split kernels) and
# sanitizers on split defaults at awkward shapes; (b) the A/B, default variants, 100 launches,
# two rounds, with torch.compile's sum of 2^26 f32 in the same run; (c) Nsight Compute on the
# new build's two phases of that sum.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
D=bench/results/2026-11-29-h200-uniform-warp
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_base.xz build/tools/kiln_base && chmod +x build/tools/kiln_base
tar xf .carry/lib.tar -C build; tar xf .carry/tests.tar -C build
KB=build/tools/kiln_base
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call2 && cp $W/*.txt $OUT/call2/ 2>/dev/null; }
for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  $k compile bench/memory_bound.kiln -o $W/mb_$b --arch sm_90 -j 8 > /dev/null &
  $k compile examples/global_max_norm.kiln -o $W/gm_$b --arch sm_90 > /dev/null &
done
examples="global_max_norm rowsum_colsum rowsum softmax layernorm rmsnorm add_rmsnorm spatial_mean mean_var logsumexp cross_entropy reduction_suite"
mkdir -p $W/pre; for ex in $examples; do $K compile examples/$ex.kiln -o $W/pre/$ex --arch sm_90 -j 16 > /dev/null || echo "FAIL compile $ex"; done
wait; echo "compiled $(el)"
export KILN_REQUIRE_GPU=1
for i in $(seq 0 15); do
  mkdir -p $W/e2e/$i/bundles; for ex in $examples; do ln -s $W/pre/$ex $W/e2e/$i/bundles/$ex; done
  KILN_GPU_EXAMPLES="$examples" KILN_GPU_SHARD=$i/16 timeout 220 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.log 2>&1 &
done; wait
cat $W/e2e_[0-9]*.log > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -20; echo "e2e $(el)"; pack
$K compile examples/add.kiln -o $W/pre/add --arch sm_90 > /dev/null
build/tests/kiln_gpu_runtime_tests $W/pre/add $W/pre/rowsum $W/pre/global_max_norm > $W/runtime_tests.txt 2>&1
echo "runtime tests: exit $? $(grep -E 'passed|failed' $W/runtime_tests.txt | tail -1)" | tee -a $W/gpu.txt
unset KILN_REQUIRE_GPU
for c in "total_f32 M=1,N=3000001" "total_f32 M=5,N=1000000" "logsumexp_bf16 M=3,N=200001"; do
  set -- $c
  for tool in memcheck racecheck synccheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/mb_new $1 --shape $2 --variant default --reps 1 > $W/san.log 2>&1
    echo "$tool $c: exit $? $(grep -c ' ok ' $W/san.log) ok-lines $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' $W/san.log)"
  done
done | tee $W/sanitizers.txt; echo "sanitizers $(el)"; pack
cases=("mb total_f32 M=1,N=67108864" "mb total_f32 M=1,N=67108863" "mb total_f32 M=1,N=1048576" "mb total_f32 M=4,N=4194304"
  "mb logsumexp_bf16 M=8,N=262144" "gm global_max_norm M=1000,N=1000" "gm global_max_norm M=8192,N=8192"
  "mb rmsnorm_bf16 M=2,N=1000000" "mb softmax_f32 M=4,N=1048576" "mb rowsum_f32 M=32768,N=4096")
for r in 1 2; do for c in "${cases[@]}"; do set -- $c; for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  echo "round $r $2 $3 $b $($k run $W/${1}_$b $2 --shape $3 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/ab.txt
done; done; echo "ab round $r $(el)"
[ $r = 1 ] && TORCHINDUCTOR_CACHE_DIR=/tmp/ti timeout 150 python3 $D/torch_sum.py 2>&1 | tee -a $W/ab.txt
pack; done
sec="--section SpeedOfLight --section LaunchStats --section Occupancy --metrics dram__bytes_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.max"
for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  timeout 60 ncu $sec -k regex:total --launch-count 2 $k run $W/mb_$b total_f32 --shape M=1,N=67108864 --variant default --reps 1 --no-check > $W/ncu_${b}_sum.txt 2>&1
  echo "$b: $(grep -E '^  [a-z_0-9]+.*\(|Duration|DRAM Throughput' $W/ncu_${b}_sum.txt | tr -s ' ' | tr '\n' ';')"
done | tee $W/ncu_sum.txt; echo "ncu $(el)"; pack
