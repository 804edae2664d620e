#!/usr/bin/env python3
"""Contractions on tensor cores (issue 18): Kiln beside cuBLAS (torch.matmul, eager) and
torch.compile(mode="max-autotune-no-cudagraphs"), in one run on one GPU.

    PYTHONPATH=python KILN_BIN=build/tools/kiln KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \\
        python3 bench/contraction.py OUT_DIR [--quick] [--only TEXT ...]

Kiln runs the kernels of bench/contraction.kiln with its heuristic's variant (no tuning cache:
what a plain launch runs); bench/contraction.sh times every variant with `kiln run`. Every result is checked before it is timed: against torch in float64
(float32 accumulation), within bf16's rounding (2^-7 relative) plus 2^-9 of the output's largest
|value| (an f32 sum of K products of bf16 values carries about sqrt(K) 2^-24 of it; the extra
margin covers a flip of bf16 rounding on the way, as torch rounds h in bf16 where Kiln does not).
The f32 cases (tf32, fp32) say their own references and tolerances in place.
A wrong result raises instead of printing a time. Times are medians of triton.testing.do_bench
(CUDA events, L2 flushed between runs); TFLOP/s counts 2 M N K per (batched) product."""
import argparse
import json
import os
import sys
from pathlib import Path

import torch
import triton.testing

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
import kiln  # noqa: E402


def bench(fn):
    return triton.testing.do_bench(fn, warmup=50, rep=400, return_mode="median") * 1e-3


def check(name, label, got, want):
    scale = want.abs().max().item()
    torch.testing.assert_close(got.double(), want, rtol=2**-7, atol=2**-9 * scale + 1e-30,
                               msg=lambda m: f"{name} ({label}): {m}")


