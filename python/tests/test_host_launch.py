"""The kiln package against the fake CUDA driver: loading bundles, the kernels' signatures,
symbol inference, every bad-input message, launches reaching the driver, compile caching.
Kernels do not run (the fake driver records launches); what is tested is everything the
package and the runtime do around them."""
import ctypes
import inspect
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FAKE = os.environ.get("KILN_FAKE_DRIVER")
if not FAKE or not Path(FAKE).is_file():
    pytest.fail(f"KILN_FAKE_DRIVER must name the fake driver library "
                f"(build/tests/libkiln_fake_cuda.so), got {FAKE!r}", pytrace=False)
os.environ["KILN_CUDA_DRIVER"] = FAKE

import kiln  # noqa: E402
from kiln import KilnError, KilnTypeError, KilnValueError  # noqa: E402

BF16_TYPESTR = "<V2"


class Fake:
    """The fake driver's recordings (kiln_fake_*) and its memory (host memory)."""

    def __init__(self):
        self.lib = ctypes.CDLL(FAKE)  # the same handle as the runtime's
        self.lib.kiln_fake_launch.restype = ctypes.c_char_p
        self.lib.kiln_fake_launch.argtypes = [ctypes.c_int] + [ctypes.POINTER(ctypes.c_uint)] * 3
        self.lib.kiln_fake_launch_arg.restype = ctypes.c_uint64
        self.lib.kiln_fake_launch_arg.argtypes = [ctypes.c_int, ctypes.c_int]
        self.lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        self.lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
        self.allocations = []

    def reset(self, arg_count=0):
        self.lib.kiln_fake_reset()
        self.lib.kiln_fake_set_arg_count(arg_count)

    def launches(self) -> int:
        return self.lib.kiln_fake_launch_count()

    def entry(self, i) -> str:
        g, b, s = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
        return self.lib.kiln_fake_launch(i, ctypes.byref(g), ctypes.byref(b),
                                         ctypes.byref(s)).decode()

    def arg(self, i, a) -> int:
        return self.lib.kiln_fake_launch_arg(i, a)

    def alloc(self, nbytes) -> int:
        p = ctypes.c_uint64()
        assert self.lib.cuMemAlloc_v2(ctypes.byref(p), max(nbytes, 1)) == 0
        self.allocations.append(p.value)
        return p.value

    def free_all(self):
        for p in self.allocations:
            self.lib.cuMemFree_v2(p)
        self.allocations = []


class Dev:
    """A device array as a foreign library would expose it: __cuda_array_interface__ only."""

    def __init__(self, fake, shape, typestr="<f4", itemsize=4, ptr=None, strides=None):
        n = 1
        for s in shape:
            n *= s
        self.ptr = ptr if ptr is not None else fake.alloc(n * itemsize)
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (self.ptr, False), "version": 3,
                                         "strides": strides}


@pytest.fixture(scope="session")
def cache(tmp_path_factory):
    """The bundle cache: $KILN_CACHE_DIR (CTest keeps one in the build tree, so reruns are
    quick), else a fresh temporary directory."""
    d = os.environ.get("KILN_CACHE_DIR")
    if not d:
        d = str(tmp_path_factory.mktemp("kiln_cache"))
        os.environ["KILN_CACHE_DIR"] = d
    return Path(d)


@pytest.fixture(scope="session")
def fake():
    f = Fake()
    yield f
    f.free_all()


def bundle_of(example, cache):
    return kiln.compile(REPO / "examples" / f"{example}.kiln", archs=["sm_90"], default_only=True)


@pytest.fixture(scope="session")
def add(cache):
    return bundle_of("add", cache)


@pytest.fixture(scope="session")
def rowsum(cache):
    return bundle_of("rowsum", cache)


# ---- loading and describing ---------------------------------------------------------------

def test_load_lists_kernels_with_attribute_and_item_access(add, cache):
    assert list(add) == ["add"]
    assert "add" in add
    assert add.add is add["add"]
    assert add.device == 0 and add.device_name  # the fake driver's device
    assert repr(add).startswith("<kiln.Bundle ")
    with pytest.raises(AttributeError, match=r"has no kernel 'nope' \(its kernels: add\)"):
        add.nope
    with pytest.raises(KeyError, match="its kernels: add"):
        add["nope"]
    again = kiln.load(add.path)
    assert list(again.kernels) == ["add"]


