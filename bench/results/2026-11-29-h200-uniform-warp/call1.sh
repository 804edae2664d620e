#!/usr/bin/env bash
# Session 31, device call 1: (a) the contraction's warp index broadcast from lane 0 (kiln, this
# build) against main before it (kiln_base, ef6272d; its PTX is main's): every variant of the
# examples with contractions end to end against the interpreter, compute-sanitizer on GEMMs at
# awkward shapes, and the A/B of call 7 of the session before (default variants, 100 launches,
# two rounds); (b) issue 19: where the sum of one f32 row of 2^26 elements spends its time,
# Kiln's two phases and torch.compile's kernels under Nsight Compute, and both timed.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
D=bench/results/2026-11-29-h200-uniform-warp
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_base.xz build/tools/kiln_base && chmod +x build/tools/kiln_base
tar xf .carry/lib.tar -C build
KB=build/tools/kiln_base
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call1 && cp $W/*.txt $OUT/call1/ 2>/dev/null; }
for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  $k compile bench/contraction.kiln -o $W/bc_$b --arch sm_90 -j 8 > /dev/null &
done
$K compile bench/memory_bound.kiln -o $W/mb --arch sm_90 -j 8 > /dev/null &
examples="matmul reduction_suite scalars spatial_mean"
mkdir -p $W/pre; for ex in $examples; do $K compile examples/$ex.kiln -o $W/pre/$ex --arch sm_90 -j 16 > /dev/null || echo "FAIL compile $ex"; done
wait; echo "compiled $(el)"
export KILN_REQUIRE_GPU=1
for i in $(seq 0 15); do
  mkdir -p $W/e2e/$i/bundles; for ex in $examples; do ln -s $W/pre/$ex $W/e2e/$i/bundles/$ex; done
  KILN_GPU_EXAMPLES="$examples" KILN_GPU_SHARD=$i/16 timeout 200 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.log 2>&1 &
done; wait
cat $W/e2e_[0-9]*.log > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -20; echo "e2e $(el)"; pack
unset KILN_REQUIRE_GPU
for c in "gemm M=1000,N=520,K=333" "rmsnorm_linear M=300,N=520,K=200" "bmm B=3,M=129,N=65,K=77"; do
  set -- $c
  for tool in memcheck racecheck synccheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/bc_new $1 --shape $2 --variant default --reps 1 > $W/san_${tool}_$1.log 2>&1
    echo "$tool $c: exit $? $(grep -c ' ok ' $W/san_${tool}_$1.log) ok-lines $(grep -m1 'ERROR SUMMARY' $W/san_${tool}_$1.log)"
  done
done | tee $W/sanitizers.txt; echo "sanitizers $(el)"; pack
# (b)
for r in 1 2; do echo "kiln total_f32 2^26: $($K run $W/mb total_f32 --shape M=1,N=67108864 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')"; done | tee $W/sum_time.txt
TORCHINDUCTOR_CACHE_DIR=/tmp/ti timeout 150 python3 $D/torch_sum.py >> $W/sum_time.txt 2>&1; tail -3 $W/sum_time.txt
sec="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --metrics dram__bytes_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.max"
timeout 90 ncu $sec -k regex:total --launch-count 2 $K run $W/mb total_f32 --shape M=1,N=67108864 --variant default --reps 1 --no-check > $W/ncu_kiln_sum.txt 2>&1
TORCHINDUCTOR_CACHE_DIR=/tmp/ti timeout 200 ncu $sec --profile-from-start off python3 $D/torch_sum.py > $W/ncu_torch_sum.txt 2>&1
TORCHINDUCTOR_CACHE_DIR=/tmp/ti TORCH_LOGS=output_code timeout 100 python3 $D/torch_sum.py > $W/torch_sum_code.txt 2>&1
for f in $W/ncu_kiln_sum.txt $W/ncu_torch_sum.txt; do echo "$f: $(grep -E '^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|Grid Size|Block Size|Registers Per|Achieved Occupancy|dram__bytes_read' $f | tr -s ' ' | tr '\n' ';')"; done | tee $W/ncu_sum.txt
echo "sum $(el)"; pack
cases=("gemm M=8192,N=4096,K=4096" "gemm M=4096,N=4096,K=4096" "gemm M=8192,N=8192,K=8192" "gemm M=2048,N=11008,K=4096"
  "gemm M=3000,N=5000,K=1000" "bmm B=16,M=2048,N=2048,K=512" "linear_bias_gelu M=8192,N=4096,K=4096" "rmsnorm_linear M=8192,N=4096,K=4096")
for r in 1 2; do for c in "${cases[@]}"; do set -- $c; for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  echo "round $r $1 $2 $b $($k run $W/bc_$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/ab.txt
done; done; echo "ab round $r $(el)"; pack; done
