#!/usr/bin/env bash
# Session 17, device call 1: Philox's products as mul.wide.u32 and rand >= p in integers
# ("new", the working tree) against the previous build ("base"): SASS of the dropout kernel,
# timings of dropout's variants, Nsight Compute on the default, the dropout example end to end,
# dropout beside torch; and the gathers' vectors in flight (unroll 1, 2, 4 at 128 threads).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w1; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2" && chmod +x "$2"; }
unxz .carry/kiln.xz build/tools/kiln; unxz .carry/kiln_base.xz $W/kiln_base
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W --exclude='b_*' --exclude='e2e' --exclude='every/dropout' --exclude='kiln_base' --exclude='*.cubin' . ; }
K=build/tools/kiln B=$W/kiln_base
for ex in dropout embedding rotary gather_suite; do $K compile examples/$ex.kiln -o $W/b_new_$ex > /dev/null; done
$B compile examples/dropout.kiln -o $W/b_base_dropout > /dev/null
# SASS of the default variant's own entry, both builds: the opcode histogram.
for b in new base; do
  cuobjdump -sass -fun dropout_bf16_s0_v10 $W/b_${b}_dropout/dropout_bf16_s0_v10.sm_90.cubin > $W/sass_$b.txt 2>&1
  grep -oE '^\s+/\*[0-9a-f]+\*/\s+(@!?U?P[0-9T] )?[A-Z][A-Z0-9_.]*' $W/sass_$b.txt | awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn > $W/sass_hist_$b.txt
  echo "$b: $(grep -cE '^\s+/\*[0-9a-f]+\*/' $W/sass_$b.txt) instructions"; head -14 $W/sass_hist_$b.txt
done | tee $W/sass_summary.txt
echo "sass $(el)"; pack
# Timings: base and new, every variant (same inputs), twice in turn.
S="M=16384,N=8192"
for r in 1 2; do for k in dropout_bf16 dropout dropout_backward_bf16; do
  $B run $W/b_base_dropout $k --shape $S --scalar p=0.1 --variant all --reps 30 --no-check > $W/time_${k}_base_$r.txt 2>&1
  $K run $W/b_new_dropout $k --shape $S --scalar p=0.1 --variant all --reps 30 --no-check > $W/time_${k}_new_$r.txt 2>&1
done; done
grep -H -E "^  (v10|v11|v13)[* ]" $W/time_dropout*_[12].txt; echo "timing $(el)"; pack
$K run $W/b_new_dropout dropout_bf16 --shape M=1001,N=8193 --scalar p=0.1 --variant default --reps 1 > $W/check_dropout.txt 2>&1; tail -3 $W/check_dropout.txt
# Nsight Compute on the default variant, both builds.
for b in base new; do KB=$K; [[ $b == base ]] && KB=$B
  timeout 120 ncu --clock-control none --kernel-name regex:dropout_bf16 --launch-count 1 --metrics sm__inst_executed.sum,sm__instruction_throughput.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active \
    $KB run $W/b_${b}_dropout dropout_bf16 --shape $S --scalar p=0.1 --variant 10 --reps 1 --no-check > $W/ncu_$b.txt 2>&1
  grep -E "dropout_bf16|sm__|smsp__|dram__|gpu__|launch__" $W/ncu_$b.txt | head -14
done; echo "ncu $(el)"; pack
# Gathers: every variant (v9, v10, v11: 1, 2, 4 vectors in flight at 128 threads; v11 is the
# rule's default for gathers), twice.
for r in 1 2; do
for spec in embedding:embedding:T=131072,V=32000,D=4096 rotary:rotary:T=16384,H=32,R=64,P=16384 \
    rotary:rotary_f32:T=16384,H=32,D=128,P=16384 gather_suite:hash_gather:R=4096,C=4096,K=16777216 \
    embedding:embedding:T=131072,V=32000,D=1024 rotary:rotary:T=4096,H=8,R=64,P=4096; do
  IFS=: read -r ex k s <<< "$spec"
  $K run $W/b_new_$ex $k --shape $s --variant all --reps 30 --no-check > $W/time_g_${k}_${s//[=,]/_}_$r.txt 2>&1
done; done
grep -H -E "^  (v9|v10|v11|v13|v14)[* ]" $W/time_g_*.txt; echo "gather timing $(el)"; pack
# The dropout example end to end (every variant at every shape), then beside torch.
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="dropout" KILN_GPU_SHARD=$i/8 timeout 120 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/b_new_dropout dropout_bf16 --shape M=7,N=1001 --scalar p=0.1 --variant default --reps 1 2>&1 | tail -2 | tee $W/san.txt
BENCH_REPS=30 BENCH_KERNELS="dropout_bf16" BENCH_TORCH="dropout" timeout 150 bench/everyday.sh $K $W/every > $W/every.txt 2>&1
echo "everyday: exit $? $(el)"; tail -6 $W/every.txt; pack
