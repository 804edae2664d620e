"""Call 2's torch side (copied from ../2026-12-02-h200-chunk-sums, whose call 3 ran it): eager and torch.compile(mode="max-autotune-no-cudagraphs") of rows.kiln's
kernels at the shapes whose trailing run is not a multiple of the vector (bench/torch_common.py:
checked against float64, then timed with the L2 flushed by a read), with the 1 GiB copy."""
import sys

import torch

sys.path.insert(0, "bench")
from torch_common import case, copy_gbps, report  # noqa: E402

cases = []
bf16 = torch.bfloat16
for N, C, H, W in [(64, 512, 7, 7), (32, 1024, 7, 7), (128, 128, 17, 17), (16, 64, 35, 35)]:
    x = torch.randn(N, C, H, W, device="cuda")
    cases.append(case(f"channel_sums {N}x{C}x{H}x{W}", [x],
                      lambda x: (x.sum((0, 2, 3)), (x * x).sum((0, 2, 3))),
                      4 * x.numel() + 8 * C))
for N, C, L in [(32, 768, 49), (8, 256, 1001)]:
    x = torch.randn(N, C, L, device="cuda", dtype=bf16)
    cases.append(case(f"channel_mean_bf16 {N}x{C}x{L}", [x],
                      lambda x: x.float().mean((0, 2)).to(x.dtype), 2 * x.numel() + 2 * C))
x = torch.randn(64, 512, 7, 7, device="cuda", dtype=bf16)


def var(x):
    xf = x.float()
    m = xf.mean((0, 2, 3))
    return m, ((xf - m[None, :, None, None]) ** 2).mean((0, 2, 3))


cases.append(case("channel_var_bf16 64x512x7x7", [x], var, 2 * x.numel() + 8 * 512))
report(sys.argv[1] if len(sys.argv) > 1 else "/tmp/w4/torch.json", copy_gbps(), cases)
