#!/usr/bin/env bash
# Session 17, device call 2: one binary (the working tree of call 1 with an experiment switch,
# KILN_EXP_PTXAS=1, not committed) assembling every kernel two ways: nvJitLink (separate
# compilation, what bundles had) against the toolkit's ptxas, whole program. Every variant timed
# on the everyday pointwise cases, a subset of the memory-bound suite and the scans and
# cross-entropy, same call.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w2; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_exp.xz build/tools/kiln && chmod +x build/tools/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W --exclude='b_*' --exclude='mb_*/bundle' --exclude='*.cubin' . ; }
K=build/tools/kiln
for ex in dropout embedding rotary gather_suite causal_mask scan cross_entropy; do
  $K compile examples/$ex.kiln -o $W/b_jl_$ex > /dev/null &
  KILN_EXP_PTXAS=1 $K compile examples/$ex.kiln -o $W/b_px_$ex > /dev/null &
done
$K compile bench/memory_bound.kiln -o $W/b_jl_mb > /dev/null &
KILN_EXP_PTXAS=1 $K compile bench/memory_bound.kiln -o $W/b_px_mb > /dev/null &
wait; echo "compiled $(el)"
for spec in dropout:dropout_bf16:M=16384,N=8192:--scalar=p=0.1 dropout:dropout:M=16384,N=8192:--scalar=p=0.1 \
    embedding:embedding:T=131072,V=32000,D=4096 embedding:embedding:T=131072,V=32000,D=1024 \
    rotary:rotary:T=16384,H=32,R=64,P=16384 rotary:rotary_f32:T=16384,H=32,D=128,P=16384 \
    gather_suite:hash_gather:R=4096,C=4096,K=16777216 causal_mask:causal_mask:T=16384 \
    scan:cumsum_rows:M=4096,N=32768 scan:cumsum_row:N=67108864 cross_entropy:cross_entropy:M=32768,V=32768; do
  IFS=: read -r ex k s extra <<< "$spec"
  for a in jl px; do
    timeout 60 $K run $W/b_${a}_$ex $k --shape $s ${extra:+${extra/=/ }} --variant all --reps 30 --no-check > $W/time_${a}_${k}_${s//[=,]/_}.txt 2>&1
  done
  echo "$k $s $(el)"
done; pack
for f in $W/time_jl_*.txt; do g=${f/time_jl_/time_px_}
  best() { grep -E '^  v[0-9]+' $1 | awk '{print $(NF-2), $1}' | sort -n | head -1; }
  echo "$(basename $f .txt | sed s/time_jl_//): jl $(grep -E '^  v[0-9]+\*' $f | awk '{print $1, $(NF-2)}') best $(best $f) | px $(grep -E '^  v[0-9]+\*' $g | awk '{print $1, $(NF-2)}') best $(best $g)"
done | tee $W/summary_pointwise.txt; echo "pointwise $(el)"; pack
for a in jl px; do
  BENCH_TORCH=0 BENCH_REPS=20 BENCH_BUNDLE=$W/b_${a}_mb timeout 200 bench/memory_bound.sh $K $W/mb_$a \
    bias_gelu add_f32 transpose_f32 heads_keys softmax_bf16_8k softmax_f32_odd layernorm_bf16 rmsnorm_bf16 total_f32 colsum_bf16_2k ln_wgrad mid_mean > $W/mb_$a.txt 2>&1
  echo "memory-bound $a: exit $? $(el)"; pack
done
paste <(grep -E '^\|' $W/mb_jl/summary.md | cut -d'|' -f2-6) <(grep -E '^\|' $W/mb_px/summary.md | cut -d'|' -f3-6) | tee $W/summary_mb.txt
pack
