"""Calls 1 and 3's torch side: eager and torch.compile(mode="max-autotune-no-cudagraphs") of axes.kiln's
kernels at the shapes call1.sh times (bench/torch_common.py: checked against float64, then
timed with the L2 flushed by a read), with the 1 GiB copy."""
import sys

import torch

sys.path.insert(0, "bench")
from torch_common import case, copy_gbps, report  # noqa: E402

cases = []
f32, bf16 = torch.float32, torch.bfloat16
for B, C, H, W in [(8, 64, 128, 511), (4, 32, 512, 1001), (16, 64, 256, 256), (32, 3, 224, 224),
                   (64, 256, 7, 7), (2, 128, 1000, 33), (16, 32, 64, 1023), (4, 16, 1024, 255)]:
    x = torch.randn(B, C, H, W, device="cuda")
    cases.append(case(f"sum_bh {B}x{C}x{H}x{W}", [x], lambda x: x.sum((0, 2)),
                      4 * B * C * H * W + 4 * C * W))
for B, C, H, W in [(8, 64, 128, 511), (32, 16, 256, 129)]:
    x = torch.randn(B, C, H, W, device="cuda")
    cases.append(case(f"max_bh {B}x{C}x{H}x{W}", [x], lambda x: x.amax((0, 2)),
                      4 * x.numel() + 4 * C * W))
for B, H, Q, K in [(4, 16, 1024, 1024), (8, 12, 512, 513), (2, 32, 2048, 128), (4, 8, 512, 1023)]:
    x = torch.randn(B, H, Q, K, device="cuda", dtype=bf16)
    cases.append(case(f"dbias_bf16 {B}x{H}x{Q}x{K}", [x], lambda x: x.float().sum((0, 2)),
                      2 * x.numel() + 4 * H * K))
for A, P, B, Q, C, R in [(4, 16, 8, 16, 32, 64), (3, 5, 7, 9, 11, 129)]:
    x = torch.randn(A, P, B, Q, C, R, device="cuda")
    cases.append(case(f"sum3 {A}x{P}x{B}x{Q}x{C}x{R}", [x], lambda x: x.sum((0, 2, 4)),
                      4 * x.numel() + 4 * P * Q * R))
x, g = torch.randn(8, 64, 128, 511, device="cuda"), torch.randn(8, 64, 128, 511, device="cuda")
cases.append(case("mean_prod_bh 8x64x128x511", [x, g], lambda x, g: (x * g).mean((0, 2)),
                  8 * x.numel() + 4 * 64 * 511))
report(sys.argv[1] if len(sys.argv) > 1 else "/tmp/w1/torch.json", copy_gbps(), cases)
