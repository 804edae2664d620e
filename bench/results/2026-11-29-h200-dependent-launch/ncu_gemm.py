#!/usr/bin/env python3
"""Runs the bf16 GEMM of 8192 x 4096 x 4096 three times through Kiln (its heuristic's variant)
and three times through cuBLAS (torch.matmul), for Nsight Compute to profile (call5.sh)."""
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "python"))
import kiln  # noqa: E402

M, N, K = 8192, 4096, 4096
x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
w = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
b = kiln.compile(REPO / "bench" / "contraction.kiln")
for _ in range(3):
    b.gemm(x, w, c)
for _ in range(3):
    torch.matmul(x, w, out=c)
torch.cuda.synchronize()