def test_load_missing_bundle_is_a_kiln_error(tmp_path):
    with pytest.raises(KilnError, match="nope: bundle directory not found"):
        kiln.load(tmp_path / "nope")
    with pytest.raises(KilnValueError, match="device must be a CUDA device ordinal"):
        kiln.load(tmp_path, device=-1)


def test_signature_and_docstring(add, rowsum):
    sig = inspect.signature(add.add)
    assert list(sig.parameters) == ["x", "y", "z", "stream", "N"]
    P = inspect.Parameter
    assert sig.parameters["x"].default is P.empty
    assert sig.parameters["z"].default is None
    assert sig.parameters["stream"].kind is P.KEYWORD_ONLY
    assert "f32[N]" in str(sig.parameters["x"].annotation)
    assert "f32[N]" in str(sig.return_annotation)
    assert add.add.__name__ == "add"
    doc = add.add.__doc__
    assert "Kiln kernel add(x: f32[N], y: f32[N]) -> (z: f32[N])" in doc
    assert "    x: f32[N]" in doc and "    z: f32[N]" in doc and "Symbols" in doc
    k = add.add.kernel
    assert [p.name for p in k.inputs] == ["x", "y"] and [p.name for p in k.outputs] == ["z"]
    assert k.symbols == ("N",)
    r = rowsum.rowsum.kernel
    assert r.signature_text() == "rowsum(x: f32[M, N]) -> (s: f32[M])"
    assert [p.dims for p in r.params] == [("M", "N"), ("M",)]


def test_every_example_loads_with_signatures(cache):
    specs = sorted((REPO / "examples").glob("*.kiln"))
    assert specs
    kernels = 0
    for spec in specs:
        b = kiln.compile(spec, archs=["sm_90"], default_only=True)
        text = spec.read_text()
        for name, k in b.kernels.items():
            kernels += 1
            assert f"kernel {name}(" in text
            sig = inspect.signature(b[name])
            assert [p for p in sig.parameters][:len(k.params)] == [p.name for p in k.params]
            for p in k.params:
                assert p.dtype in ("f32", "f16", "bf16", "i32", "i64", "u32")
                assert f"{p.name}: {p.type_text()}" in text.replace("  ", " "), (name, p)
    assert kernels >= 30


# ---- launching ----------------------------------------------------------------------------

def test_launch_reaches_the_driver_with_the_pointers_and_symbols(add, fake):
    x, y, z = (Dev(fake, (1000,)) for _ in range(3))
    fake.reset(arg_count=4)  # x, y, z, N: the fake reads no more than the launch has
    out = add.add(x, y, z)
    assert out is z
    assert fake.launches() == 1
    assert fake.entry(0).startswith("add")
    assert [fake.arg(0, a) for a in range(4)] == [x.ptr, y.ptr, z.ptr, 1000]
    # Keywords, a stream as an int and as an object with .cuda_stream.
    add.add(y=y, x=x, z=z, stream=0)

    class S:
        cuda_stream = 0
    add.add(x, y, z=z, stream=S())
    add.add(x, y, z, N=1000)
    assert fake.launches() == 4


def test_kept_scratch_is_trimmed_and_turned_off(cache, fake):
    # global_max_norm's row maxima go through a buffer: scratch memory its stream keeps.
    b = bundle_of("global_max_norm", cache)
    x, y = Dev(fake, (1000, 33)), Dev(fake, (1000, 33))
    kiln.trim_scratch()  # what earlier tests' launches left
    assert kiln.cached_scratch() == (0, 0)
    b.global_max_norm(x, y)
    streams, nbytes = kiln.cached_scratch()
    assert streams == 1 and nbytes >= 1000 * 4
    assert kiln.trim_scratch() == nbytes
    assert kiln.cached_scratch() == (0, 0)
    kiln.set_keep_scratch(False)
    try:
        b.global_max_norm(x, y)
        assert kiln.cached_scratch() == (0, 0)  # taken from the pool and given back
    finally:
        kiln.set_keep_scratch(True)
    b.global_max_norm(x, y)
    assert kiln.cached_scratch()[0] == 1


