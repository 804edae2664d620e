"""The same pointwise kernels in PyTorch (eager and torch.compile), timed on the same GPU in
the same run as Kiln, with the device-to-device copy bandwidth they are judged against.

    python3 bench/torch_pointwise.py OUT.json

Times are medians from triton.testing.do_bench (CUDA events, L2 flushed between runs);
bytes moved = each input read once + each output written once."""
import json
import sys

import torch
import triton.testing


def bench(fn):
    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median") * 1e-3


def case(name, make, fn, nbytes):
    args = make()
    out = {"case": name, "bytes": nbytes}
    out["eager_s"] = bench(lambda: fn(*args))
    compiled = torch.compile(fn, mode="max-autotune-no-cudagraphs")
    compiled(*args)
    out["compile_s"] = bench(lambda: compiled(*args))
    return out


def main():
    dev = "cuda"
    torch.manual_seed(0)
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    n = 64 * 1024 * 1024
    src = torch.empty(n * 3 // 2, dtype=torch.float32, device=dev).uniform_(-2, 2)
    dst = torch.empty_like(src)
    t = bench(lambda: dst.copy_(src))
    results["copy_gbps"] = 2 * src.numel() * 4 / t / 1e9
    cases = [
        case("add f32 64M", lambda: (torch.rand(n, device=dev) - 0.5, torch.rand(n, device=dev) - 0.5),
             lambda x, y: x + y, 3 * n * 4),
        case("bias_gelu bf16 8192x8192",
             lambda: (torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16),
                      torch.randn(8192, device=dev, dtype=torch.bfloat16)),
             lambda x, b: torch.nn.functional.gelu(x + b), 2 * 8192 * 8192 * 2 + 8192 * 2),
        case("swiglu bf16 8192x8192",
             lambda: (torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16),
                      torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)),
             lambda a, b: torch.nn.functional.silu(a) * b, 3 * 8192 * 8192 * 2),
    ]
    for c in cases:
        c["eager_gbps"] = c["bytes"] / c["eager_s"] / 1e9
        c["compile_gbps"] = c["bytes"] / c["compile_s"] / 1e9
    results["cases"] = cases
    json.dump(results, open(sys.argv[1], "w"), indent=2)
    print(f"torch copy {results['copy_gbps']:.0f} GB/s")
    for c in cases:
        print(f"torch {c['case']:<28} eager {c['eager_s']*1e6:9.1f} us {c['eager_gbps']:7.0f} GB/s"
              f"   compile {c['compile_s']*1e6:9.1f} us {c['compile_gbps']:7.0f} GB/s")


if __name__ == "__main__":
    main()
