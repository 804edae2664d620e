"""The same pointwise kernels in PyTorch (eager and torch.compile), timed on the same GPU in
the same run as Kiln, with the device-to-device copy bandwidth they are judged against
(bench/torch_common.py says how).

    python3 bench/torch_pointwise.py OUT.json"""
import sys

import torch

from torch_common import case, copy_gbps, report


def main():
    dev, bf16 = "cuda", torch.bfloat16
    torch.manual_seed(0)
    copy = copy_gbps()
    n = 64 * 1024 * 1024
    cases = [
        case("add f32 64M", (torch.rand(n, device=dev) - 0.5, torch.rand(n, device=dev) - 0.5),
             lambda x, y: x + y, 3 * n * 4),
        case("bias_gelu bf16 8192x8192",
             (torch.randn(8192, 8192, device=dev, dtype=bf16),
              torch.randn(8192, device=dev, dtype=bf16)),
             lambda x, b: torch.nn.functional.gelu(x + b), 2 * 8192 * 8192 * 2 + 8192 * 2),
        case("swiglu bf16 8192x8192",
             (torch.randn(8192, 8192, device=dev, dtype=bf16),
              torch.randn(8192, 8192, device=dev, dtype=bf16)),
             lambda a, b: torch.nn.functional.silu(a) * b, 3 * 8192 * 8192 * 2),
    ]
    report(sys.argv[1], copy, cases)


if __name__ == "__main__":
    main()
