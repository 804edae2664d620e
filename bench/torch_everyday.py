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

    def add(name, make_args, fn, nbytes, **kw):
        if not only or any(part in name for part in only):
            cases.append(case(name, make_args(), fn, nbytes, **kw))

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
    report(sys.argv[1], copy, cases)


if __name__ == "__main__":
    main()
