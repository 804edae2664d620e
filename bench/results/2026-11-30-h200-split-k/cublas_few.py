"""cuBLAS (torch.matmul, bf16) at the shapes given as M,N,K: median of triton's do_bench
(CUDA events, the L2 flushed between runs), us and TFLOP/s."""
import sys

import torch
import triton.testing

for s in sys.argv[1:]:
    m, n, k = map(int, s.split(","))
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    t = triton.testing.do_bench(lambda: torch.matmul(x, w, out=c), warmup=50, rep=300,
                                return_mode="median") * 1e-3
    print(f"cublas {m} x {n} x {k}: {t * 1e6:.2f} us {2 * m * n * k / t / 1e12:.0f} TFLOP/s",
          flush=True)
