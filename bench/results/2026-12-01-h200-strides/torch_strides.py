"""Call 1's torch side: torch.compile(mode="max-autotune-no-cudagraphs") of the mean over a
middle axis and the rotation at the shapes Kiln runs (bench/torch_common.py: checked, then
timed by do_bench), with the 1 GiB copy's bandwidth."""
import sys

import torch

sys.path.insert(0, "bench")
from torch_common import case, copy_gbps, report  # noqa: E402

cases = []
for B, M, N in [(64, 1024, 512), (64, 1025, 512), (64, 1000, 512), (63, 1024, 512),
                (16, 4096, 512), (8, 1024, 4096)]:
    x = torch.randn(B, M, N, device="cuda")
    cases.append(case(f"mid_mean {B}x{M}x{N}", [x], lambda x: x.mean(1), 4 * (B * M * N + B * N)))
for A, Bb, C in [(256, 512, 64), (255, 512, 64), (250, 500, 64), (128, 1024, 64)]:
    x = torch.randn(A, Bb, C, device="cuda")
    cases.append(case(f"rotate3 {A}x{Bb}x{C}", [x], lambda x: x.permute(2, 0, 1).contiguous(),
                      8 * A * Bb * C))
report("/tmp/w1/torch.json", copy_gbps(), cases)
