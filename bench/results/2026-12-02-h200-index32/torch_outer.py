"""Call 1's torch side: eager and torch.compile(mode="max-autotune-no-cudagraphs") of outer.kiln's
kernels at the shapes call1.sh times (bench/torch_common.py: checked against float64, then timed
with the L2 flushed by a read), with the 1 GiB copy."""
import sys

import torch

sys.path.insert(0, "bench")
from torch_common import case, copy_gbps, report  # noqa: E402

f32, bf16 = torch.float32, torch.bfloat16
cases = []


def add(name, shape, dtype, fn, dims_out, inputs=1):
    xs = [torch.randn(*shape, device="cuda", dtype=dtype) for _ in range(inputs)]
    n = xs[0].numel()
    cases.append(case(f"{name} {'x'.join(map(str, shape))}", xs, fn,
                      inputs * n * xs[0].element_size() + 4 * dims_out))


for B, C, H, W in [(8, 64, 128, 511), (4, 32, 512, 1001), (2, 128, 1000, 33), (16, 64, 256, 256)]:
    add("sum_bh", (B, C, H, W), f32, lambda x: x.sum((0, 2)), C * W)
add("max_bh", (8, 64, 128, 511), f32, lambda x: x.amax((0, 2)), 64 * 511)
for B, H, Q, K in [(4, 16, 1024, 1024), (8, 12, 512, 513), (4, 8, 512, 1023)]:
    add("dbias_bf16", (B, H, Q, K), bf16, lambda x: x.float().sum((0, 2)), H * K)
for s in [(4, 16, 8, 16, 32, 64), (3, 5, 7, 9, 11, 129)]:
    add("sum3", s, f32, lambda x: x.sum((0, 2, 4)), s[1] * s[3] * s[5])
add("mean_prod_bh", (8, 64, 128, 511), f32, lambda x, g: (x * g).mean((0, 2)), 64 * 511, 2)
add("colsum_f32", (4096, 32768), f32, lambda x: x.sum(0), 32768)
for M, N in [(65536, 2048), (1 << 20, 64), (1 << 22, 16), (8191, 8193)]:
    add("colsum_bf16", (M, N), bf16, lambda x: x.float().sum(0), N)
for B, M, N in [(64, 1024, 512), (6, 8192, 705)]:
    add("mid_mean", (B, M, N), f32, lambda x: x.mean(1), B * N)
add("mid_mean_bf16", (4, 8192, 1057), bf16, lambda x: x.float().mean(1), 4 * 1057)
for M, N in [(32768, 4096), (1 << 20, 64)]:
    add("ln_wgrad", (M, N), bf16,
        lambda dy, xh: ((dy.float() * xh.float()).sum(0), dy.float().sum(0)), 2 * N, 2)
report(sys.argv[1] if len(sys.argv) > 1 else "/tmp/w1/torch.json", copy_gbps(), cases)
