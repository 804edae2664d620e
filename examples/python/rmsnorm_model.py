#!/usr/bin/env python3
"""A fused RMSNorm from Kiln inside a small torch model: compile examples/rmsnorm.kiln (cached),
run it in a module's forward on torch tensors, check it against torch, time both.

    PYTHONPATH=python KILN_BIN=build/tools/kiln KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \\
        python3 examples/python/rmsnorm_model.py [--rows 8192] [--hidden 4096]

Needs torch with CUDA. Forward only: a Kiln kernel has no autograd formula.
Tolerance: bf16 output, one rounding of an f32 result (2^-8 relative) plus f32 arithmetic
over the row, so rtol 2^-7 against torch in float64."""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import kiln  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


class KilnRMSNorm(torch.nn.Module):
    """y = x * rsqrt(mean(x^2, -1) + 1e-6) * weight, one Kiln kernel (bf16)."""

    def __init__(self, hidden: int, bundle):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))
        self.kernel = bundle.rmsnorm

    def forward(self, x):
        return self.kernel(x.reshape(-1, x.shape[-1]), self.weight).view(x.shape)


class TorchRMSNorm(torch.nn.Module):
    """The same in torch eager: computed in f32, stored bf16 (as the Kiln kernel does)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight.float()
        return y.to(torch.bfloat16)


class Block(torch.nn.Module):
    """A small model: a projection, then the norm."""

    def __init__(self, hidden: int, norm: torch.nn.Module):
        super().__init__()
        self.proj = torch.nn.Linear(hidden, hidden, dtype=torch.bfloat16)
        self.norm = norm

    def forward(self, x):
        return self.norm(self.proj(x))


def time_us(fn, reps=200):
    for _ in range(10):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / reps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--hidden", type=int, default=4096)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("rmsnorm_model: no CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    bundle = kiln.compile(REPO / "examples" / "rmsnorm.kiln")
    print(f"GPU: {torch.cuda.get_device_name()} (kiln: {bundle.device_name})")
    print(f"bundle: {bundle.path}")
    print(f"kernel: {bundle.rmsnorm.kernel.signature_text()}")

    kiln_model = Block(a.hidden, KilnRMSNorm(a.hidden, bundle)).cuda()
    torch_model = Block(a.hidden, TorchRMSNorm(a.hidden)).cuda()
    torch_model.load_state_dict(kiln_model.state_dict())
    with torch.no_grad():
        kiln_model.norm.weight.copy_(torch.randn(a.hidden) * 0.5 + 1)
        torch_model.norm.weight.copy_(kiln_model.norm.weight)
        x = torch.randn(4, a.rows // 4, a.hidden, device="cuda", dtype=torch.bfloat16)

        # Check: the model's output, and the norm alone against float64.
        got = kiln_model(x)
        want = torch_model(x)
        h = kiln_model.proj(x).reshape(-1, a.hidden)
        h64 = h.double()
        exact = h64 * torch.rsqrt(h64.pow(2).mean(-1, keepdim=True) + 1e-6) * \
            kiln_model.norm.weight.double()
        torch.testing.assert_close(got.reshape(-1, a.hidden).double(), exact, rtol=2 ** -7,
                                   atol=1e-5)
        diff = (got.float() - want.float()).abs().max().item()
        print(f"check: kiln's forward matches float64 (rtol 2^-7); max |kiln - torch eager| "
              f"{diff:.3g}")

        # Time the norm alone (same input), then the whole forward.
        norm_kiln = time_us(lambda: kiln_model.norm(h))
        norm_torch = time_us(lambda: torch_model.norm(h))
        fwd_kiln = time_us(lambda: kiln_model(x))
        fwd_torch = time_us(lambda: torch_model(x))
        nbytes = 2 * h.numel() * 2 + a.hidden * 2
        print(f"rmsnorm {a.rows}x{a.hidden} bf16: kiln {norm_kiln:.2f} us "
              f"({nbytes / norm_kiln / 1e3:.0f} GB/s), torch eager {norm_torch:.2f} us "
              f"({nbytes / norm_torch / 1e3:.0f} GB/s), speed-up {norm_torch / norm_kiln:.2f}x")
        print(f"model forward (linear + rmsnorm): kiln {fwd_kiln:.2f} us, torch eager "
              f"{fwd_torch:.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
