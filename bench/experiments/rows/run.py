"""Times rms_rows.cubin's kernels (build.sh) and torch.compile's rmsnorm, bf16 32768x4096, with
one timer (triton's do_bench, L2 flushed, median) in one process, two passes.

    python3 bench/experiments/rows/run.py"""
import ctypes, os
import torch, torch.nn.functional as F
import triton.testing
here = os.path.dirname(os.path.abspath(__file__))
cu = ctypes.CDLL("libcuda.so.1")
def chk(r, what):
    if r: raise RuntimeError(f"{what}: CUDA error {r}")
def bench(fn): return triton.testing.do_bench(fn, warmup=50, rep=400, return_mode="median") * 1e3
torch.manual_seed(0)
M, N = 32768, 4096
x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16); w = torch.randn(N, device="cuda", dtype=torch.bfloat16)
y = torch.empty_like(x)
nbytes = 2 * 2 * M * N
ref = F.rms_norm(x.float(), (N,), w.float(), 1e-6)
src = torch.empty(3 * (1 << 25), device="cuda"); dst = torch.empty_like(src)
copy = 2 * src.numel() * 4 / bench(lambda: dst.copy_(src)) / 1e3
print(f"copy {copy:.0f} GB/s")
mod = ctypes.c_void_p(); data = open(f"{here}/rms_rows.cubin", "rb").read()
chk(cu.cuModuleLoadData(ctypes.byref(mod), data), "load")
stream = torch.cuda.current_stream().cuda_stream
rows = []
for line in open(f"{here}/variants.txt"):
    T, I, R, B, P, regs = map(int, line.split())
    if T * I * 8 != N: continue
    name = f"_Z3rmsILi{T}ELi{I}ELi{R}ELi{B}ELi{P}EEvPK5uint4S2_PS0_yy"
    f = ctypes.c_void_p(); chk(cu.cuModuleGetFunction(ctypes.byref(f), mod, name.encode()), name)
    vals = [ctypes.c_uint64(a) for a in (x.data_ptr(), w.data_ptr(), y.data_ptr(), M, N)]
    ptrs = (ctypes.c_void_p * 5)(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
    grid = (M + R - 1) // R
    def go(f=f, grid=grid, T=T, ptrs=ptrs):
        chk(cu.cuLaunchKernel(f, grid, 1, 1, T, 1, 1, 0, ctypes.c_void_p(stream), ptrs, None), "launch")
    y.fill_(float("nan")); go(); torch.cuda.synchronize()
    err = ((y.float() - ref).abs() / (ref.abs() + 1e-2)).max().item()
    rows.append((f"{T} x {I * 8} el, {R} rows/thread, min {B}, policy {P}", regs, err, go, vals, ptrs))
c = torch.compile(lambda x, w: F.rms_norm(x, (N,), w, 1e-6), mode="max-autotune-no-cudagraphs"); c(x, w)
for tag in "AB":
    for name, regs, err, go, *_ in rows:
        us = bench(go)
        print(f"{tag} {name:42} regs {regs:3} err {err:.1e} {us:8.2f} us {100 * nbytes / us / 1e3 / copy:5.1f}%")
    us = bench(lambda: c(x, w))
    print(f"{tag} {'torch.compile':42} {'':18} {us:8.2f} us {100 * nbytes / us / 1e3 / copy:5.1f}%")
