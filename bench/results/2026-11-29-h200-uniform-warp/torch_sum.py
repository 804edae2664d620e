"""torch.compile(mode="max-autotune-no-cudagraphs") of the sum of one f32 row
(bench/memory_bound_cases.py's total_f32_64m at N = 2^26): for each N, its median time
(triton.testing.do_bench, L2 flushed), checked first against a float64 sum; then, between
cudaProfilerStart and Stop, one call at the last N for Nsight Compute
(`ncu --profile-from-start off`). Usage: python3 torch_sum.py [N ...]"""
import sys

import torch
import triton

for n in [int(a) for a in sys.argv[1:]] or [1 << 26]:
    x = torch.randn(1, n, device="cuda")
    torch._dynamo.reset()
    f = torch.compile(lambda x: x.sum(1), mode="max-autotune-no-cudagraphs", dynamic=False)
    y = f(x)
    want = x.double().sum(1)
    err = (y.double() - want).abs().item()
    assert err <= 1e-5 * x.double().abs().sum().item(), err
    t = triton.testing.do_bench(lambda: f(x), warmup=50, rep=300, return_mode="median")
    print(f"torch.compile sum of {n} f32: {t * 1e3:.1f} us, error {err:.3g}", flush=True)
torch.cuda.synchronize()
torch.cuda.profiler.start()
f(x)
torch.cuda.synchronize()
torch.cuda.profiler.stop()
