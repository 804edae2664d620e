#!/usr/bin/env bash
# Session 27, device call 1: what the cooperative GEMM's register epilogue costs. An experiment
# build of kiln (not committed) reads KILN_HACK_EPI when it compiles: "skip" never stores the
# interior tiles' 16-byte vectors (an upper bound on what overlapping the epilogue could
# gain), "smem" writes them to a padded shared-memory buffer instead of global memory (the
# cost of the first half of an epilogue through the bulk-copy engine), "none" is main.
# Timings with --no-check (the hacked results are wrong by construction). Then cuBLAS at the
# same shapes and the names of its kernels.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
for m in none skip smem; do KILN_HACK_EPI=$m $K compile bench/contraction.kiln -o $W/b_$m --arch sm_90 -j 8 > $W/compile_$m.txt 2>&1 & done; wait
for round in 1 2; do
  for ks in "gemm M=8192,N=4096,K=512" "gemm M=8192,N=4096,K=4096" "gemm M=4096,N=4096,K=4096" "bmm B=16,M=2048,N=2048,K=512"; do
    set -- $ks
    for m in none skip smem; do
      t=$($K run $W/b_$m $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $(NF-2)}')
      echo "round $round $1 $2 $m $t"
    done
  done
done | tee $W/hack_times.txt
python3 - <<'PY' 2>&1 | tee $W/cublas.txt
import torch, triton.testing
from torch.profiler import profile, ProfilerActivity
bf = torch.bfloat16
for shape in [(8192,4096,512),(8192,4096,4096),(4096,4096,4096),(16,2048,2048,512)]:
    if len(shape) == 3:
        m,n,k = shape; a = torch.randn(m,k,device='cuda',dtype=bf); b = torch.randn(k,n,device='cuda',dtype=bf); c = torch.empty(m,n,device='cuda',dtype=bf)
        fn = lambda: torch.matmul(a,b,out=c)
    else:
        bb,m,n,k = shape; a = torch.randn(bb,m,k,device='cuda',dtype=bf); b = torch.randn(bb,k,n,device='cuda',dtype=bf); c = torch.empty(bb,m,n,device='cuda',dtype=bf)
        fn = lambda: torch.bmm(a,b,out=c)
    t = triton.testing.do_bench(fn, warmup=50, rep=300, return_mode='median')*1e3
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn(); torch.cuda.synchronize()
    names = sorted({e.name for e in p.events() if e.device_type.name == 'CUDA'})
    print(shape, f'{t:.1f} us', names)
PY
