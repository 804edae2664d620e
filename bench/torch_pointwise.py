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
    # Transposes and permutations (examples/transpose.kiln, examples/permute.kiln); the
    # outputs are materialized contiguous, as Kiln writes them.
    t = 8192 * 8192
    f32 = torch.float32
    cases += [
        case("transpose_scale f32 8192x8192", (torch.randn(8192, 8192, device=dev),),
             lambda x: (2.0 * x.t()).contiguous(), 2 * t * 4),
        case("transpose_add f32 8192x8192",
             (torch.randn(8192, 8192, device=dev), torch.randn(8192, 8192, device=dev)),
             lambda x, z: (z + x.t()).contiguous(), 3 * t * 4),
        case("transpose_add f32 8191x8193",
             (torch.randn(8193, 8191, device=dev), torch.randn(8191, 8193, device=dev)),
             lambda x, z: (z + x.t()).contiguous(), 3 * 8191 * 8193 * 4),
        case("transpose_bf16 8192x8192", (torch.randn(8192, 8192, device=dev, dtype=bf16),),
             lambda x: x.t().contiguous(), 2 * t * 2),
        case("transpose_cast f32->bf16 8192x8192", (torch.randn(8192, 8192, device=dev, dtype=f32),),
             # (the float64 reference, bench/torch_common.py, stays float64)
             lambda x: (x.t() * 0.5).to(bf16 if x.dtype == f32 else x.dtype).contiguous(),
             t * 4 + t * 2),
    ]
    b, s, h, d = 8, 2048, 16, 128
    cases += [
        case("heads_first bf16 [8,2048,16,128]",
             (torch.randn(b, s, h, d, device=dev, dtype=bf16),),
             lambda x: x.permute(0, 2, 1, 3).contiguous(), 2 * b * s * h * d * 2),
        case("heads_keys bf16 [8,2048,16,128]",
             (torch.randn(b, s, h, d, device=dev, dtype=bf16),),
             lambda x: x.permute(0, 2, 3, 1).contiguous(), 2 * b * s * h * d * 2),
    ]
    report(sys.argv[1], copy, cases)


if __name__ == "__main__":
    main()
