"""Call 2's torch side: torch.compile(mode="max-autotune-no-cudagraphs") of the column sums,
weight gradient and transposes whose rule changed, at call 2's shapes (bench/torch_common.py:
checked against float64, then timed with the L2 flushed by a read), with the 1 GiB copy."""
import sys

import torch

sys.path.insert(0, "bench")
from torch_common import case, copy_gbps, report  # noqa: E402

cases = []
for M, N, dt in [(6000, 20001, torch.float32), (4095, 32769, torch.float32),
                 (6000, 20001, torch.bfloat16), (3000, 40001, torch.bfloat16)]:
    x = torch.randn(M, N, device="cuda", dtype=dt)
    b = x.element_size()
    cases.append(case(f"colsum {dt} {M}x{N}", [x], lambda x: x.float().sum(0), b * M * N + 4 * N))
for M, N in [(4001, 20001)]:
    dy = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    xh = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    cases.append(case(f"ln_wgrad {M}x{N}", [dy, xh],
                      lambda dy, xh: ((dy.float() * xh.float()).sum(0), dy.float().sum(0)),
                      4 * M * N + 8 * N))
for M, N in [(8192, 8191), (1000, 3000), (2048, 2048)]:
    x = torch.randn(N, M, device="cuda", dtype=torch.bfloat16)
    cases.append(case(f"transpose bf16 {M}x{N}", [x], lambda x: x.t().contiguous(), 4 * M * N))
for B, S, H, D in [(8, 2047, 32, 127), (2, 1023, 16, 64)]:
    x = torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16)
    cases.append(case(f"heads_keys {B}x{S}x{H}x{D}", [x],
                      lambda x: x.permute(0, 2, 3, 1).contiguous(), 4 * B * S * H * D))
report(sys.argv[1] if len(sys.argv) > 1 else "/tmp/w2/torch.json", copy_gbps(), cases)
