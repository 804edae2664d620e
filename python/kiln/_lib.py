"""libkiln_runtime.so through ctypes: finding it, declaring the C API (runtime/c_api.h) and
turning its status codes into KilnError.

The library is looked for, in order, at $KILN_RUNTIME_LIB, next to this package
(kiln/lib/libkiln_runtime.so), in the build tree of the repository the package sits in
(build/lib/libkiln_runtime.so; not when installed), then by the dynamic linker's search
(LD_LIBRARY_PATH, an installed prefix's lib/ known to ldconfig); the error names every place
tried."""
import ctypes
import os
import threading
from pathlib import Path
from typing import List, Optional

from .errors import KilnError, KilnNoDevice

KILN_OK = 0
KILN_ERROR = 1
KILN_ERROR_INVALID_ARGUMENT = 2
KILN_ERROR_NO_DEVICE = 3

_LIB_NAME = "libkiln_runtime.so"
_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None


def candidate_paths() -> List[Path]:
    """Where the runtime library is looked for, in order."""
    paths = []
    env = os.environ.get("KILN_RUNTIME_LIB")
    if env:
        paths.append(Path(env))
    here = Path(__file__).resolve().parent
    paths.append(here / "lib" / _LIB_NAME)
    repo = here.parent.parent  # python/kiln -> the repository, when not installed
    if (repo / "CMakeLists.txt").is_file() and (repo / "runtime" / "c_api.h").is_file():
        for build in ("build", "build-release", "build-asan"):
            paths.append(repo / build / "lib" / _LIB_NAME)
    paths.append(Path(_LIB_NAME))  # the dynamic linker's search (LD_LIBRARY_PATH, ldconfig)
    return paths


def _declare(lib: ctypes.CDLL) -> None:
    c = ctypes
    P = c.c_void_p
    sz = c.c_size_t
    sigs = {
        "kiln_last_error": (c.c_char_p, []),
        "kiln_runtime_open": (c.c_int, [c.c_int, c.POINTER(P)]),
        "kiln_runtime_close": (c.c_int, [P]),
        "kiln_runtime_make_current": (c.c_int, [P]),
        "kiln_device_name": (c.c_int, [P, c.POINTER(c.c_char_p)]),
        "kiln_device_compute_capability": (c.c_int, [P, c.POINTER(c.c_int), c.POINTER(c.c_int)]),
        "kiln_bundle_load": (c.c_int, [P, c.c_char_p, c.POINTER(P)]),
        "kiln_bundle_use_cache": (c.c_int, [P, c.c_char_p]),
        "kiln_bundle_free": (c.c_int, [P]),
        "kiln_bundle_find": (P, [P, c.c_char_p]),
        "kiln_launch": (c.c_int, [P, P, P, sz, P, sz]),
        "kiln_bundle_kernel_count": (c.c_int, [P, c.POINTER(sz)]),
        "kiln_bundle_kernel_at": (c.c_int, [P, sz, c.POINTER(P)]),
        "kiln_kernel_name": (c.c_int, [P, c.POINTER(c.c_char_p)]),
        "kiln_kernel_counts": (c.c_int, [P, c.POINTER(sz), c.POINTER(sz)]),
        "kiln_kernel_param": (c.c_int, [P, sz, c.POINTER(c.c_char_p), c.POINTER(c.c_char_p),
                                        c.POINTER(sz), c.POINTER(c.c_int)]),
        "kiln_kernel_param_dim": (c.c_int, [P, sz, sz, c.POINTER(c.c_int64),
                                            c.POINTER(c.c_int)]),
        "kiln_kernel_symbol": (c.c_int, [P, sz, c.POINTER(c.c_char_p)]),
        "kiln_kernel_param_scalar": (c.c_int, [P, sz, c.POINTER(c.c_int)]),
        "kiln_kernel_param_strided": (c.c_int, [P, sz, c.POINTER(c.c_int)]),
        "kiln_launch_strided": (c.c_int, [P, P, P, sz, P, sz, P, sz]),
        "kiln_runtime_trim_scratch": (c.c_int, [P, c.POINTER(sz)]),
        "kiln_runtime_set_keep_scratch": (c.c_int, [P, c.c_int]),
        "kiln_runtime_cached_scratch": (c.c_int, [P, c.POINTER(c.c_int), c.POINTER(sz)]),
    }
    missing = []
    for name, (res, args) in sigs.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        fn.restype = res
        fn.argtypes = args
    if missing:
        raise KilnError(f"{lib._name}: too old a libkiln_runtime, it lacks {', '.join(missing)}"
                        " (rebuild Kiln)")


def lib() -> ctypes.CDLL:
    """The loaded runtime library (loaded once per process)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            tried = []
            for p in candidate_paths():
                bare = p == Path(_LIB_NAME)
                if not bare and not p.is_file():
                    tried.append(f"{p} (not there)")
                    continue
                try:
                    loaded = ctypes.CDLL(str(p))
                except OSError as e:
                    tried.append(f"{p} (the dynamic linker's search: not found)" if bare
                                 else f"{p} ({e})")
                    continue
                _declare(loaded)
                _lib = loaded
                break
            else:
                raise KilnError("cannot load libkiln_runtime.so; tried: " + "; ".join(tried) +
                                ". Set KILN_RUNTIME_LIB to its path (build/lib/libkiln_runtime.so"
                                " in a build tree, lib/ under an installed prefix)")
    return _lib


class LaunchArgs(ctypes.Structure):
    """kiln_launch_args (runtime/c_api.h): one launch's arguments, kept per thread and kernel."""
    _fields_ = [("kernel", ctypes.c_void_p), ("stream", ctypes.c_void_p),
                ("ptrs", ctypes.c_void_p), ("nptrs", ctypes.c_size_t),
                ("symbols", ctypes.c_void_p), ("nsymbols", ctypes.c_size_t)]


_raw_packed = None


def raw_launch_packed():
    """kiln_launch_packed without argtypes: the fast path passes one ready pointer."""
    global _raw_packed
    if _raw_packed is None:
        f = ctypes.CDLL(lib()._name).kiln_launch_packed
        f.restype = ctypes.c_int
        _raw_packed = f
    return _raw_packed


def last_error() -> str:
    msg = lib().kiln_last_error()
    return msg.decode("utf-8", "replace") if msg else ""


def check(rc: int) -> None:
    """Raises the KilnError for a C API status code other than KILN_OK."""
    if rc == KILN_OK:
        return
    if rc == KILN_ERROR_NO_DEVICE:
        raise KilnNoDevice(last_error())
    raise KilnError(last_error())
