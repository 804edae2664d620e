"""Call 5's torch side: torch.compile(mode="max-autotune-no-cudagraphs") of outer2.kiln's
kernels at the shapes of call 5 (bench/torch_common.py: checked against float64, then timed
with the L2 flushed by a read), with the 1 GiB copy."""
import sys

import torch

sys.path.insert(0, "bench")
from torch_common import case, copy_gbps, report  # noqa: E402

cases = []
f32, bf16 = torch.float32, torch.bfloat16
for B, M, N, dt in [(64, 1024, 513, f32), (16, 4096, 1001, f32), (4, 8192, 1025, f32),
                    (32, 2048, 257, f32), (8, 8192, 999, f32), (128, 1024, 129, f32),
                    (12, 3000, 1003, f32), (8, 2048, 4097, bf16), (16, 1024, 1023, bf16),
                    (24, 2048, 1001, bf16), (8, 4096, 2049, bf16), (32, 1536, 511, bf16)]:
    x = torch.randn(B, M, N, device="cuda", dtype=dt)
    cases.append(case(f"mid_mean {dt} {B}x{M}x{N}", [x], lambda x: x.float().mean(1),
                      x.element_size() * B * M * N + 4 * B * N))
for B, M, N in [(64, 1024, 513), (16, 4096, 1001)]:
    x = torch.randn(B, M, N, device="cuda")
    cases.append(case(f"mid_max {B}x{M}x{N}", [x], lambda x: x.amax(1), 4 * B * M * N + 4 * B * N))
for B, C, H, W in [(8, 64, 128, 511), (4, 32, 512, 1001)]:
    x = torch.randn(B, C, H, W, device="cuda")
    cases.append(case(f"sum_bh {B}x{C}x{H}x{W}", [x], lambda x: x.sum((0, 2)),
                      4 * B * C * H * W + 4 * C * W))
report(sys.argv[1] if len(sys.argv) > 1 else "/tmp/w5/torch.json", copy_gbps(), cases)