def test_strided_inputs_pass_their_strides(cache, fake):
    b = bundle_of("strided", cache)
    k = b.add_strided
    assert [p.strided for p in k.kernel.params] == [True, True, False]
    assert "a: f32[M, N] strided" in k.kernel.signature_text()
    M, N = 50, 7
    a = Dev(fake, (M, N), strides=(4, 4 * M))  # transposed: byte strides of a [N, M] tensor
    bias = Dev(fake, (M, N), strides=(0, 4))   # a row expanded over M
    y = Dev(fake, (M, N))
    fake.reset(arg_count=9)
    k(a, bias, y)
    assert fake.launches() == 1
    assert [fake.arg(0, i) for i in range(3, 9)] == [M, N, 1, M, 0, 1]
    assert fake.entry(0) == "add_strided_s0_v1"  # the strided variant (default-only bundle)
    # Contiguous arrays (no strides, or the row-major ones) take the default with their strides.
    k(Dev(fake, (M, N)), Dev(fake, (M, N), strides=(4 * N, 4)), y)
    assert [fake.arg(1, i) for i in range(5, 9)] == [N, 1, N, 1]
    assert fake.entry(1) == "add_strided_s0_v0"
    # A non-strided parameter still refuses a view; strides must be whole elements.
    refused(fake, ValueError,
            "add_strided: argument 3 (y): not contiguous (shape [50, 7], byte strides [4, 200]); "
            "Kiln kernels take C-contiguous tensors: pass .contiguous() (or declare y strided in "
            "the spec)", k, a, bias, Dev(fake, (M, N), strides=(4, 200)))
    refused(fake, ValueError,
            "add_strided: argument 1 (a): byte strides [6, 200] are not multiples of its 4-byte "
            "elements", k, Dev(fake, (M, N), strides=(6, 200)), bias, y)


def test_scalars_are_passed_by_value(cache, fake):
    b = bundle_of("scalars", cache)
    k = b.affine_scalars
    assert [p.name for p in k.kernel.params if p.scalar] == ["a", "h", "g", "k", "n", "s"]
    assert not k.kernel.params[1].scalar  # c: f32[] keeps its pointer
    assert "a: f32, h: bf16" in k.kernel.signature_text()
    ann = inspect.signature(k).parameters["a"].annotation
    assert ann.startswith("float") and "by value" in ann
    x, c, y, z, m = (Dev(fake, s, t, n) for s, t, n in
                     [((1000,), "<f4", 4), ((), "<f4", 4), ((1000,), "<f4", 4),
                      ((1000,), "<i8", 8), ((1000,), "<u4", 4)])
    fake.reset(arg_count=12)
    k(x, c, 0.5, 2.0, 0.25, -7, 4000000000, -(1 << 40), y, z, m)
    assert fake.launches() == 1
    args = [fake.arg(0, a) for a in range(12)]
    assert args[0] == x.ptr and args[1] == c.ptr and args[8] == y.ptr
    assert args[2:8] == [0x3F000000, 0x4000, 0x3400, 0xFFFFFFF9, 4000000000,
                         (1 << 64) - (1 << 40)]
    assert args[11] == 1000
    # bf16 rounds to nearest even: 1 + 2^-8 + 2^-9 is above the halfway point, 1 + 2^-8 ties
    # to even (1.0).
    k(x, c, 0.5, 1 + 2**-8 + 2**-9, 0.25, 1, 1, 1, y, z, m)
    assert fake.arg(1, 3) == 0x3F81
    k(x, c, 0.5, 1 + 2**-8, 0.25, 1, 1, 1, y, z, m)
    assert fake.arg(2, 3) == 0x3F80
    with pytest.raises(KilnTypeError, match=r"argument 6 \(k: i32\): expected an int, got float"):
        k(x, c, 0.5, 2.0, 0.25, 1.5, 1, 1, y, z, m)
    with pytest.raises(KilnValueError, match=r"argument 7 \(n: u32\): -1 is out of range"):
        k(x, c, 0.5, 2.0, 0.25, 1, -1, 1, y, z, m)
    with pytest.raises(KilnTypeError, match=r"argument 3 \(a: f32\): expected a number, got Dev"):
        k(x, c, x, 2.0, 0.25, 1, 1, 1, y, z, m)
    with pytest.raises(KilnTypeError, match=r"argument 3 \(a: f32\): expected a number, got bool"):
        k(x, c, True, 2.0, 0.25, 1, 1, 1, y, z, m)
    assert fake.launches() == 3


