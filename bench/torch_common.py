"""What the torch side of the benchmarks shares: timing, the copy baseline, one case through
eager and torch.compile(mode="max-autotune-no-cudagraphs"), and the report.

Times are medians of CUDA events around each run, timed as triton.testing.do_bench does but
with the L2 flushed by a read (bench(), l2_flush()); bytes
moved = each input read once + each output written once, as Kiln counts them. Before a case
is timed, eager and torch.compile results are checked against the same function run in
float64 (check below): a wrong result raises instead of printing a time."""
import json
import statistics

import torch


_flush = []


def l2_flush():
    """What runs before each timed repetition, as in Kiln's harness (autotune/l2_flush.h): a read
    of twice the L2, which evicts the case's data and leaves no dirty lines for the timed kernel
    to write back (triton.testing.do_bench's write of 256 MB does)."""
    if not _flush:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2 = getattr(props, "L2_cache_size", 0)
        size = max(32 << 20, 2 * l2) if l2 > 0 else 256 << 20
        _flush.append(torch.zeros(size // 4, dtype=torch.int32, device="cuda"))
    _flush[0].sum()


def bench(fn, warmup_ms=50, rep_ms=300):
    """The median time of fn() in seconds, as triton.testing.do_bench measures it (CUDA events
    around each call, about warmup_ms of calls first and rep_ms timed) but with l2_flush()."""
    fn()
    l2_flush()  # its buffer allocated outside the estimate
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        l2_flush()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-3)
    for _ in range(max(1, int(warmup_ms / estimate_ms))):
        fn()
    n = max(1, int(rep_ms / estimate_ms))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        l2_flush()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)) * 1e-3


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
