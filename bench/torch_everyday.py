"""The cases of bench/everyday.sh in PyTorch (eager and torch.compile with
mode="max-autotune-no-cudagraphs"), timed on the same GPU in the same run as Kiln, with the
peak copy bandwidth (bench/torch_common.py). Bytes are what each case must move at least:
its inputs read once (for the embedding, the rows it looks up) and its outputs written once.

    python3 bench/torch_everyday.py OUT.json [NAME_PART ...]"""
import sys

import torch
import torch.nn.functional as F

from torch_common import case, copy_gbps, report


def main():
    dev, bf16, f32 = "cuda", torch.bfloat16, torch.float32
    torch.manual_seed(0)
    copy = copy_gbps()
    cases = []
    only = sys.argv[2:]

    failed = []

    def add(name, make_args, fn, nbytes, **kw):
        # A case that fails its check (or raises) is reported and left out; the others run.
        if not only or any(part in name for part in only):
            try:
                cases.append(case(name, make_args(), fn, nbytes, **kw))
            except Exception as e:  # noqa: BLE001: the message is the report
                print(f"torch {name}: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
                failed.append(name)

    M, V = 32768, 32768
    add("cross_entropy bf16 32768x32768",
        lambda: (torch.randn(M, V, device=dev, dtype=bf16) * 4,
                 torch.randint(0, V, (M,), device=dev)),
        lambda x, t: F.cross_entropy(x.float(), t, reduction="none"), M * V * 2 + M * 8 + M * 4,
        reference=lambda x, t: F.cross_entropy(x.double(), t, reduction="none"))
    T, R, D = 131072, 32000, 4096
    add("embedding bf16 131072x4096",
        lambda: (torch.randint(0, R, (T,), device=dev),
                 torch.randn(R, D, device=dev, dtype=bf16)),
        lambda ids, w: F.embedding(ids, w), 2 * T * D * 2 + T * 8,
        reference=lambda ids, w: F.embedding(ids, w.double()))
    add("cumsum f32 4096x32768", lambda: (torch.randn(4096, 32768, device=dev),),
        lambda x: torch.cumsum(x, 1), 2 * 4 * 4096 * 32768)
    add("cumsum f32 1x67108864", lambda: (torch.randn(1 << 26, device=dev),),
        lambda x: torch.cumsum(x, 0), 2 * 4 * (1 << 26))

    # Dropout draws new numbers on every call, so no float64 run reproduces it: each output
    # element must be 0 or x / (1 - p) rounded to bf16, and the kept fraction 1 - p within 0.2%.
    p, Md, Nd = 0.1, 16384, 8192
    x = torch.randn(Md, Nd, device=dev, dtype=bf16)

    def verify_dropout(name, label, y):
        kept = y != 0
        scaled = (x.float() / (1 - p)).to(bf16)
        bad = (kept & (y != scaled)).sum().item()
        frac = kept.float().mean().item()
        if bad or abs(frac - (1 - p)) > 0.002:
            raise AssertionError(f"{name} ({label}): {bad} kept elements not x/(1-p), "
                                 f"kept fraction {frac:.4f}")

    add("dropout bf16 16384x8192", lambda: (x,), lambda x: F.dropout(x, p, training=True),
        2 * 2 * Md * Nd, verify=verify_dropout)

    # Rotary embedding, the rotate-half form of examples/rotary.kiln: x [T, H, 2, R] bf16,
    # position ids gathering rows of f32 cos and sin tables. Bytes: x read and y written, the
    # ids (the table rows are not counted: fewer than T are distinct).
    T, H, R, P = 16384, 32, 64, 16384

    def rotary(x, pos, cs, sn, compute=f32):
        c, s = cs[pos][:, None, :], sn[pos][:, None, :]
        x0, x1 = x[:, :, 0, :].to(compute), x[:, :, 1, :].to(compute)
        y = torch.stack((x0 * c - x1 * s, x1 * c + x0 * s), dim=2)
        return y.to(bf16) if compute == f32 else y

    add("rotary bf16 16384x32x128",
        lambda: (torch.randn(T, H, 2, R, device=dev, dtype=bf16),
                 torch.randint(0, P, (T,), device=dev),
                 torch.randn(P, R, device=dev), torch.randn(P, R, device=dev)),
        rotary, 2 * 2 * T * H * 2 * R + 8 * T,
        reference=lambda x, pos, cs, sn: rotary(x, pos, cs.double(), sn.double(), torch.float64))
    B, C, Hs, Ws = 64, 256, 56, 56
    add("spatial mean bf16 64x256x56x56",
        lambda: (torch.randn(B, C, Hs, Ws, device=dev, dtype=bf16),),
        lambda x: x.mean((2, 3)), 2 * B * C * Hs * Ws + 2 * B * C,
        reference=lambda x: x.double().mean((2, 3)))
    add("channel sums f32 64x256x56x56",
        lambda: (torch.randn(B, C, Hs, Ws, device=dev),),
        lambda x: (x.sum((0, 2, 3)), (x * x).sum((0, 2, 3))), 4 * B * C * Hs * Ws + 8 * C,
        reference=lambda x: (x.double().sum((0, 2, 3)), (x.double() ** 2).sum((0, 2, 3))))
    # Layernorm over a transposed view: x = base[:, :M].t() of a [N, M + 1] bf16 tensor.
    # The others: f32, rows of 1000 and of 8192, rows padded to N + 3 (x = base[:, :N] of an
    # [M, N + 3] tensor), and the plain x.t() of an [N, M] tensor.
    views = {
        "transposed view": lambda Ml, Nl, dt: torch.randn(Nl, Ml + 1, device=dev,
                                                          dtype=dt)[:, :Ml].t(),
        "padded rows": lambda Ml, Nl, dt: torch.randn(Ml, Nl + 3, device=dev, dtype=dt)[:, :Nl],
        "x.t()": lambda Ml, Nl, dt: torch.randn(Nl, Ml, device=dev, dtype=dt).t(),
    }
    for Ml, Nl, dt, view in [(16384, 4096, bf16, "transposed view"),
                             (16384, 4096, f32, "transposed view"),
                             (32768, 1000, bf16, "transposed view"),
                             (8192, 8192, bf16, "transposed view"),
                             (16384, 4096, bf16, "padded rows"), (16384, 4096, bf16, "x.t()")]:
        def make(Ml=Ml, Nl=Nl, dt=dt, view=view):
            return (views[view](Ml, Nl, dt), torch.randn(Nl, device=dev, dtype=dt),
                    torch.randn(Nl, device=dev, dtype=dt))
        size = 2 if dt == bf16 else 4
        add(f"layernorm {'bf16' if dt == bf16 else 'f32'} {view} {Ml}x{Nl}", make,
            lambda x, w, b, Nl=Nl: F.layer_norm(x, (Nl,), w, b, 1e-5),
            2 * size * Ml * Nl + 2 * size * Nl,
            reference=lambda x, w, b, Nl=Nl: F.layer_norm(x.double(), (Nl,), w.double(),
                                                          b.double(), 1e-5))
    report(sys.argv[1], copy, cases)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