def case(name, flops, kiln_fn, torch_fn, args, want_fn, cublas_fn=None):
    """Times Kiln, torch eager (cuBLAS for the plain products) and torch.compile."""
    want = want_fn(*args)
    out = {"case": name, "flops": flops}
    check(name, "kiln", kiln_fn(), want)
    out["kiln_s"] = bench(kiln_fn)
    check(name, "eager", torch_fn(*args), want)
    out["eager_s"] = bench(lambda: torch_fn(*args))
    compiled = torch.compile(torch_fn, mode="max-autotune-no-cudagraphs")
    check(name, "torch.compile", compiled(*args), want)
    out["compile_s"] = bench(lambda: compiled(*args))
    if cublas_fn is not None:
        out["cublas_s"] = bench(cublas_fn)
    for k in ("kiln", "eager", "compile", "cublas"):
        if f"{k}_s" in out:
            out[f"{k}_tflops"] = flops / out[f"{k}_s"] / 1e12
    line = (f"{name:<28} kiln {out['kiln_s']*1e6:9.1f} us {out['kiln_tflops']:6.0f} TF/s | eager "
            f"{out['eager_s']*1e6:9.1f} us | compile {out['compile_s']*1e6:9.1f} us "
            f"{out['compile_tflops']:6.0f} TF/s")
    if cublas_fn is not None:
        out["kiln_of_cublas"] = out["cublas_s"] / out["kiln_s"]
        line += f" | cuBLAS {out['cublas_tflops']:4.0f} TF/s, Kiln {out['kiln_of_cublas']:.1%}"
    print(line, flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--quick", action="store_true", help="only the square GEMMs")
    ap.add_argument("--only", nargs="+", metavar="TEXT",
                    help="only the cases whose name contains one of these (e.g. gelu)")
    a = ap.parse_args()
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    dev = "cuda"
    bundle = kiln.compile(REPO / "bench" / "contraction.kiln")
    bf = torch.bfloat16

    def rnd(*shape):
        return torch.randn(*shape, device=dev, dtype=bf)

    cases = []

    def timed(name, *args, **kwargs):  # case(), for the cases --only keeps
        if a.only and not any(t in name for t in a.only):
            return None
        return case(name, *args, **kwargs)

    gemms = [(1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 4096, 4096)]
    for m, n, k in gemms:
        x, w = rnd(m, k), rnd(k, n)
        c = torch.empty(m, n, device=dev, dtype=bf)
        cases.append(timed(f"gemm {m}x{n}x{k}", 2 * m * n * k, lambda: bundle.gemm(x, w, c),
                          lambda x, w: x @ w, (x, w), lambda x, w: x.double() @ w.double(),
                          cublas_fn=lambda: torch.matmul(x, w, out=c)))
    if not a.quick:
        b, m, n, k = 16, 2048, 2048, 512
        x, w = rnd(b, m, k), rnd(b, k, n)
        c = torch.empty(b, m, n, device=dev, dtype=bf)
        cases.append(timed(f"bmm {b}x{m}x{n}x{k}", 2 * b * m * n * k, lambda: bundle.bmm(x, w, c),
                          lambda x, w: torch.bmm(x, w), (x, w),
                          lambda x, w: x.double() @ w.double(),
                          cublas_fn=lambda: torch.bmm(x, w, out=c)))
        # The erf-GELU epilogue at the shape and an LLM MLP's up-projection.
        for m, n, k in [(8192, 4096, 4096), (2048, 11008, 4096)]:
            x, w, bias = rnd(m, k), rnd(k, n) * 0.02, rnd(n)
            y = torch.empty(m, n, device=dev, dtype=bf)
            cases.append(timed(
                f"bias+gelu {m}x{n}x{k}", 2 * m * n * k,
                lambda: bundle.linear_bias_gelu(x, w, bias, y),
                lambda x, w, bias: torch.nn.functional.gelu(x @ w + bias), (x, w, bias),
                lambda x, w, bias: torch.nn.functional.gelu(x.double() @ w.double() +
                                                            bias.double())))
        m, n, k = 8192, 4096, 4096
        x, w = rnd(m, k), rnd(k, n) * 0.02
        y = torch.empty(m, n, device=dev, dtype=bf)

        def rms_torch(x, w):
            xf = x.float()
            h = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(bf)
            return h @ w

        def rms_want(x, w):
            xd = x.double()
            return (xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6)) @ w.double()

        cases.append(timed(f"rmsnorm+linear {m}x{n}x{k}", 2 * m * n * k,
                          lambda: bundle.rmsnorm_linear(x, w, y), rms_torch, (x, w), rms_want))

        # With the norm's gain, its output rounded to bf16 in the spec as in torch: the norm's
        # kernel writes it, the contraction reads it (an LLM's attention input and MLP up
        # projection, and a small batch of rows).
        def gain_torch(x, g, w):
            xf = x.float()
            h = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * g.float()).to(bf)
            return h @ w

        def gain_want(x, g, w):  # the spec's rounding of the operand, the rest in float64
            xd = x.double()
            h = (xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * g.double())
            return h.to(bf).double() @ w.double()

        for m, n, k in [(8192, 4096, 4096), (2048, 11008, 4096), (256, 4096, 4096)]:
            x, g, w = rnd(m, k), 1 + 0.1 * rnd(k), rnd(k, n) * 0.02
            y = torch.empty(m, n, device=dev, dtype=bf)
            cases.append(timed(f"rmsnorm*g+linear {m}x{n}x{k}", 2 * m * n * k,
                              lambda: bundle.rmsnorm_gain_linear(x, g, w, y), gain_torch,
                              (x, g, w), gain_want))
    if not a.quick:
        # f32 in and out, the spec cutting the operands to tf32; torch with allow_tf32 (its
        # tf32 mode), and cuBLAS's full-f32 product beside it. The reference is float64 of the
        # cut operands (tf32() keeps the top 10 significand bits: x & ~0x1FFF).
        def cut(t):
            return (t.view(torch.int32) & -8192).view(torch.float32)

        for m, n, k in [(4096, 4096, 4096), (8192, 4096, 4096), (2048, 11008, 4096),
                        (3000, 5000, 1000)]:
            x, w, wt = (torch.randn(m, k, device=dev), torch.randn(n, k, device=dev),
                        torch.randn(k, n, device=dev))
            y = torch.empty(m, n, device=dev)
            torch.backends.cuda.matmul.allow_tf32 = True
            for name, fn, b, want in [
                    ("tf32 linear", lambda: bundle.linear_tf32(x, w, y), w,
                     lambda x, b: cut(x).double() @ cut(b).double().t()),
                    ("tf32 gemm", lambda: bundle.gemm_tf32(x, wt, y), wt,
                     lambda x, b: cut(x).double() @ cut(b).double())]:
                lin = name == "tf32 linear"
                tf = (lambda x, b: x @ b.t()) if lin else (lambda x, b: x @ b)
                out = timed(f"{name} {m}x{n}x{k}", 2 * m * n * k, fn, tf, (x, b), want,
                            cublas_fn=(lambda: torch.matmul(x, b.t(), out=y)) if lin
                            else (lambda: torch.matmul(x, b, out=y)))
                if out is not None:
                    torch.backends.cuda.matmul.allow_tf32 = False
                    out["cublas_f32_s"] = bench(lambda: tf(x, b))
                    torch.backends.cuda.matmul.allow_tf32 = True
                    print(f"    cuBLAS full f32 {out['cublas_f32_s']*1e6:9.1f} us, Kiln tf32 "
                          f"{out['cublas_f32_s'] / out['kiln_s']:.2f}x faster", flush=True)
                cases.append(out)
            torch.backends.cuda.matmul.allow_tf32 = False
        # f32 products not cut: Kiln on CUDA cores beside torch without tf32 (cuBLAS's f32
        # GEMM, and torch.compile's). The reference is float64; an f32 sum of K products
        # carries about sqrt(K) 2^-24 of the output's scale.
        for m, n, k in [(4096, 4096, 4096), (3000, 5000, 1000)]:
            x, w, wt = (torch.randn(m, k, device=dev), torch.randn(n, k, device=dev),
                        torch.randn(k, n, device=dev))
            y = torch.empty(m, n, device=dev)
            cases.append(timed(f"fp32 linear {m}x{n}x{k}", 2 * m * n * k,
                              lambda: bundle.linear_f32(x, w, y), lambda x, w: x @ w.t(),
                              (x, w), lambda x, w: x.double() @ w.double().t(),
                              cublas_fn=lambda: torch.matmul(x, w.t(), out=y)))
            cases.append(timed(f"fp32 gemm {m}x{n}x{k}", 2 * m * n * k,
                              lambda: bundle.gemm_f32(x, wt, y), lambda x, w: x @ w,
                              (x, wt), lambda x, w: x.double() @ w.double(),
                              cublas_fn=lambda: torch.matmul(x, wt, out=y)))
    if not a.quick:
        # Few output tiles and a long K (the rule splits K: bundle/rule.h, split-K), as in a
        # small layer's weight gradient or a long-context reduction.
        for m, n, k in [(1024, 1024, 4096), (1024, 1024, 16384), (512, 512, 8192),
                        (256, 4096, 4096), (128, 4096, 16384), (256, 256, 65536)]:
            x, w = rnd(m, k), rnd(k, n)
            c = torch.empty(m, n, device=dev, dtype=bf)
            cases.append(timed(f"few-tiles gemm {m}x{n}x{k}", 2 * m * n * k,
                              lambda: bundle.gemm(x, w, c), lambda x, w: x @ w, (x, w),
                              lambda x, w: x.double() @ w.double(),
                              cublas_fn=lambda: torch.matmul(x, w, out=c)))
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cases": [c for c in cases if c is not None]}
    json.dump(result, open(out_dir / "contraction.json", "w"), indent=2)


if __name__ == "__main__":
    main()
