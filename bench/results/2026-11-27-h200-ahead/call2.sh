#!/usr/bin/env bash
# Session 18, device call 2, the build with heavy pointwise tiers and scans a step ahead:
# (a) two vectors in flight against four (v10, v11) and the rule's pick, for the heavy steps
# at 4M to 128M elements; (b) Nsight Compute's executed instructions per element against the
# plan's estimate; (c) end to end every variant of the changed examples; (d) issue 20's
# dropout and cumsum beside torch; (e) bias + erf-GELU of the memory-bound suite beside torch.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w2; mkdir -p $W/cross $W/ncu
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2" && chmod +x "$2"; }
mkdir -p build/tools; unxz .carry/kiln.xz build/tools/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call2.tgz gpu.txt cross ncu *.txt $(ls -d every/*.txt every/*.md mb/*.txt mb/*.md 2>/dev/null)); }
K=build/tools/kiln
$K compile bench/memory_bound.kiln -o $W/b_mb > /dev/null &
for ex in dropout bias_gelu gelu_tanh swiglu; do $K compile examples/$ex.kiln -o $W/pre/$ex > /dev/null & done
wait; echo "compiled $(el)"
# (a)
for kb in dropout_bf16:pre/dropout bias_gelu_erf:b_mb dropout_backward_bf16:pre/dropout; do
  IFS=: read -r kern bundle <<< "$kb"
  for MN in 2048,2048 4096,2048 4096,4096 8192,4096 8192,8192 16384,8192; do
    IFS=, read -r M N <<< "$MN"
    extra=(); [[ $kern == dropout* ]] && extra=(--scalar p=0.1)
    for v in 10 11 default 10 11; do
      $K run $W/$bundle $kern --shape M=$M,N=$N "${extra[@]}" --variant $v --reps 30 --no-check
    done 2>&1 | grep -E '^ *v[0-9]+' | awk -v k=$kern -v s=$M,$N '{print k, s, $1, $(NF-2)}' | tee -a $W/cross/cross.txt
  done
done
echo "crossover $(el)"; pack
# (b)
for spec in b_mb:bias_gelu_erf b_mb:bias_gelu_tanh b_mb:silu_mul b_mb:add_f32 b_mb:scale_cast \
    pre/dropout:dropout_bf16 pre/dropout:dropout pre/dropout:dropout_mask pre/gelu_tanh:tanh_f32; do
  IFS=: read -r bundle kern <<< "$spec"
  shape=M=4096,N=4096; [[ $kern == tanh_f32 ]] && shape=N=16777216
  extra=(); [[ $kern == dropout* ]] && extra=(--scalar p=0.1)
  timeout 60 ncu --metrics sm__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed -c 1 \
    $K run $W/$bundle $kern --shape $shape "${extra[@]}" --variant 10 --reps 1 --no-check > $W/ncu/$kern.txt 2>&1
  echo "$kern $(grep -E 'sm__inst_executed.sum' $W/ncu/$kern.txt | awk '{print $NF}')"
done | tee $W/ncu_summary.txt
echo "ncu $(el)"; pack
# (c)
export KILN_REQUIRE_GPU=1
EX="dropout bias_gelu gelu_tanh swiglu"
for i in 0 1 2 3 4 5 6 7; do
  mkdir -p $W/e2e/$i/bundles; cp -r $W/pre/* $W/e2e/$i/bundles/
  KILN_GPU_EXAMPLES="$EX" KILN_GPU_SHARD=$i/8 timeout 150 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt; rm -f $W/e2e_[0-7].txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
unset KILN_REQUIRE_GPU
# (d)
BENCH_REPS=30 BENCH_KERNELS="cumsum_rows dropout_bf16" BENCH_TORCH="cumsum dropout" timeout 200 bench/everyday.sh $K $W/every > $W/every.txt 2>&1
echo "everyday: exit $? $(el)"; tail -8 $W/every.txt; pack
# (e)
BENCH_BUNDLE=$W/b_mb BENCH_REPS=30 timeout 150 bench/memory_bound.sh $K $W/mb bias_gelu_erf > $W/mb.txt 2>&1
echo "memory-bound: exit $? $(el)"; tail -5 $W/mb.txt; pack
