"""Call 3's torch side (copied from bench/results/2026-12-01-h200-row-steps, whose call 1 timed them): eager and torch.compile(mode="max-autotune-no-cudagraphs") of rows.kiln's
kernels at the shapes call1.sh times (bench/torch_common.py: checked against float64, then
timed with the L2 flushed by a read), with the 1 GiB copy."""
import sys

import torch

sys.path.insert(0, "bench")
from torch_common import case, copy_gbps, report  # noqa: E402

cases = []
f32, bf16 = torch.float32, torch.bfloat16
for N, C, H, W in [(64, 256, 56, 56), (32, 64, 28, 28), (8, 512, 14, 14), (128, 64, 56, 56),
                   (256, 32, 32, 32), (4, 3, 224, 224), (128, 128, 17, 17), (64, 512, 7, 7)]:
    x = torch.randn(N, C, H, W, device="cuda")
    cases.append(case(f"channel_sums {N}x{C}x{H}x{W}", [x],
                      lambda x: (x.sum((0, 2, 3)), (x * x).sum((0, 2, 3))),
                      4 * x.numel() + 8 * C))
for N, C, H, W in [(64, 256, 56, 56), (32, 128, 28, 28), (128, 64, 56, 56), (64, 128, 17, 17)]:
    x = torch.randn(N, C, H, W, device="cuda", dtype=bf16)

    def var(x):
        xf = x.float()
        m = xf.mean((0, 2, 3))
        return m, ((xf - m[None, :, None, None]) ** 2).mean((0, 2, 3))
    cases.append(case(f"channel_var_bf16 {N}x{C}x{H}x{W}", [x], var, 2 * x.numel() + 8 * C))
for N, C, L in [(64, 256, 3136), (512, 64, 256), (16, 512, 3001)]:
    x = torch.randn(N, C, L, device="cuda", dtype=bf16)
    cases.append(case(f"channel_mean_bf16 {N}x{C}x{L}", [x],
                      lambda x: x.float().mean((0, 2)).to(x.dtype), 2 * x.numel() + 2 * C))
N, C, H, W = 16, 256, 32, 32
x, t = torch.randn(N, C, H, W, device="cuda"), torch.randn(W, C, H, W, device="cuda")
cases.append(case(f"diag_sums {N}x{C}x{H}x{W}", [x, t],
                  lambda x, t: (x * torch.diagonal(t, dim1=0, dim2=3)[None]).sum((0, 2, 3)),
                  4 * x.numel() + 4 * C * H * W + 4 * C))
report(sys.argv[1] if len(sys.argv) > 1 else "/tmp/w1/torch.json", copy_gbps(), cases)
