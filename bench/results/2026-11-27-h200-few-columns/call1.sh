#!/usr/bin/env bash
# Session 21, device call 1: where the time of the memory-bound cases still slower than
# torch.compile goes. Nsight Compute on each of Kiln's kernels (both phases of the split outer
# reductions), torch.compile's kernels of the same cases by the profiler (with Inductor's
# generated code), and the odd-length f32 layernorm's memory and stall sections.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w1; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/mb.tar.xz -C $W
K=build/tools/kiln
pack() { tar czf $OUT/call1.tgz -C $W --exclude=mb . ; }
cases="colsum_bf16:M=1048576,N=64 colsum_bf16:M=4194304,N=16 ln_wgrad:M=1048576,N=64 colsum_f32:M=1048576,N=32 mid_mean:B=64,M=1024,N=512 total_f32:M=1,N=67108864 layernorm_f32:M=16383,N=1023"
M="gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum"
for c in $cases; do
  k=${c%%:*} s=${c#*:}
  { echo "== $k $s"; $K run $W/mb $k --shape $s --variant default --reps 1 2>&1 | grep -E '^ *v[0-9]+'
    $K run $W/mb $k --shape $s --variant default --reps 200 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+|copy'; } | tee -a $W/times.txt
  ncu --metrics $M $K run $W/mb $k --shape $s --variant default --reps 1 --no-check > $W/ncu_${k}_${s//[=,]/_}.txt 2>&1
done
pack
ncu --set full -k regex:layernorm $K run $W/mb layernorm_f32 --shape M=16383,N=1023 --variant default --reps 1 --no-check > $W/ncu_full_layernorm_odd.txt 2>&1
ncu --set full -k regex:layernorm $K run $W/mb layernorm_f32 --shape M=16384,N=1024 --variant default --reps 1 --no-check > $W/ncu_full_layernorm_even.txt 2>&1
pack
for id in colsum_bf16_64 mid_mean_3d total_f32_64m layernorm_f32_odd; do
  TORCH_LOGS=output_code timeout 240 python3 bench/results/2026-11-27-h200-few-columns/torch_profile.py $id > $W/torch_$id.txt 2> $W/torch_code_$id.txt
  grep -E "^$id" $W/torch_$id.txt
  pack
done
