"""Call 6's torch side: eager and torch.compile(mode="max-autotune-no-cudagraphs") at the shapes
where the rule's few-tiles pick changed (bench/torch_common.py: checked against float64, then
timed with the L2 flushed by a read), with the 1 GiB copy."""
import sys

import torch

sys.path.insert(0, "bench")
from torch_common import case, copy_gbps, report  # noqa: E402

cases = []
f32, bf16 = torch.float32, torch.bfloat16
for B, M, N, dt in [(6, 8192, 705, f32), (4, 4096, 1057, f32), (8, 8192, 999, f32),
                    (32, 2048, 257, f32), (7, 5000, 641, f32), (10, 4096, 555, f32),
                    (4, 8192, 1057, bf16), (6, 4096, 801, bf16)]:
    x = torch.randn(B, M, N, device="cuda", dtype=dt)
    cases.append(case(f"mid_mean {dt} {B}x{M}x{N}", [x], lambda x: x.float().mean(1),
                      x.element_size() * B * M * N + 4 * B * N))
for B, C, H, W in [(2, 128, 1000, 33), (2, 256, 1000, 17), (8, 96, 256, 63), (3, 96, 700, 47)]:
    x = torch.randn(B, C, H, W, device="cuda")
    cases.append(case(f"sum_bh {B}x{C}x{H}x{W}", [x], lambda x: x.sum((0, 2)),
                      4 * x.numel() + 4 * C * W))
x = torch.randn(4, 64, 300, 83, device="cuda")
cases.append(case("max_bh 4x64x300x83", [x], lambda x: x.amax((0, 2)), 4 * x.numel() + 4 * 64 * 83))
x = torch.randn(4, 8, 512, 1023, device="cuda", dtype=bf16)
cases.append(case("dbias_bf16 4x8x512x1023", [x], lambda x: x.float().sum((0, 2)),
                  2 * x.numel() + 4 * 8 * 1023))
for M, N, dt in [(100000, 4223, f32), (50000, 7001, bf16)]:
    x = torch.randn(M, N, device="cuda", dtype=dt)
    cases.append(case(f"colsum {dt} {M}x{N}", [x], lambda x: x.float().sum(0),
                      x.element_size() * M * N + 4 * N))
report(sys.argv[1] if len(sys.argv) > 1 else "/tmp/w6/torch.json", copy_gbps(), cases)
