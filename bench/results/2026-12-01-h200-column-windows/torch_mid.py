"""Call 4's torch side: torch.compile(mode="max-autotune-no-cudagraphs") of the means over the
middle axis whose innermost extent is odd (bench/torch_common.py: checked against float64, then
timed with the L2 flushed by a read), with the 1 GiB copy."""
import sys

import torch

sys.path.insert(0, "bench")
from torch_common import case, copy_gbps, report  # noqa: E402

cases = []
for B, M, N, dt in [(64, 1024, 513, torch.float32), (16, 4096, 1001, torch.float32),
                    (4, 8192, 1025, torch.float32), (8, 2048, 4097, torch.bfloat16)]:
    x = torch.randn(B, M, N, device="cuda", dtype=dt)
    cases.append(case(f"mid_mean {dt} {B}x{M}x{N}", [x], lambda x: x.float().mean(1),
                      x.element_size() * B * M * N + 4 * B * N))
report(sys.argv[1] if len(sys.argv) > 1 else "/tmp/w4/torch.json", copy_gbps(), cases)
