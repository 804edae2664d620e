#!/usr/bin/env python3
"""Where Kiln's GEMM loses to cuBLAS: bench/contraction.kiln's gemm and bmm with the heuristic's
variant beside torch.matmul (cuBLAS) in one process, over the reduced extent K (a per-tile cost
shows as a ratio that falls with K), over M (wave quantization: 128 x 256 tiles fill 132 SMs
in whole waves only at some M) and over the batch of a short-K bmm.

    PYTHONPATH=python KILN_BIN=build/tools/kiln KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \\
        python3 bench/experiments/gemm_sweep/sweep.py OUT.json

Each Kiln result is checked against torch in float64 first (the tolerance of
bench/contraction.py); times are medians of triton.testing.do_bench (L2 flushed)."""
import json
import sys
from pathlib import Path

import torch
import triton.testing

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "python"))
import kiln  # noqa: E402


def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e-3


def main():
    out = Path(sys.argv[1])
    torch.manual_seed(0)
    bundle = kiln.compile(REPO / "bench" / "contraction.kiln")
    bf = torch.bfloat16
    rows = []

    def run(label, b, m, n, k):
        shape = (b, m, k) if b else (m, k)
        x = torch.randn(*shape, device="cuda", dtype=bf)
        w = torch.randn(*((b, k, n) if b else (k, n)), device="cuda", dtype=bf)
        c = torch.empty(*((b, m, n) if b else (m, n)), device="cuda", dtype=bf)
        kfn = (lambda: bundle.bmm(x, w, c)) if b else (lambda: bundle.gemm(x, w, c))
        tfn = (lambda: torch.bmm(x, w, out=c)) if b else (lambda: torch.matmul(x, w, out=c))
        kfn()
        want = x.double() @ w.double()
        scale = want.abs().max().item()
        torch.testing.assert_close(c.double(), want, rtol=2**-7, atol=2**-9 * scale + 1e-30)
        tk, tc = bench(kfn), bench(tfn)
        flops = 2 * (b or 1) * m * n * k
        row = {"sweep": label, "b": b, "m": m, "n": n, "k": k, "kiln_us": tk * 1e6,
               "cublas_us": tc * 1e6, "kiln_tflops": flops / tk / 1e12,
               "cublas_tflops": flops / tc / 1e12, "of_cublas": tc / tk}
        rows.append(row)
        print(f"{label:<6} b={b:<3} m={m:<6} n={n:<6} k={k:<6} kiln {tk*1e6:9.1f} us "
              f"{row['kiln_tflops']:5.0f} TF/s | cuBLAS {tc*1e6:9.1f} us "
              f"{row['cublas_tflops']:5.0f} TF/s | {row['of_cublas']:.1%}", flush=True)

    for k in (256, 512, 1024, 2048, 4096, 8192):
        run("K", 0, 8192, 4096, k)
    for m in (4096, 4224, 5120, 6144, 8448):
        run("M", 0, m, 4096, 4096)
    for b in (4, 16):
        run("bmm", b, 2048, 2048, 512)
    run("bmm", 16, 2048, 2048, 2048)
    out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
