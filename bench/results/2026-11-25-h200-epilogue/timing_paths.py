#!/usr/bin/env python3
"""Why bench/contraction.py times Kiln's 8192 x 4096 x 4096 GEMM at ~455 us when `kiln run` times
the same variant at ~390-410: the same kernel through the Python package, timed four ways, beside
cuBLAS (torch.matmul) timed the same ways.
    PYTHONPATH=python KILN_BIN=build/tools/kiln KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \\
        python3 bench/results/2026-11-25-h200-epilogue/timing_paths.py"""
import sys
import time
from pathlib import Path

import torch
import triton.testing

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "python"))
import kiln  # noqa: E402

bundle = kiln.compile(REPO / "bench" / "contraction.kiln")
bf = torch.bfloat16
m, n, k = 8192, 4096, 4096
x = torch.randn(m, k, device="cuda", dtype=bf)
w = torch.randn(k, n, device="cuda", dtype=bf)
c = torch.empty(m, n, device="cuda", dtype=bf)
fns = {"kiln": lambda: bundle.gemm(x, w, c), "cublas": lambda: torch.matmul(x, w, out=c)}
flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")


def events(fn, reps, flush_l2, gap_s=0.0):
    times = []
    for _ in range(reps):
        if flush_l2:
            flush.zero_()
        if gap_s:
            torch.cuda.synchronize()
            time.sleep(gap_s)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        times.append((s, e))
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) * 1e3 for s, e in times)
    return t[len(t) // 2]


for name, fn in fns.items():
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(200):
        fn()
    host_us = (time.perf_counter() - t0) / 200 * 1e6
    torch.cuda.synchronize()
    do_bench = triton.testing.do_bench(fn, warmup=50, rep=400, return_mode="median") * 1e3
    print(f"{name:7} do_bench(flush) {do_bench:7.1f} us | events, flush {events(fn, 100, True):7.1f}"
          f" | events, back to back {events(fn, 100, False):7.1f}"
          f" | events, 20 ms idle before each {events(fn, 30, False, 0.02):7.1f}"
          f" | host per call (queue full) {host_us:6.1f} us", flush=True)
