#!/usr/bin/env python3
"""The GEMM of 8192 x 4096 x 4096 (bf16) and RMSNorm-then-matmul at the same shape under
sustained load: Kiln (its heuristic's variant) beside cuBLAS (torch.matmul) and torch.compile
(mode="max-autotune-no-cudagraphs"), each run back to back for 3 s first (the board at its
power limit), then 2500 launches back to back (about a second) timed with CUDA events while
nvidia-smi samples the board's power and SM clock every 50 ms. Two rounds, the second in the
reverse order. Each result is
checked against torch in float64 before it is timed.
    PYTHONPATH=python KILN_BIN=... KILN_RUNTIME_LIB=... python3 power.py OUT.json"""
import json
import subprocess
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "python"))
import kiln  # noqa: E402

M, N, K = 8192, 4096, 4096
bf = torch.bfloat16
torch.manual_seed(0)
x = torch.randn(M, K, device="cuda", dtype=bf)
w = torch.randn(K, N, device="cuda", dtype=bf) * 0.02
c = torch.empty(M, N, device="cuda", dtype=bf)
b = kiln.compile(REPO / "bench" / "contraction.kiln")


def rms_torch(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(bf) @ w


compiled = torch.compile(rms_torch, mode="max-autotune-no-cudagraphs")
impls = {
    "kiln gemm": lambda: b.gemm(x, w, c),
    "cublas gemm": lambda: torch.matmul(x, w, out=c),
    "kiln rmsnorm+linear": lambda: b.rmsnorm_linear(x, w, c),
    "torch.compile rmsnorm+linear": lambda: compiled(x, w),
}
want_gemm = x.double() @ w.double()
xd = x.double()
want_rms = (xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6)) @ w.double()
for name, fn in impls.items():
    got = fn()
    got = c if got is None else got
    want = want_rms if "rms" in name else want_gemm
    torch.testing.assert_close(got.double(), want, rtol=2**-7, atol=2**-9 * want.abs().max().item())


def measure(fn, reps=2500):
    end = time.time() + 3.0
    while time.time() < end:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=power.draw,clocks.sm", "--format=csv,noheader,nounits",
                            "-lms", "50"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.1)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    stop.synchronize()
    smi.terminate()
    samples = [tuple(float(v) for v in line.split(",")) for line in smi.communicate()[0].splitlines()
               if line.strip()]
    samples = samples[3:] or samples  # from the timed launches on
    us = start.elapsed_time(stop) * 1e3 / reps
    power = sum(s[0] for s in samples) / len(samples)
    clock = sum(s[1] for s in samples) / len(samples)
    return {"us": us, "tflops": 2 * M * N * K / us * 1e-6, "watts": power, "sm_mhz": clock,
            "joules": power * us * 1e-6, "samples": len(samples)}


results = []
for rnd in (1, 2):
    for name, fn in (impls.items() if rnd == 1 else reversed(impls.items())):
        r = measure(fn)
        r.update(round=rnd, impl=name)
        results.append(r)
        print(f"round {rnd} {name:<30} {r['us']:8.1f} us {r['tflops']:6.0f} TF/s {r['watts']:6.1f} W "
              f"{r['sm_mhz']:6.0f} MHz {r['joules']:.4f} J ({r['samples']} samples)", flush=True)
json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "results": results},
          open(sys.argv[1], "w"), indent=2)
