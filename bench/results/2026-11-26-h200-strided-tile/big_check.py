"""More than 2^31 elements through a strided variant's tile: layernorm_strided (bf16) over a
transposed view of 262152 x 8200 (2,149,646,400 elements; the view's footprint past 2^32
bytes), against torch's layer_norm in f32 of the same view, row block by row block; the
output starts NaN so an element never written shows.
    PYTHONPATH=python KILN_BIN=... KILN_RUNTIME_LIB=... python3 big_check.py BUNDLE_DIR"""
import sys

import torch
import torch.nn.functional as F

import kiln

M, N = 262152, 8200
b = kiln.load(sys.argv[1])
torch.manual_seed(0)
x = torch.randn(N, M + 1, device="cuda", dtype=torch.bfloat16)[:, :M].t()
w = torch.randn(N, device="cuda", dtype=torch.bfloat16)
bias = torch.randn(N, device="cuda", dtype=torch.bfloat16)
y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
b.layernorm_strided(x, w, bias, y)
torch.cuda.synchronize()
worst, bad = 0.0, 0
for i in range(0, M, 16384):
    want = F.layer_norm(x[i:i + 16384].float(), (N,), w.float(), bias.float(), 1e-5)
    got = y[i:i + 16384].float()
    err = (got - want).abs() / (want.abs() + 1)
    bad += int(torch.isnan(got).sum()) + int((err > 1 / 64).sum())
    worst = max(worst, float(err.nan_to_num(0).max()))
print(f"layernorm_strided M={M} N={N} ({M * N} elements) transposed view: "
      f"max rel. error {worst:.3g}, {bad} bad")
sys.exit(1 if bad else 0)