def test_symbols_are_inferred_from_shapes(rowsum, fake):
    x, s = Dev(fake, (33, 7)), Dev(fake, (33,))
    fake.reset(arg_count=4)  # x, s, M, N
    rowsum.rowsum(x, s)
    k = rowsum.rowsum.kernel
    syms = {name: fake.arg(0, 2 + j) for j, name in enumerate(k.symbols)}
    assert syms == {"M": 33, "N": 7}
    assert fake.arg(0, 0) == x.ptr and fake.arg(0, 1) == s.ptr


def test_launch_from_several_threads(add, fake):
    x, y = Dev(fake, (64,)), Dev(fake, (64,))
    zs = [Dev(fake, (64,)) for _ in range(4)]
    fake.reset()
    errors = []

    def work(z):
        try:
            for _ in range(50):
                add.add(x, y, z)
        except Exception as e:  # reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=(z,)) for z in zs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    assert fake.launches() == 200


# ---- bad input: Kiln's message, a Python exception, nothing launched ----------------------

def refused(fake, exc, message, fn, *args, **kwargs):
    fake.reset()
    with pytest.raises(exc) as e:
        fn(*args, **kwargs)
    assert str(e.value) == message
    assert isinstance(e.value, KilnError)
    assert fake.launches() == 0


def test_wrong_dtype(add, fake):
    x, y, z = Dev(fake, (8,)), Dev(fake, (8,), "<f8", 8), Dev(fake, (8,))
    refused(fake, KilnTypeError, "add: argument 2 (y): dtype typestr '<f8', expected f32 (f32[N])",
            add.add, x, y, z)


def test_wrong_rank(add, fake):
    x, y, z = Dev(fake, (8,)), Dev(fake, (2, 4)), Dev(fake, (8,))
    refused(fake, ValueError,
            "add: argument 2 (y): rank 2 (shape [2, 4]), expected rank 1 (f32[N])",
            add.add, x, y, z)


def test_inconsistent_symbol(add, rowsum, fake):
    x, y, z = Dev(fake, (8,)), Dev(fake, (9,)), Dev(fake, (8,))
    refused(fake, ValueError,
            "add: argument 2 (y): dim 0 gives N = 9, but argument 1 (x) gave N = 8 (y: f32[N])",
            add.add, x, y, z)
    refused(fake, ValueError,
            "rowsum: argument 2 (s): dim 0 gives M = 7, but argument 1 (x) gave M = 33 "
            "(s: f32[M])", rowsum.rowsum, Dev(fake, (33, 7)), Dev(fake, (7,)))
    refused(fake, ValueError,
            "add: symbol N = 9 given, but the arguments' shapes give N = 8",
            add.add, x, Dev(fake, (8,)), z, N=9)


def test_fixed_extent(cache, fake):
    b = kiln.compile("kernel scale4(x: f32[M, 4], w: f32[4]) -> (y: f32[M, 4]) {\n"
                     "  y[i, j] = x[i, j] * w[j]\n}\n", archs=["sm_90"], default_only=True)
    assert b.scale4.kernel.params[0].dims == ("M", 4)
    refused(fake, ValueError,
            "scale4: argument 1 (x): dim 1 is 5, expected 4 (shape [3, 5], expected f32[M, 4])",
            b.scale4, Dev(fake, (3, 5)), Dev(fake, (4,)), Dev(fake, (3, 4)))
    fake.reset()
    b.scale4(Dev(fake, (3, 4)), Dev(fake, (4,)), Dev(fake, (3, 4)))
    assert fake.launches() == 1


def test_cpu_object_and_non_tensors(add, fake):
    np = pytest.importorskip("numpy", reason="numpy (python3-numpy) is needed for a CPU array")
    x, z = Dev(fake, (8,)), Dev(fake, (8,))
    refused(fake, ValueError,
            "add: argument 2 (y): a CPU array (numpy.ndarray); Kiln kernels take CUDA tensors "
            "on cuda:0", add.add, x, np.zeros(8, np.float32), z)
    refused(fake, TypeError,
            "add: argument 1 (x): builtins.int is not a tensor (a torch.Tensor or an object "
            "with __cuda_array_interface__)", add.add, 5, x, z)


