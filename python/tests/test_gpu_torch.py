"""The kiln package with real torch tensors on a GPU: outputs allocated for the caller, the
current torch stream and explicit streams, CUDA graph capture and replay, several threads,
__cuda_array_interface__ objects over torch memory, and every kind of bad input (a CPU tensor,
a wrong dtype, a non-contiguous view, a wrong rank, inconsistent shapes, an output aliasing an
input) raising a Python exception with Kiln's message while the process and its CUDA context
live on."""
import threading

import pytest

from conftest import REPO, skip_or_fail

try:
    import torch
except ImportError:
    skip_or_fail("torch is not installed: the GPU tests use torch tensors")
if not torch.cuda.is_available():
    skip_or_fail("torch.cuda.is_available() is False: no CUDA GPU or driver")

import kiln  # noqa: E402
from kiln import KilnError  # noqa: E402


@pytest.fixture(scope="module")
def b():
    """One bundle with the kernels these tests use (compiled once, cached)."""
    spec = "\n".join((REPO / "examples" / f"{n}.kiln").read_text()
                     for n in ("add", "rmsnorm", "mean_var", "global_max_norm", "rowsum"))
    return kiln.compile(spec)


def rmsnorm_ref(x, w):
    x64 = x.double()
    return (x64 * torch.rsqrt((x64 * x64).mean(1, keepdim=True) + 1e-6) * w.double())


def close_bf16(got, want):
    # bf16 output: one rounding (2^-8 relative) plus f32 arithmetic; see test_gpu_kernels.
    torch.testing.assert_close(got.double(), want, rtol=2 ** -7, atol=1e-5)


def test_outputs_allocated_and_returned(b):
    x = torch.randn(37, 1001, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1001, device="cuda", dtype=torch.bfloat16)
    y = b.rmsnorm(x, w)
    assert y.shape == (37, 1001) and y.dtype == torch.bfloat16 and y.device == x.device
    close_bf16(y, rmsnorm_ref(x, w))
    m = torch.randn(5, 77, device="cuda")
    mean, var = b.mean_var(m)
    torch.testing.assert_close(mean, m.mean(1))
    torch.testing.assert_close(var, m.var(1, correction=0), rtol=1e-5, atol=1e-6)
    # Given outputs are written and returned as given.
    z = torch.full((1001,), float("nan"), device="cuda")
    a = torch.randn(1001, device="cuda")
    assert b.add(a, a, z) is z
    torch.testing.assert_close(z, a + a)


def test_current_stream_and_explicit_stream(b):
    s = torch.cuda.Stream()
    x = torch.randn(4099, device="cuda")
    y = torch.randn(4099, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)  # keeps s busy: a launch on another stream would finish first
        z = torch.full_like(x, float("nan"))
        b.add(x, y, z)
        done = torch.cuda.Event()
        done.record(s)
    done.synchronize()
    torch.testing.assert_close(z, x + y)
    z2 = torch.empty_like(x)
    b.add(x, y, z2, stream=s)  # an object with .cuda_stream
    b.add(x, y, z2, stream=s.cuda_stream)  # a raw handle
    s.synchronize()
    torch.testing.assert_close(z2, x + y)


def test_cuda_graph_capture_and_replay(b):
    x = torch.randn(129, 4097, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4097, device="cuda", dtype=torch.bfloat16)
    y = torch.full_like(x, float("nan"))
    g32 = torch.randn(33, 70001, device="cuda")  # a kernel with buffers between its steps
    gy = torch.full_like(g32, float("nan"))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside capture, as torch asks
        b.rmsnorm(x, w, y)
        b.global_max_norm(g32, gy)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        b.rmsnorm(x, w, y)
        b.global_max_norm(g32, gy)
        allocated = b.add(g32[0].contiguous(), g32[1].contiguous())  # output from the graph pool
    y.fill_(float("nan"))
    gy.fill_(float("nan"))
    for _ in range(2):
        x.copy_(torch.randn_like(x))
        g32.copy_(torch.randn_like(g32))
        graph.replay()
        torch.cuda.synchronize()
        close_bf16(y, rmsnorm_ref(x, w))
        torch.testing.assert_close(gy, g32 / g32.max())
        torch.testing.assert_close(allocated, g32[0] + g32[1])


def test_kept_scratch_trimmed_between_launches_and_turned_off(b):
    # global_max_norm's row maxima go through a buffer and 3 rows of a million split over
    # blocks through a workspace: scratch the stream keeps. Trimmed while launches that use it
    # are still enqueued (freed after them), and with keeping off, the results hold.
    g = torch.randn(1000, 1001, device="cuda")
    r = torch.randn(3, 1_000_003, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    outs = []
    with torch.cuda.stream(s):
        for _ in range(3):
            outs.append((b.global_max_norm(g), b.rowsum(r)))
            assert kiln.cached_scratch()[0] >= 1
            assert kiln.trim_scratch() > 0
            outs.append((b.global_max_norm(g), b.rowsum(r)))
        kiln.set_keep_scratch(False)
        try:
            before = kiln.cached_scratch()
            outs.append((b.global_max_norm(g), b.rowsum(r)))
            assert kiln.cached_scratch() == before  # taken from the pool and given back
        finally:
            kiln.set_keep_scratch(True)
    s.synchronize()
    for gy, rs in outs:
        torch.testing.assert_close(gy, g / g.max())
        torch.testing.assert_close(rs, r.sum(1), rtol=1e-5, atol=1e-2)


def test_several_threads_on_their_own_streams(b):
    x = torch.randn(1000, 333, device="cuda")
    want = x.sum(1)
    torch.cuda.synchronize()  # x is read from other streams
    errors = []

    def work():
        try:
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                for _ in range(20):
                    out = torch.full((1000,), float("nan"), device="cuda")
                    b.rowsum(x, out)
                s.synchronize()
                torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-4)
        except Exception as e:  # reported below
            errors.append(e)
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


