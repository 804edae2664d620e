#!/usr/bin/env python3
"""Kiln's contraction variants under sustained load, beside cuBLAS, with the SM clock and the
board power sampled by nvidia-smi: is the GEMM's gap to cuBLAS (bench/contraction.py) per clock,
or in the clock the power limit leaves it?

Needs an experiment build whose runtime remaps variants from KILN_EXP_REMAP ("7:12,11:13": run
variant 12 where the rule runs 7) and holds the raster and group variants v14-v19 (not in the
product; the build is described in the results' README). Inputs are torch.randn, as in
bench/contraction.py; times are medians of triton.testing.do_bench (L2 flushed), each result
checked against torch in float64 on a slice first.

    PYTHONPATH=python KILN_BIN=... KILN_RUNTIME_LIB=... python3 run.py OUT_DIR"""
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
import triton.testing

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "python"))
import kiln  # noqa: E402


def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=300, return_mode="median") * 1e-3


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    remaps = [r.strip() for r in sys.argv[2].split(";")] if len(sys.argv) > 2 else [""]
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw",
                            "--format=csv,noheader,nounits", "-lms", "50"],
                           stdout=open(out / "power.csv", "w"))
    torch.manual_seed(0)
    bundle = kiln.compile(REPO / "bench" / "contraction.kiln")
    bf = torch.bfloat16
    rows = []

    def case(label, kfn, ref, tfn, check):
        windows = []
        t0 = time.time()
        us = bench(tfn)
        windows.append(("cublas", "", us, t0, time.time()))
        for remap in remaps:
            os.environ["KILN_EXP_REMAP"] = remap
            kfn()
            torch.cuda.synchronize()
            err = check()
            t0 = time.time()
            us = bench(kfn)
            windows.append(("kiln", remap, us, t0, time.time(), err))
        for w in windows:
            rows.append({"case": label, "who": w[0], "remap": w[1], "us": w[2], "t0": w[3],
                         "t1": w[4], "err": w[5] if len(w) > 5 else None})
            print(f"{label:40s} {w[0]:7s} {w[1]:12s} {w[2] * 1e6:9.1f} us", flush=True)

    def rel_err(got, want):
        return float(((got.double() - want.double()).abs().max() / want.double().abs().max()).item())

    for m, n, k in [(8192, 4096, 4096), (4096, 4096, 4096), (8192, 8192, 8192)]:
        x = torch.randn(m, k, device="cuda", dtype=bf)
        w = torch.randn(k, n, device="cuda", dtype=bf)
        c = torch.empty(m, n, device="cuda", dtype=bf)
        ref = (x[:256].double() @ w.double())
        case(f"gemm {m}x{n}x{k}", lambda: bundle.gemm(x, w, c), ref, lambda: torch.matmul(x, w),
             lambda: rel_err(c[:256], ref))
    b, m, n, k = 16, 2048, 2048, 512
    x = torch.randn(b, m, k, device="cuda", dtype=bf)
    w = torch.randn(b, k, n, device="cuda", dtype=bf)
    c = torch.empty(b, m, n, device="cuda", dtype=bf)
    ref = x[:1].double() @ w[:1].double()
    case("bmm 16x2048x2048x512", lambda: bundle.bmm(x, w, c), ref, lambda: torch.bmm(x, w),
         lambda: rel_err(c[:1], ref))
    for m, n, k in [(8192, 4096, 4096), (2048, 11008, 4096)]:
        x = torch.randn(m, k, device="cuda", dtype=bf)
        w = torch.randn(k, n, device="cuda", dtype=bf) * 0.02
        bias = torch.randn(n, device="cuda", dtype=bf)
        y = torch.empty(m, n, device="cuda", dtype=bf)
        ref = torch.nn.functional.gelu(x[:256].double() @ w.double() + bias.double())
        case(f"gelu(x@w+b) {m}x{n}x{k}", lambda: bundle.linear_bias_gelu(x, w, bias, y), ref,
             lambda: torch.nn.functional.gelu(torch.addmm(bias, x, w)),
             lambda: rel_err(y[:256], ref))
    m, n, k = 8192, 4096, 4096
    x = torch.randn(m, k, device="cuda", dtype=bf)
    w = torch.randn(k, n, device="cuda", dtype=bf) * 0.02
    y = torch.empty(m, n, device="cuda", dtype=bf)
    xs = x[:256].double()
    ref = (xs * torch.rsqrt((xs * xs).mean(1, keepdim=True) + 1e-6)) @ w.double()

    def rms_torch():
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(1, keepdim=True) + 1e-6)).to(bf) @ w

    case(f"rmsnorm then matmul {m}x{n}x{k}", lambda: bundle.rmsnorm_linear(x, w, y), ref,
         rms_torch, lambda: rel_err(y[:256], ref))
    smi.terminate()
    smi.wait()
    # The clock and power over each measurement's window.
    samples = []
    for line in open(out / "power.csv"):
        parts = [p.strip() for p in line.split(",")]
        try:
            ts = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((ts, float(parts[1]), float(parts[2])))
        except (ValueError, IndexError):
            pass
    print()
    print(f"{'case':40s} {'who':7s} {'remap':12s} {'us':>9s} {'MHz':>6s} {'W':>6s} {'err':>9s}")
    for r in rows:
        inside = [s for s in samples if r["t0"] <= s[0] <= r["t1"]]
        r["mhz"] = sum(s[1] for s in inside) / len(inside) if inside else None
        r["watts"] = sum(s[2] for s in inside) / len(inside) if inside else None
        err = f"{r['err']:.2e}" if r["err"] is not None else ""
        mhz = f"{r['mhz']:.0f}" if r["mhz"] else "-"
        watts = f"{r['watts']:.0f}" if r["watts"] else "-"
        print(f"{r['case']:40s} {r['who']:7s} {r['remap']:12s} {r['us'] * 1e6:9.1f} {mhz:>6s} {watts:>6s} {err:>9s}")
    json.dump(rows, open(out / "rows.json", "w"), indent=1)


if __name__ == "__main__":
    main()
