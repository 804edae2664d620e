#!/usr/bin/env bash
# Session 17, device call 3: the build to commit (pointwise and scan kernels assembled whole
# program, gathers with two vectors in flight, Philox on mul.wide.u32, rand >= p in integers):
# every example with a pointwise or scan step end to end (the others' images are assembled as before), memcheck on the newly assembled kernels, the tiled transposes
# assembled both ways (call 2's experiment binary), and issue 20's pointwise and scan cases
# beside torch.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w3; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2" && chmod +x "$2"; }
unxz .carry/kiln.xz build/tools/kiln; unxz .carry/kiln_exp.xz $W/kiln_exp
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call3.tgz -C $W --exclude='b_*' --exclude='e2e' --exclude='every/*/' --exclude='kiln_exp' --exclude='*.cubin' . ; }
K=build/tools/kiln
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="add bias_gelu causal_mask dropout embedding gather_suite gelu_tanh global_max_norm mixed permute reduction_suite rotary scalars scan strided swiglu transpose" KILN_GPU_SHARD=$i/8 timeout 330 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done
# Meanwhile (CPU): the tiled transposes' bundles, both assemblies.
$W/kiln_exp compile examples/permute.kiln -o $W/b_jl_permute > /dev/null
KILN_EXP_PTXAS=1 $W/kiln_exp compile examples/permute.kiln -o $W/b_px_permute > /dev/null
wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL|Timeout|timed out' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
for ex in dropout rotary scan permute; do $K compile examples/$ex.kiln -o $W/b_$ex > /dev/null; done
{
for k in "dropout dropout_bf16 M=7,N=1001 --scalar p=0.1" "dropout dropout M=3,N=4099 --scalar p=0.5" "rotary rotary T=33,H=3,R=64,P=40" \
    "scan cumsum_cols M=1001,N=37" "scan cumsum_rows M=5,N=100003" "permute heads_keys B=2,S=65,H=3,D=40" "permute transpose_add N=1001,M=999"; do
  set -- $k; echo "memcheck $2 $3"; compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/b_$1 $2 --shape $3 ${4:-} ${5:-} --variant default --reps 1 2>&1 | tail -2
done
} > $W/san.txt 2>&1; grep -c "ERROR SUMMARY: 0 errors" $W/san.txt; grep -B3 "ERROR SUMMARY: [1-9]" $W/san.txt | head; echo "sanitizers $(el)"; pack
for spec in transpose_add:N=8192,M=8192 transpose_bf16:N=8192,M=8192 transpose_cast:N=8192,M=8192 \
    heads_first:B=8,S=2048,H=32,D=128 heads_keys:B=8,S=2048,H=32,D=128 heads_keys_f32:B=8,S=2048,H=32,D=128; do
  IFS=: read -r k s <<< "$spec"
  for r in 1 2; do for a in jl px; do
    echo "$r $a $k $s $($W/kiln_exp run $W/b_${a}_permute $k --shape $s --variant default --reps 30 --no-check 2>&1 | grep -E '^  v[0-9]+' | awk '{print $1, $(NF-2)}')"
  done; done
done | tee $W/tiled.txt; echo "tiled $(el)"; pack
BENCH_REPS=30 BENCH_KERNELS="embedding cumsum_rows dropout_bf16 rotary" BENCH_TORCH="embedding cumsum dropout rotary" timeout 200 bench/everyday.sh $K $W/every > $W/every.txt 2>&1
echo "everyday: exit $? $(el)"; tail -8 $W/every.txt; pack
