#!/usr/bin/env bash
# Session 16, device call 3: base (66a7266) against new (each flat pointwise variant has its own
# entry, 32-bit and row-aligned, and a general entry for every other launch) on the pointwise
# cases, every variant, same call; the everyday and memory-bound pointwise cases beside torch.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/s16c3; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
un() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" $1 $2 && chmod +x $2; }
mkdir -p build/tools; un .carry/kiln_new.xz build/tools/kiln; un .carry/kiln_base.xz $W/kiln_base
K=build/tools/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call3.tgz -C $W --exclude='b_*' --exclude='kiln_base' --exclude='e2e' --exclude='every/*/' --exclude='mb/bundle' . ; }
for ex in causal_mask embedding rotary dropout; do
  $K compile examples/$ex.kiln -o $W/b_new_$ex > /dev/null & $W/kiln_base compile examples/$ex.kiln -o $W/b_base_$ex > /dev/null &
done; wait
run2() {  # tag bundle kernel shape [extra]: base and new, every variant, same inputs
  local tag=$1 ex=$2 k=$3 s=$4; shift 4
  $W/kiln_base run $W/b_base_$ex $k --shape $s "$@" --variant all --reps 30 --no-check > $W/time_${tag}_base.txt 2>&1
  $K run $W/b_new_$ex $k --shape $s "$@" --variant all --reps 30 --no-check > $W/time_${tag}_new.txt 2>&1
  echo "$tag $(el)"
}
run2 embedding embedding embedding T=131072,V=32000,D=4096
run2 embedding_odd embedding embedding T=131072,V=32000,D=4095
run2 rotary rotary rotary T=16384,H=32,R=64,P=16384
run2 dropout dropout dropout_bf16 M=16384,N=8192 --scalar p=0.1
run2 causal causal_mask causal_mask T=16384
pack
BENCH_REPS=30 BENCH_KERNELS="embedding rotary dropout_bf16" BENCH_TORCH="embedding rotary dropout" timeout 200 bench/everyday.sh $K $W/every > $W/every.txt 2>&1
echo "everyday: exit $? $(el)"; tail -8 $W/every.txt; pack
BENCH_REPS=30 timeout 250 bench/memory_bound.sh $K $W/mb add_f32 bias_gelu silu_mul scale_cast add_pos heads_first > $W/mb.txt 2>&1
echo "memory_bound: exit $? $(el)"; tail -12 $W/mb.txt; pack
