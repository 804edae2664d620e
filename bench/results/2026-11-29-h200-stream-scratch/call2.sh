#!/usr/bin/env bash
# Session 33, device call 2, speed: this session's build (kiln: a stream keeps its launch
# scratch; contraction epilogues use the uniform warp index) against main before it
# (kiln_base, 6114336's runtime and code generator), default variants, 100 launches, L2 flushed,
# two rounds interleaved case by case: kernels with split steps or buffers, beside
# torch.compile's sum of one f32 row in the same run; then GEMMs for the epilogue change.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
D=bench/results/2026-11-29-h200-stream-scratch
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_base.xz build/tools/kiln_base && chmod +x build/tools/kiln_base
KB=build/tools/kiln_base
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call2 && cp $W/*.txt $OUT/call2/ 2>/dev/null; }
for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  $k compile bench/memory_bound.kiln -o $W/mb_$b --arch sm_90 -j 3 > /dev/null &
  $k compile examples/global_max_norm.kiln -o $W/gm_$b --arch sm_90 > /dev/null &
  $k compile bench/contraction.kiln -o $W/bc_$b --arch sm_90 -j 3 > /dev/null &
done
# Call 1 ran the hostile-bundle tests on bundles compiled for sm_90 alone; they need the
# default architectures (a cubin of another major architecture).
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2"; }
unxz .carry/tests.tar.xz /tmp/tests.tar && tar xf /tmp/tests.tar -C build
$K compile examples/add.kiln -o $W/add > /dev/null; $K compile examples/swiglu.kiln -o $W/swiglu > /dev/null
KILN_REQUIRE_GPU=1 build/tests/kiln_gpu_hostile_tests $W/add $W/swiglu > $W/hostile_tests.txt 2>&1
echo "hostile tests (default architectures): exit $? $(grep -E 'passed|failed' $W/hostile_tests.txt | tail -1)" | tee -a $W/gpu.txt
wait; echo "compiled $(el)"
cases=("mb total_f32 M=1,N=1048576" "mb total_f32 M=1,N=4194304" "mb total_f32 M=1,N=16777216"
  "mb total_f32 M=1,N=67108864" "mb total_f32 M=4,N=4194304" "mb rowsum_f32 M=16,N=1000000"
  "mb logsumexp_bf16 M=8,N=262144" "mb softmax_f32 M=4,N=1048576" "mb rmsnorm_bf16 M=2,N=1000000"
  "mb colsum_bf16 M=1048576,N=64" "mb colsum_bf16 M=65536,N=2048" "mb mid_mean B=64,M=512,N=512"
  "mb ln_wgrad M=65536,N=256" "gm global_max_norm M=1000,N=1000" "gm global_max_norm M=8192,N=8192")
for r in 1 2; do for c in "${cases[@]}"; do set -- $c; for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  echo "round $r $2 $3 $b $($k run $W/${1}_$b $2 --shape $3 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/ab.txt
done; done; echo "ab round $r $(el)"
[ $r = 1 ] && TORCHINDUCTOR_CACHE_DIR=/tmp/ti timeout 150 python3 bench/results/2026-11-29-h200-uniform-warp/torch_sum.py 1048576 4194304 16777216 67108864 2>&1 | grep -v '^ *$' | tee -a $W/ab.txt
pack; done
cases=("gemm M=8192,N=4096,K=4096" "gemm M=4096,N=4096,K=4096" "gemm M=2048,N=11008,K=4096"
  "gemm M=3000,N=5000,K=1000" "bmm B=16,M=2048,N=2048,K=512" "linear_bias_gelu M=8192,N=4096,K=4096" "rmsnorm_linear M=8192,N=4096,K=4096")
for r in 1 2; do for c in "${cases[@]}"; do set -- $c; for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  echo "round $r $1 $2 $b $($k run $W/bc_$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/ab_gemm.txt
done; done; echo "gemm round $r $(el)"; pack; done
