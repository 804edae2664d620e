"""Short outer reductions in PyTorch beside Kiln (call 5): eager and
torch.compile(mode="max-autotune-no-cudagraphs"), each result checked first (bench/torch_common.py).

    python3 bench/results/2026-11-28-h200-short-outer/torch_short.py OUT.json"""
import sys

sys.path.insert(0, "bench")
import torch  # noqa: E402

from torch_common import case, copy_gbps, report  # noqa: E402

CASES = [  # name, kernel of cs.kiln, Kiln shape
    ("colsum bf16 777x40", "colsum_bf16", "M=777,N=40"),
    ("colsum bf16 300x1000", "colsum_bf16", "M=300,N=1000"),
    ("colsum bf16 1023x136", "colsum_bf16", "M=1023,N=136"),
    ("colsum bf16 3000x136", "colsum_bf16", "M=3000,N=136"),
    ("colsum bf16 777x12000", "colsum_bf16", "M=777,N=12000"),
    ("colsum f32 1023x24", "colsum_f32", "M=1023,N=24"),
    ("ln_wgrad bf16 1023x48", "ln_wgrad", "M=1023,N=48"),
    ("mid_mean f32 3x500x100", "mid_mean", "B=3,M=500,N=100"),
    ("token_max bf16 3x333x64", "token_max", "B=3,S=333,D=64"),
]


def main():
    dev, bf16, f32 = "cuda", torch.bfloat16, torch.float32
    torch.manual_seed(0)
    copy = copy_gbps()
    out = []
    for name, _, shape in CASES:
        dims = dict(kv.split("=") for kv in shape.split(","))
        d = {k: int(v) for k, v in dims.items()}
        if name.startswith("colsum"):
            dt = bf16 if "bf16" in name else f32
            x = torch.randn(d["M"], d["N"], device=dev, dtype=dt)
            c = case(name, (x,), lambda x: x.sum(0, dtype=f32), x.numel() * x.element_size() + 4 * d["N"])
        elif name.startswith("ln_wgrad"):
            dy = torch.randn(d["M"], d["N"], device=dev, dtype=bf16)
            xh = torch.randn(d["M"], d["N"], device=dev, dtype=bf16)
            c = case(name, (dy, xh),
                     lambda dy, xh: ((dy.float() * xh.float()).sum(0), dy.sum(0, dtype=f32)),
                     4 * d["M"] * d["N"] + 8 * d["N"])
        elif name.startswith("mid_mean"):
            x = torch.randn(d["B"], d["M"], d["N"], device=dev, dtype=f32)
            c = case(name, (x,), lambda x: x.mean(1), 4 * x.numel() + 4 * d["B"] * d["N"])
        else:
            x = torch.randn(d["B"], d["S"], d["D"], device=dev, dtype=bf16)
            c = case(name, (x,), lambda x: x.amax((0, 1)), 2 * x.numel() + 2 * d["D"])
        out.append(c)
        print(f"torch {name} eager {c['eager_s']*1e6:.2f} us compile {c['compile_s']*1e6:.2f} us",
              flush=True)
    report(sys.argv[1], copy, out)


if __name__ == "__main__":
    main()
