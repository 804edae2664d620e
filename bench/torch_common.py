"""What the torch side of the benchmarks shares: timing, the copy baseline, one case through
eager and torch.compile(mode="max-autotune-no-cudagraphs"), and the report.

Times are medians from triton.testing.do_bench (CUDA events, L2 flushed between runs); bytes
moved = each input read once + each output written once, as Kiln counts them. Before a case
is timed, eager and torch.compile results are checked against the same function run in
float64 (check below): a wrong result raises instead of printing a time."""
import json

import torch
import triton.testing


def bench(fn):
    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median") * 1e-3


def copy_gbps():
    """Peak device-to-device copy bandwidth: 1 GiB of f32 read and 1 GiB written (a smaller
    copy runs below the peak); bytes read plus written over the time."""
    n = 256 * 1024 * 1024
    src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_(-2, 2)
    dst = torch.empty_like(src)
    t = bench(lambda: dst.copy_(src))
    return 2 * src.numel() * 4 / t / 1e9


def check(name, label, got, want):
    """got within the output dtype's rounding (bf16 2^-7, f16 2^-10, f32 1e-5 relative) plus
    1e-3 (bf16/f16) or 1e-5 (f32) of the largest |want|, the scale an accumulation's error
    lives in; NaN/inf where want has them. Tuples (several outputs) are checked element by
    element."""
    if isinstance(got, (tuple, list)):
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            check(f"{name}[{i}]", label, g, w)
        return
    rtol, atol = {torch.bfloat16: (2**-7, 1e-3), torch.float16: (2**-10, 1e-3)}.get(
        got.dtype, (1e-5, 1e-5))
    scale = want[want.isfinite()].abs().max().item() if want.isfinite().any() else 0.0
    torch.testing.assert_close(got.double(), want, rtol=rtol, atol=atol * scale + 1e-30,
                               equal_nan=True, msg=lambda m: f"{name} ({label}): {m}")


def _double(t):
    return tuple(x.double() for x in t) if isinstance(t, (tuple, list)) else t.double()


def case(name, args, fn, nbytes, reference=None, verify=None):
    """Times fn(*args) eager and compiled after checking both: against `reference` (default:
    fn on the float arguments in float64) with check(), or by verify(name, label, result) for
    a case no float64 run reproduces (random numbers)."""
    out = {"case": name, "bytes": nbytes}
    if verify is None:
        want = _double((reference or (lambda *a: fn(*[x.double() if x.is_floating_point()
                                                       else x for x in a])))(*args))
        verify = lambda n, label, got: check(n, label, got, want)
    verify(name, "eager", fn(*args))
    out["eager_s"] = bench(lambda: fn(*args))
    compiled = torch.compile(fn, mode="max-autotune-no-cudagraphs")
    verify(name, "torch.compile", compiled(*args))
    out["compile_s"] = bench(lambda: compiled(*args))
    out["eager_gbps"] = nbytes / out["eager_s"] / 1e9
    out["compile_gbps"] = nbytes / out["compile_s"] / 1e9
    return out


def report(path, copy, cases):
    """Writes the JSON results to `path` and prints one line per case."""
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "copy_gbps": copy, "cases": cases}
    json.dump(results, open(path, "w"), indent=2)
    print(f"torch copy {copy:.0f} GB/s")
    for c in cases:
        print(f"torch {c['case']:<28} eager {c['eager_s']*1e6:9.1f} us {c['eager_gbps']:7.0f} GB/s"
              f"   compile {c['compile_s']*1e6:9.1f} us {c['compile_gbps']:7.0f} GB/s")