def test_cuda_array_interface_objects(b):
    x = torch.randn(513, device="cuda")
    y = torch.randn(513, device="cuda")
    z = torch.full_like(x, float("nan"))

    class View:
        def __init__(self, t):
            self.__cuda_array_interface__ = t.__cuda_array_interface__
    b.add(View(x), View(y), View(z))
    torch.cuda.synchronize()
    torch.testing.assert_close(z, x + y)


def refused(exc, message, fn, *args, **kwargs):
    with pytest.raises(exc) as e:
        fn(*args, **kwargs)
    assert str(e.value) == message
    assert isinstance(e.value, KilnError)


def test_bad_torch_inputs_raise_kiln_errors(b):
    x = torch.randn(8, 16, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(16, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    refused(ValueError, "rmsnorm: argument 1 (x): a CPU tensor; Kiln kernels take CUDA tensors "
            "on cuda:0 (the bundle's device)", b.rmsnorm, x.cpu(), w, y)
    refused(TypeError, "rmsnorm: argument 1 (x): dtype float32, expected bf16 (bf16[M, N])",
            b.rmsnorm, x.float(), w, y)
    refused(ValueError, "rmsnorm: argument 1 (x): not contiguous (shape [16, 8], strides "
            "[1, 16]); Kiln kernels take C-contiguous tensors: pass .contiguous() (or declare x "
            "strided in the spec)",
            b.rmsnorm, x.t(), w, y.t())
    refused(ValueError, "rmsnorm: argument 2 (w): rank 2 (shape [1, 16]), expected rank 1 "
            "(bf16[N])", b.rmsnorm, x, w[None, :], y)
    refused(ValueError, "rmsnorm: argument 2 (w): dim 0 gives N = 15, but argument 1 (x) gave "
            "N = 16 (w: bf16[N])", b.rmsnorm, x, w[:15], y)
    refused(TypeError, "rmsnorm: missing argument 2 (w: bf16[N])", b.rmsnorm, x)
    a = torch.randn(64, device="cuda")
    refused(KilnError, "add: argument 3 (z) overlaps argument 1 (x); outputs may not alias "
            "other arguments", b.add, a, a.clone(), a)
    refused(ValueError, "add: symbol N = 0 must be > 0 (Kiln kernels take no empty tensors)",
            b.add, a[:0], a[:0])
    if torch.cuda.device_count() > 1:
        refused(ValueError, "add: argument 1 (x): on cuda:1, the bundle is loaded on cuda:0",
                b.add, a.to("cuda:1"), a)
    # The context lives on: a good launch afterwards is right.
    out = b.rmsnorm(x, w)
    torch.cuda.synchronize()
    close_bf16(out, rmsnorm_ref(x, w))


def test_tune_then_launch_the_winners(b, tmp_path):
    """kiln.tune runs `kiln tune` on the bundle (precompiled variants only, to stay quick),
    the cache file it wrote is read back, and the bundle launches with its winners."""
    # Tune a copy: kiln tune may add variants to the bundle it tunes.
    import shutil
    bundle_dir = tmp_path / "bundle"
    shutil.copytree(b.path, bundle_dir)
    cache = kiln.tune(bundle_dir, [{"N": 100003}], tmp_path / "tuned.json", kernel="add",
                      no_descent=True)
    assert cache.path == tmp_path / "tuned.json" and cache.path.is_file()
    assert cache.entries, cache.data
    assert kiln.read_cache(cache.path).data == cache.data
    tuned = kiln.load(bundle_dir)
    tuned.use_cache(cache.path)
    x = torch.randn(100003, device="cuda")
    z = torch.full_like(x, float("nan"))
    tuned.add(x, x, z)
    torch.cuda.synchronize()
    torch.testing.assert_close(z, x + x)


@pytest.mark.parametrize("kernel,dtype", [("matmul", torch.bfloat16), ("matmul_nt", torch.float32)])
@pytest.mark.parametrize("shift", [0, 1, 8])
def test_contraction_output_at_any_address(kernel, dtype, shift):
    """The default contraction stores its output through a TMA tensor map, which needs a
    16-byte aligned address: at a shift of 1 or 8 elements into a buffer (2 or 32 bytes for
    bf16, 4 or 32 bytes for f32) the runtime passes no map and the kernel stores from registers
    instead; either way every element is written (the buffer is NaN first, its ends checked
    untouched)."""
    mm = kiln.compile(REPO / "examples" / "matmul.kiln", default_only=True)
    m, n, k = 300, 520, 200  # edge tiles in both directions
    ins = torch.float16 if kernel == "matmul_nt" else torch.bfloat16
    a = torch.randn(m, k, device="cuda", dtype=ins)
    w = torch.randn((n, k) if kernel == "matmul_nt" else (k, n), device="cuda", dtype=ins)
    buf = torch.full((m * n + 16,), float("nan"), device="cuda", dtype=dtype)
    c = buf[shift:shift + m * n].view(m, n)
    assert getattr(mm, kernel)(a, w, c) is c
    torch.cuda.synchronize()
    want = (a.double() @ (w.double().t() if kernel == "matmul_nt" else w.double()))
    torch.testing.assert_close(c.double(), want, rtol=2 ** -7, atol=1e-2)
    assert torch.isnan(buf[:shift]).all() and torch.isnan(buf[shift + m * n:]).all()