def test_non_contiguous(rowsum, fake):
    x = Dev(fake, (4, 6), strides=(4, 16))  # a transposed view: column-major
    refused(fake, ValueError,
            "rowsum: argument 1 (x): not contiguous (shape [4, 6], byte strides [4, 16]); Kiln "
            "kernels take C-contiguous tensors: pass .contiguous() (or declare x strided in the "
            "spec)",
            rowsum.rowsum, x, Dev(fake, (4,)))
    # C-contiguous strides given explicitly, and any stride on a dim of 1, are fine.
    fake.reset()
    rowsum.rowsum(Dev(fake, (4, 6), strides=(24, 4)), Dev(fake, (4,)))
    rowsum.rowsum(Dev(fake, (1, 6), strides=(999, 4)), Dev(fake, (1,)))
    assert fake.launches() == 2


def test_aliasing_outputs(add, fake):
    x, y = Dev(fake, (8,)), Dev(fake, (8,))
    z = Dev(fake, (8,), ptr=x.ptr + 4 * 4)  # overlaps the second half of x
    refused(fake, KilnError,
            "add: argument 3 (z) overlaps argument 1 (x); outputs may not alias other arguments",
            add.add, x, y, z)


def test_missing_arguments(add, fake):
    x, y = Dev(fake, (8,)), Dev(fake, (8,))
    refused(fake, TypeError, "add: missing argument 2 (y: f32[N])", add.add, x)
    refused(fake, TypeError, "add: missing argument 1 (x: f32[N])", add.add, y=y)
    refused(fake, TypeError,
            "add: output z not given; outputs are allocated only for torch tensor inputs",
            add.add, x, y)


def test_empty_tensor_and_bad_stream(add, fake):
    e = Dev(fake, (0,))
    refused(fake, ValueError,
            "add: symbol N = 0 must be > 0 (Kiln kernels take no empty tensors)",
            add.add, e, e, Dev(fake, (0,)))
    x, y, z = Dev(fake, (8,)), Dev(fake, (8,)), Dev(fake, (8,))
    refused(fake, TypeError,
            "stream: str is not a CUDA stream (an int CUstream, or an object with .cuda_stream "
            "or __cuda_stream__)", add.add, x, y, z, stream="s")


def test_runtime_errors_are_kiln_errors(add, fake):
    # A misaligned pointer: the runtime's own check, its message through kiln_last_error.
    x, y, z = Dev(fake, (8,)), Dev(fake, (8,)), Dev(fake, (8,))
    bad = Dev(fake, (8,), ptr=x.ptr + 2)
    refused(fake, KilnError,
            "add: argument 1 (x): pointer is not aligned to its 4-byte elements",
            add.add, bad, y, z)


# ---- finding the library, compiling, the cache ---------------------------------------------

