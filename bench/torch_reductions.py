"""The reductions of bench/reductions.sh in PyTorch (eager and torch.compile with
mode="max-autotune-no-cudagraphs"), timed on the same GPU in the same run as Kiln, with the
device-to-device copy bandwidth they are judged against.

    python3 bench/torch_reductions.py OUT.json

Times are medians from triton.testing.do_bench (CUDA events, L2 flushed between runs); bytes
moved = each input read once + each output written once, as Kiln counts them."""
import json
import sys

import torch
import torch.nn.functional as F
import triton.testing


def bench(fn):
    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median") * 1e-3


def case(name, args, fn, nbytes):
    out = {"case": name, "bytes": nbytes}
    out["eager_s"] = bench(lambda: fn(*args))
    compiled = torch.compile(fn, mode="max-autotune-no-cudagraphs")
    compiled(*args)
    out["compile_s"] = bench(lambda: compiled(*args))
    out["eager_gbps"] = nbytes / out["eager_s"] / 1e9
    out["compile_gbps"] = nbytes / out["compile_s"] / 1e9
    return out


def main():
    dev, bf16, f32 = "cuda", torch.bfloat16, torch.float32
    torch.manual_seed(0)
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    n = 64 * 1024 * 1024
    src = torch.empty(n * 3 // 2, dtype=f32, device=dev).uniform_(-2, 2)
    dst = torch.empty_like(src)
    t = bench(lambda: dst.copy_(src))
    results["copy_gbps"] = 2 * src.numel() * 4 / t / 1e9
    del src, dst

    def randn(*shape, dtype):
        return torch.randn(*shape, device=dev, dtype=dtype)

    cases = []
    M, N = 32768, 4096
    cases.append(case("rowsum f32 32768x4096", (randn(M, N, dtype=f32),), lambda x: x.sum(1),
                      4 * M * N + 4 * M))
    M, N = 4096, 32768
    cases.append(case("colsum f32 4096x32768", (randn(M, N, dtype=f32),), lambda x: x.sum(0),
                      4 * M * N + 4 * N))
    for M, N in [(32768, 1024), (8192, 8192)]:
        cases.append(case(f"softmax bf16 {M}x{N}", (randn(M, N, dtype=bf16),),
                          lambda x: torch.softmax(x, -1), 2 * 2 * M * N))
    M, N = 32768, 4096
    cases.append(case("layernorm bf16 32768x4096",
                      (randn(M, N, dtype=bf16), randn(N, dtype=bf16), randn(N, dtype=bf16)),
                      lambda x, w, b: F.layer_norm(x, (N,), w, b, 1e-5), 2 * 2 * M * N + 4 * N))
    cases.append(case("rmsnorm bf16 32768x4096", (randn(M, N, dtype=bf16), randn(N, dtype=bf16)),
                      lambda x, w: F.rms_norm(x, (N,), w, 1e-6), 2 * 2 * M * N + 2 * N))
    results["cases"] = cases
    json.dump(results, open(sys.argv[1], "w"), indent=2)
    print(f"torch copy {results['copy_gbps']:.0f} GB/s")
    for c in cases:
        print(f"torch {c['case']:<28} eager {c['eager_s']*1e6:9.1f} us {c['eager_gbps']:7.0f} GB/s"
              f"   compile {c['compile_s']*1e6:9.1f} us {c['compile_gbps']:7.0f} GB/s")


if __name__ == "__main__":
    main()
