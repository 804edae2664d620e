"""Times the cubins mk.py built and torch.compile's rmsnorm and layernorm with one timer
(triton's do_bench, L2 flushed, median) in one process, each cubin twice (A and B rows),
after checking its output against torch in f32.

    python3 bench/experiments/occupancy/run.py DIR_FROM_MK"""
import ctypes, json, sys
import torch, torch.nn.functional as F
import triton.testing
cu = ctypes.CDLL("libcuda.so.1")
def chk(r, what):
    if r: raise RuntimeError(f"{what}: CUDA error {r}")
def bench(fn): return triton.testing.do_bench(fn, warmup=50, rep=400, return_mode="median") * 1e3
torch.manual_seed(0)
M, N = 32768, 4096
dev, bf16 = "cuda", torch.bfloat16
x = torch.randn(M, N, device=dev, dtype=bf16); w = torch.randn(N, device=dev, dtype=bf16); b = torch.randn(N, device=dev, dtype=bf16)
y = torch.empty_like(x)
nbytes = 2 * 2 * M * N
ref = {"rms": F.rms_norm(x.float(), (N,), w.float(), 1e-6), "ln": F.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-5)}
d = sys.argv[1]
meta = json.load(open(f"{d}/meta.json"))
stream = torch.cuda.current_stream().cuda_stream
rows = []
src = torch.empty(3 * (1 << 25), device=dev, dtype=torch.float32); dst = torch.empty_like(src)
t = bench(lambda: dst.copy_(src)); copy = 2 * src.numel() * 4 / t / 1e3
print(f"copy {copy:.0f} GB/s", flush=True)
keep = []
for name, m in meta.items():
    mod = ctypes.c_void_p(); data = open(f"{d}/{name}.cubin", "rb").read()
    chk(cu.cuModuleLoadData(ctypes.byref(mod), data), "load")
    f = ctypes.c_void_p(); chk(cu.cuModuleGetFunction(ctypes.byref(f), mod, m["entry"].encode()), "fn")
    kind = name.split("_")[0]
    args = [x.data_ptr(), w.data_ptr()] + ([b.data_ptr()] if kind == "ln" else []) + [y.data_ptr(), M, N]
    vals = [ctypes.c_uint64(a) for a in args]
    ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
    keep.append((mod, vals, ptrs))
    grid = (M + m["rows_per_block"] - 1) // m["rows_per_block"]
    def go(f=f, grid=grid, blk=m["block"], ptrs=ptrs):
        chk(cu.cuLaunchKernel(f, grid, 1, 1, blk, 1, 1, 0, ctypes.c_void_p(stream), ptrs, None), "launch")
    y.fill_(float("nan")); go(); torch.cuda.synchronize()
    err = ((y.float() - ref[kind]).abs() / (ref[kind].abs() + 1e-2)).max().item()
    rows.append((name, m, err, go))
def timing(tag):
    for name, m, err, go in rows:
        us = bench(go)
        print(f"{tag} {name:18} regs {m['regs']:3} spill {m['spill']:3} err {err:.2e} {us:8.2f} us {nbytes/us/1e3:6.0f} GB/s {100*nbytes/us/1e3/copy:5.1f}%", flush=True)
timing("A")
for kind, fn, a in [("rms", lambda x, w: F.rms_norm(x, (N,), w, 1e-6), (x, w)), ("ln", lambda x, w, b: F.layer_norm(x, (N,), w, b, 1e-5), (x, w, b))]:
    c = torch.compile(fn, mode="max-autotune-no-cudagraphs"); c(*a)
    us = bench(lambda: c(*a))
    print(f"{kind+'_torch.compile':18} {'':24} {us:8.2f} us {nbytes/us/1e3:6.0f} GB/s {100*nbytes/us/1e3/copy:5.1f}%", flush=True)
timing("B")
