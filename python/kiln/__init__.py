"""Kiln from Python: load a bundle compiled by `kiln compile` and launch its kernels on torch
tensors (or any object with __cuda_array_interface__), compile specs with a content-addressed
bundle cache, and tune them.

    import kiln, torch
    b = kiln.compile("examples/rmsnorm.kiln")          # or kiln.load("rmsnorm.bundle")
    y = b.rmsnorm(x, w)                                  # y allocated, on torch's current stream
    b.rmsnorm(x, w, y)                                   # into y

Pure Python over libkiln_runtime.so's C API through ctypes: no LLVM, no compiler at run time
(kiln.compile runs the kiln binary). Every mistake is a KilnError with Kiln's message."""
from ._bundle import (Bundle, Kernel, Param, cached_scratch, device_name, load, set_keep_scratch,
                      trim_scratch)
from ._compile import (TuneCache, cache_dir, compile, compile_bundle, kiln_binary, read_cache,
                       tune)
from ._lib import candidate_paths as runtime_library_candidates
from .errors import KilnError, KilnNoDevice, KilnTypeError, KilnValueError

__version__ = "0.1.0"

__all__ = [
    "Bundle", "Kernel", "Param", "KilnError", "KilnNoDevice", "KilnTypeError", "KilnValueError",
    "TuneCache", "cache_dir", "cached_scratch", "compile", "compile_bundle", "device_name",
    "kiln_binary", "load", "read_cache", "runtime_library_candidates", "set_keep_scratch",
    "trim_scratch", "tune",
]