def test_runtime_library_not_found_names_what_was_tried(tmp_path):
    shutil.copytree(REPO / "python" / "kiln", tmp_path / "pkg" / "kiln")
    env = dict(os.environ, KILN_RUNTIME_LIB=str(tmp_path / "nope.so"),
               PYTHONPATH=str(tmp_path / "pkg"))
    r = subprocess.run([sys.executable, "-c", "import kiln; kiln.load('x')"], env=env,
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "kiln.errors.KilnError: cannot load libkiln_runtime.so; tried: " in r.stderr
    assert f"{tmp_path / 'nope.so'} (not there)" in r.stderr
    assert "Set KILN_RUNTIME_LIB" in r.stderr


def test_compile_caches_by_content(cache, tmp_path):
    spec = (REPO / "examples" / "add.kiln").read_text()
    a = kiln.compile_bundle(spec, archs=["sm_90"], default_only=True)
    stamp = (a / "manifest.json").stat().st_mtime_ns
    b = kiln.compile_bundle(REPO / "examples" / "add.kiln", archs="sm_90", default_only=True)
    assert a == b and (b / "manifest.json").stat().st_mtime_ns == stamp  # not compiled again
    assert a.parent == cache / "bundles"
    c = kiln.compile_bundle(spec + "\n# another text\n", archs=["sm_90"], default_only=True)
    assert c != a and (c / "manifest.json").is_file()
    d = kiln.compile_bundle(spec, archs=["sm_80"], default_only=True)
    assert d not in (a, c)
    # Nothing half-written is left beside the bundles.
    assert not [p for p in (cache / "bundles").iterdir() if p.name.startswith(".")]
    # force: compiled again, same place.
    e = kiln.compile_bundle(spec, archs=["sm_90"], default_only=True, force=True)
    assert e == a and (e / "manifest.json").is_file()


def test_compile_errors_are_located(cache):
    with pytest.raises(KilnError) as e:
        kiln.compile("kernel bad(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] + q[i]\n}\n")
    assert "kiln compile failed (exit 1)" in str(e.value)
    assert "spec.kiln:2:" in str(e.value) and "unknown tensor 'q'" in str(e.value)
    with pytest.raises(KilnError, match="cannot read the spec"):
        kiln.compile("/nonexistent/spec.kiln")
    assert not [p for p in (cache / "bundles").iterdir() if p.name.startswith(".")]


def test_cache_dir_and_binary(monkeypatch, tmp_path):
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "c"))
    assert kiln.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("KILN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert kiln.cache_dir() == tmp_path / "x" / "kiln"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert kiln.cache_dir() == Path.home() / ".cache" / "kiln"
    monkeypatch.setenv("KILN_BIN", str(tmp_path / "nokiln"))
    monkeypatch.setenv("PATH", str(tmp_path))
    # Not KILN_BIN, not PATH: the repository's build tree if it has one, else an error that
    # names every place tried.
    try:
        found = kiln.kiln_binary()
        assert found.parent.parent.parent == REPO and found.name == "kiln"
    except KilnError as e:
        assert f"KILN_BIN={tmp_path / 'nokiln'} (not an executable)" in str(e)
        assert "Set KILN_BIN" in str(e)


def test_autotune_cache_file(tmp_path, add):
    p = tmp_path / "tuned.json"
    p.write_text('{"version": 1, "entries": [{"key": {"kernel": "add"}, "winner": {}}]}')
    c = kiln.read_cache(p)
    assert c.entries == [{"key": {"kernel": "add"}, "winner": {}}]
    with pytest.raises(KilnError, match="no such cache file"):
        kiln.read_cache(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(KilnError, match="not an autotune cache"):
        kiln.read_cache(tmp_path / "bad.json")
    with pytest.raises(KilnError, match="no such cache file"):
        add.use_cache(tmp_path / "none.json")
    with pytest.raises(KilnValueError, match="give at least one shape"):
        kiln.tune(add, [])
    with pytest.raises(KilnError, match="kiln tune failed"):
        kiln.tune(add, ["M=oops"], tmp_path / "t.json")


# ---- the torch paths, with a stand-in for torch (CI has no torch) ---------------------------
# A module named torch with what the package uses: Tensor (dtype, shape, get_device,
# is_contiguous, data_ptr, stride, device), the dtypes, empty, and the current raw stream.
# Memory comes from the fake driver. These run last: once the package has seen "torch" it
# keeps it (real objects with __cuda_array_interface__ still take their own path).

class FakeTorch:
    class dtype:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return f"torch.{self.name}"

    class Tensor:
        def __init__(self, shape, dtype, device=0, strides=None, ptr=None, contiguous=True):
            itemsize = 2 if dtype.name in ("bfloat16", "float16") else 4
            n = 1
            for s in shape:
                n *= s
            self.shape = tuple(shape)
            self.dtype = dtype
            self._device = device
            self._contiguous = contiguous
            self._strides = strides
            self._ptr = ptr if ptr is not None else FakeTorch.fake.alloc(n * itemsize)

        def get_device(self):
            return self._device

        def is_contiguous(self):
            return self._contiguous

        def data_ptr(self):
            return self._ptr

        def stride(self):
            return self._strides

        @property
        def device(self):
            return self._device

    class _C:
        streams = []

        @staticmethod
        def _cuda_getCurrentRawStream(dev):
            FakeTorch._C.streams.append(dev)
            return 0

    float32 = dtype("float32")
    float16 = dtype("float16")
    bfloat16 = dtype("bfloat16")
    int32 = dtype("int32")
    float64 = dtype("float64")
    fake = None

    @staticmethod
    def empty(shape, dtype, device):
        return FakeTorch.Tensor(shape, dtype, device)


@pytest.fixture(scope="module")
def torch_stand_in(fake):
    FakeTorch.fake = fake
    mod = type(sys)("torch")
    for k, v in vars(FakeTorch).items():
        if not k.startswith("__"):
            setattr(mod, k, v)
    saved = sys.modules.get("torch")
    sys.modules["torch"] = mod
    yield mod
    if saved is None:
        del sys.modules["torch"]
    else:
        sys.modules["torch"] = saved


def test_torch_fast_path_launches_on_the_current_stream(add, rowsum, fake, torch_stand_in):
    T = torch_stand_in
    x, y, z = (T.Tensor((777,), T.float32) for _ in range(3))
    fake.reset(arg_count=4)
    T._C.streams.clear()
    assert add.add(x, y, z) is z  # the first torch call readies the fast path
    assert add.add(x, y, z) is z
    assert "_kd0" in add.add.kernel._scope  # the fast path's globals are set
    assert fake.launches() == 2
    assert [fake.arg(1, a) for a in range(4)] == [x.data_ptr(), y.data_ptr(), z.data_ptr(), 777]
    assert T._C.streams == [0, 0]  # torch's current stream of device 0, both times
    add.add(x, y, z, stream=0)
    assert T._C.streams == [0, 0]
    m, s = T.Tensor((5, 9), T.float32), T.Tensor((5,), T.float32)
    fake.reset(arg_count=4)
    rowsum.rowsum(m, s)
    assert [fake.arg(0, a) for a in range(4)] == [m.data_ptr(), s.data_ptr(), 5, 9]


def test_torch_outputs_allocated(add, rowsum, fake, torch_stand_in):
    T = torch_stand_in
    x, y = T.Tensor((31,), T.float32), T.Tensor((31,), T.float32)
    fake.reset(arg_count=4)
    z = add.add(x, y)
    assert isinstance(z, T.Tensor) and z.shape == (31,) and z.dtype is T.float32
    assert fake.arg(0, 2) == z.data_ptr() and fake.launches() == 1
    s = rowsum.rowsum(T.Tensor((4, 6), T.float32))
    assert s.shape == (4,)


def test_torch_bad_inputs(add, rowsum, fake, torch_stand_in):
    T = torch_stand_in
    x, z = T.Tensor((8,), T.float32), T.Tensor((8,), T.float32)
    refused(fake, TypeError, "add: argument 2 (y): dtype float64, expected f32 (f32[N])",
            add.add, x, T.Tensor((8,), T.float64), z)
    refused(fake, ValueError, "add: argument 2 (y): a CPU tensor; Kiln kernels take CUDA "
            "tensors on cuda:0 (the bundle's device)", add.add, x, T.Tensor((8,), T.float32, -1), z)
    refused(fake, ValueError, "add: argument 2 (y): on cuda:1, the bundle is loaded on cuda:0",
            add.add, x, T.Tensor((8,), T.float32, 1), z)
    refused(fake, ValueError, "rowsum: argument 1 (x): not contiguous (shape [4, 6], strides "
            "[1, 4]); Kiln kernels take C-contiguous tensors: pass .contiguous() (or declare x "
            "strided in the spec)",
            rowsum.rowsum, T.Tensor((4, 6), T.float32, strides=(1, 4), contiguous=False))
    refused(fake, ValueError, "add: argument 2 (y): rank 2 (shape [2, 4]), expected rank 1 "
            "(f32[N])", add.add, x, T.Tensor((2, 4), T.float32), z)
    refused(fake, ValueError, "add: argument 3 (z): dim 0 gives N = 9, but argument 1 (x) gave "
            "N = 8 (z: f32[N])", add.add, x, x, T.Tensor((9,), T.float32))
    refused(fake, KilnError, "add: argument 3 (z) overlaps argument 1 (x); outputs may not "
            "alias other arguments", add.add, x, T.Tensor((8,), T.float32), x)
    refused(fake, ValueError, "add: symbol N = 0 must be > 0 (Kiln kernels take no empty "
            "tensors)", add.add, T.Tensor((0,), T.float32), T.Tensor((0,), T.float32))
