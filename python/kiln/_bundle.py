"""Bundles and their kernels as Python callables.

`load(bundle_dir, device)` opens the device's runtime (once per process and device), loads the
bundle through the C API and describes every kernel with the introspection functions of
runtime/c_api.h. Each kernel becomes a plain Python function with the kernel's own parameter
names (inputs, then outputs defaulting to None, then keyword-only `stream` and symbols), a
real `__signature__` and a docstring, generated once per kernel so that a call does no
argument binding of its own.

A call, in order:
  1. every argument is a torch.Tensor (fast path: dtype identity, rank, device index,
     is_contiguous, data_ptr) or an object with __cuda_array_interface__ (typestr, shape,
     strides, data); anything else, a CPU tensor included, is refused with its name;
  2. each dim is checked against its fixed extent or gives its symbol a value, and every
     symbol must get one value (symbols given as keywords must agree);
  3. missing outputs are allocated with torch.empty on the inputs' device (torch inputs only);
  4. the pointers and symbol values go into per-thread ctypes arrays made once, and
     kiln_launch runs on `stream`, else torch's current stream of the device (torch inputs),
     else the default stream. The runtime checks the rest (null pointers, symbols > 0,
     sizes, outputs overlapping other arguments) and its message becomes a KilnError.
Errors read like the runtime's: "add: argument 2 (y): dtype float64, expected f32".

The generated function starts with a fast path for the common call, every argument a torch
tensor that passes its checks (Kernel._fast_path): the same checks unrolled for this kernel,
then the launch through kiln_launch without ctypes argtypes. Whatever it does not take (other
objects, missing outputs, symbols given, any mistake) goes to Kernel._call above, the one
place that words errors.
"""
import ctypes
import inspect
import keyword
import struct
import sys
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from . import _lib
from .errors import KilnError, KilnTypeError, KilnValueError

_MISSING = object()

# Kiln dtype -> (torch dtype attribute, __cuda_array_interface__ typestrs, element bytes).
# bf16 has no standard typestr: "<V2"/"|V2" (two raw bytes, as ml_dtypes-based libraries
# export it) is taken as bf16 only where the kernel expects bf16.
_DTYPES = {
    "f32": ("float32", ("<f4", "=f4", "f4"), 4),
    "f16": ("float16", ("<f2", "=f2", "f2"), 2),
    "bf16": ("bfloat16", ("<V2", "|V2", "V2", "<bf16", "bf16"), 2),
    "i32": ("int32", ("<i4", "=i4", "i4"), 4),
    "i64": ("int64", ("<i8", "=i8", "i8"), 8),
    "u32": ("uint32", ("<u4", "=u4", "u4"), 4),
}


_FLOATS = ("f32", "f16", "bf16")
_INT_RANGES = {"i32": (-2**31, 2**31 - 1), "u32": (0, 2**32 - 1), "i64": (-2**63, 2**63 - 1)}


def _scalar_slot(kernel: str, p: "Param", v) -> int:
    """The launch slot of scalar `p` (runtime/c_api.h): its value's bits, zero-extended. Floats
    take any real number (rounded to the scalar's type, to nearest even); integers take ints in
    range (bool and float are refused: a seed or a count is never a float)."""
    where = f"{kernel}: argument {p.index + 1} ({p.name}: {p.dtype})"
    if hasattr(v, "item") and callable(v.item) and getattr(v, "ndim", 0) == 0 \
            and not hasattr(v, "__cuda_array_interface__"):
        v = v.item()  # a numpy scalar or a 0-d CPU tensor
    if p.dtype in _FLOATS:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise KilnTypeError(f"{where}: expected a number, got {type(v).__name__}")
        bits = struct.unpack("<I", struct.pack("<f", float(v)))[0]
        if p.dtype == "f16":
            return struct.unpack("<H", struct.pack("<e", float(v)))[0]
        if p.dtype == "bf16":  # round the f32 bits to nearest even at bit 16 (NaN stays NaN)
            if (bits & 0x7F800000) == 0x7F800000 and (bits & 0x7FFFFF):
                return (bits >> 16) | 0x40
            return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
        return bits
    if isinstance(v, bool) or not isinstance(v, int):
        raise KilnTypeError(f"{where}: expected an int, got {type(v).__name__}")
    lo, hi = _INT_RANGES[p.dtype]
    if not lo <= v <= hi:
        raise KilnValueError(f"{where}: {v} is out of range [{lo}, {hi}]")
    return v & ((1 << (8 * p.itemsize)) - 1)


class _NoTensor:  # stands for torch.Tensor until torch is imported by someone
    pass


_torch_state = {"Tensor": _NoTensor, "torch": None}


def _torch():
    """torch, when the program has imported it (never imported here), else None."""
    t = _torch_state["torch"]
    if t is None:
        t = sys.modules.get("torch")
        if t is not None and hasattr(t, "Tensor"):
            _torch_state["torch"] = t
            _torch_state["Tensor"] = t.Tensor
    return t


class Param:
    """One kernel parameter as the bundle declares it."""

    __slots__ = ("index", "name", "dtype", "dims", "output", "typestrs", "itemsize",
                 "torch_dtype_name", "torch_dtype", "checks", "scalar", "strided")

    def __init__(self, index: int, name: str, dtype: str, dims: List[Union[int, str]],
                 output: bool, symbol_index: Dict[str, int], scalar: bool = False,
                 strided: bool = False):
        self.index = index
        self.name = name
        self.dtype = dtype
        self.dims: Tuple[Union[int, str], ...] = tuple(dims)  # fixed extents or symbol names
        self.output = output
        self.scalar = scalar  # passed by value: a Python number, not a tensor
        self.strided = strided  # takes any view: its strides are passed (tensor.stride())
        tname, typestrs, itemsize = _DTYPES.get(dtype, (None, (), 0))
        self.torch_dtype_name = tname
        self.typestrs = typestrs
        self.itemsize = itemsize
        self.torch_dtype = None  # resolved once torch is seen
        # (dim, fixed extent or -1, symbol index or -1) per dim, for the call's loop.
        self.checks = tuple((d, -1, symbol_index[x]) if isinstance(x, str) else (d, x, -1)
                            for d, x in enumerate(self.dims))

    @property
    def rank(self) -> int:
        return len(self.dims)

    def type_text(self) -> str:
        """"bf16[M, N]" (or "f32" for a scalar), as the spec writes it."""
        if self.scalar:
            return self.dtype
        dims = f"{self.dtype}[{', '.join(str(d) for d in self.dims)}]"
        return dims + " strided" if self.strided else dims

    def __repr__(self) -> str:
        kind = "output" if self.output else "input"
        return f"<kiln.Param {kind} {self.name}: {self.type_text()}>"


class Kernel:
    """A kernel of a loaded bundle: its description and its launch. Call it through the
    function `bundle.NAME` (or `bundle[NAME]`), whose signature is the kernel's."""

    def __init__(self, bundle: "Bundle", handle: int):
        L = _lib.lib()
        self.bundle = bundle
        self._handle = handle
        name = ctypes.c_char_p()
        _lib.check(L.kiln_kernel_name(handle, ctypes.byref(name)))
        self.name: str = name.value.decode()
        npar, nsym = ctypes.c_size_t(), ctypes.c_size_t()
        _lib.check(L.kiln_kernel_counts(handle, ctypes.byref(npar), ctypes.byref(nsym)))
        self.symbols: Tuple[str, ...] = tuple(self._symbol(j) for j in range(nsym.value))
        index = {s: j for j, s in enumerate(self.symbols)}
        self.params: Tuple[Param, ...] = tuple(self._param(i, index) for i in range(npar.value))
        self.inputs = tuple(p for p in self.params if not p.output)
        self.outputs = tuple(p for p in self.params if p.output)
        self._np = len(self.params)
        self._ns = len(self.symbols)
        self._PtrArray = ctypes.c_uint64 * max(self._np, 1)
        self._SymArray = ctypes.c_int64 * max(self._ns, 1)
        self._tls = threading.local()
        self._launch = L.kiln_launch
        self._launch_strided = L.kiln_launch_strided
        # Strided inputs (kiln_launch_strided): each one's strides, in parameter order.
        self._strided = tuple(p.index for p in self.params if p.strided)
        self._nstrides = sum(self.params[i].rank for i in self._strided)
        self._device = bundle.device
        self._torch_ready = False
        self._torch_dtypes = (None,) * self._np
        # Per parameter, what a call checks: (index, rank, dim checks, is output).
        self._plan = tuple((p.index, p.rank, p.checks, p.output) for p in self.params)
        outs = tuple(p.index for p in self.outputs)
        self._out_index = outs[0] if len(outs) == 1 else outs
        self.function = self._make_function()

    # ---- description ------------------------------------------------------------------------
    def _symbol(self, j: int) -> str:
        s = ctypes.c_char_p()
        _lib.check(_lib.lib().kiln_kernel_symbol(self._handle, j, ctypes.byref(s)))
        return s.value.decode()

    def _param(self, i: int, symbol_index: Dict[str, int]) -> Param:
        L = _lib.lib()
        name, dtype = ctypes.c_char_p(), ctypes.c_char_p()
        rank, out = ctypes.c_size_t(), ctypes.c_int()
        _lib.check(L.kiln_kernel_param(self._handle, i, ctypes.byref(name), ctypes.byref(dtype),
                                       ctypes.byref(rank), ctypes.byref(out)))
        dims: List[Union[int, str]] = []
        value, sym = ctypes.c_int64(), ctypes.c_int()
        for d in range(rank.value):
            _lib.check(L.kiln_kernel_param_dim(self._handle, i, d, ctypes.byref(value),
                                               ctypes.byref(sym)))
            dims.append(self.symbols[sym.value] if sym.value >= 0 else value.value)
        scalar, strided = ctypes.c_int(), ctypes.c_int()
        _lib.check(L.kiln_kernel_param_scalar(self._handle, i, ctypes.byref(scalar)))
        _lib.check(L.kiln_kernel_param_strided(self._handle, i, ctypes.byref(strided)))
        return Param(i, name.value.decode(), dtype.value.decode(), dims, bool(out.value),
                     symbol_index, bool(scalar.value), bool(strided.value))

    def signature_text(self) -> str:
        ins = ", ".join(f"{p.name}: {p.type_text()}" for p in self.inputs)
        outs = ", ".join(f"{p.name}: {p.type_text()}" for p in self.outputs)
        return f"{self.name}({ins}) -> ({outs})"

    def __repr__(self) -> str:
        return f"<kiln.Kernel {self.signature_text()} on cuda:{self._device}>"

    # ---- the callable -------------------------------------------------------------------------
    def _symbol_keywords(self) -> List[str]:
        """The symbols that can be keyword arguments (those that clash with nothing)."""
        taken = {p.name for p in self.params} | {"stream"}
        return [s for s in self.symbols
                if s.isidentifier() and not keyword.iskeyword(s) and s not in taken]

    def _make_function(self):
        names = [p.name for p in self.params]
        plain = (all(n.isidentifier() and not keyword.iskeyword(n) for n in names)
                 and len(set(names)) == len(names) and "stream" not in names
                 and not any(n.startswith("_k") for n in names))
        symkw = self._symbol_keywords() if plain else []
        call = self._call
        if plain:
            # Parameters in declared order: inputs first, then outputs (all defaulted, so the
            # missing ones are reported by Kiln, naming them). One line per kernel, no loops.
            args = ", ".join(f"{n}=_kMISSING" if not p.output else f"{n}=None"
                             for n, p in zip(names, self.params))
            kw = "".join(f", {s}=None" for s in symkw)
            syms = "()"
            if symkw:  # () unless a symbol was given: the call then skips their check
                none = " and ".join(f"{s} is None" for s in symkw)
                syms = f"(() if {none} else ({''.join(f'{s}, ' for s in symkw)}))"
            tup = "(" + "".join(f"{n}, " for n in names) + ")"
            src = (f"def {self.name}({args}, *, stream=None{kw}):\n" +
                   self._fast_path(names, symkw) +
                   f"    return _kcall({tup}, stream, {syms})\n")
            scope = self._scope = {"_kMISSING": _MISSING, "_kcall": call, "_kT": _NoTensor,
                                   "_ktls": self._tls, "_kcheck": _lib.check,
                                   "_kdev": self._device, "_kcur": None,
                                   "_kpacked": _lib.raw_launch_packed(),
                                   "_kstreamint": _stream_int}
            fname = self.name if self.name.isidentifier() and not keyword.iskeyword(
                self.name) else "kernel"
            if fname != self.name:
                src = src.replace(f"def {self.name}(", f"def {fname}(", 1)
            exec(compile(src, f"<kiln kernel {self.name}>", "exec"), scope)
            fn = scope[fname]
            self._symkw = tuple(self.symbols.index(s) for s in symkw)
        else:
            def fn(*args, stream=None, **kwargs):
                return call(self._bind(args, kwargs), stream, ())
            self._symkw = ()
        fn.__name__ = self.name
        fn.__qualname__ = self.name
        fn.__doc__ = self._docstring()
        fn.__signature__ = self._signature(symkw)
        fn.kernel = self
        return fn

    def _fast_path(self, names: List[str], symkw: List[str]) -> str:
        """The body's first lines: when every argument is a torch tensor of the right dtype,
        rank and device, contiguous, and the shapes agree, fill the per-thread arrays and
        launch, with no loop and no call but torch's accessors and the launch. Anything else
        (CAI objects, a missing output, a symbol given, any mistake, torch not seen yet:
        _kT is then a class no tensor has) goes to _kcall, which checks it all again and
        says what is wrong. The globals _kT, _kd<i> and _kcur are set by _ready_torch."""
        if any(j not in {c[2] for p in self.params for c in p.checks}
               for j in range(self._ns)):
            return ""  # a symbol in no shape: only the general path can say so
        if any(p.scalar or p.strided for p in self.params):
            return ""  # scalars (numbers) and strided views (strides) take the general path
        L = []
        cond = [f"isinstance({n}, _kT)" for n in names] + [f"{s} is None" for s in symkw]
        L.append(f"    if {' and '.join(cond)}:")
        ok = []
        for i, n in enumerate(names):
            ok.append(f"{n}.dtype is _kd{i}")
        for n in names:
            ok.append(f"{n}.get_device() == _kdev")
        for n in names:
            ok.append(f"{n}.is_contiguous()")
        L.append(f"        if {' and '.join(ok)}:")
        for i, n in enumerate(names):
            L.append(f"            _ks{i} = {n}.shape")
        shape_ok = [f"len(_ks{i}) == {p.rank}" for i, p in enumerate(self.params)]
        first = {}
        eq = []
        for i, p in enumerate(self.params):
            for d, fixed, j in p.checks:
                if j < 0:
                    eq.append(f"_ks{i}[{d}] == {fixed}")
                elif j not in first:
                    first[j] = f"_ks{i}[{d}]"
                else:
                    eq.append(f"_ks{i}[{d}] == _kv{j}")
        L.append(f"            if {' and '.join(shape_ok) or 'True'}:")
        for j in range(self._ns):
            L.append(f"                _kv{j} = {first[j]}")
        eq += [f"_kv{j} > 0" for j in range(self._ns)]
        L.append(f"                if {' and '.join(eq) or 'True'}:")
        L.append("                    try:")
        L.append("                        _ka, _kp, _ky, _kq = _ktls.args")
        L.append("                    except AttributeError:")
        L.append("                        _ka = None")
        L.append("                    if _ka is not None:")
        for i, n in enumerate(names):
            L.append(f"                        _kp[{i}] = {n}.data_ptr()")
        for j in range(self._ns):
            L.append(f"                        _ky[{j}] = _kv{j}")
        L.append("                        _ka.stream = _kcur(_kdev) if stream is None else "
                 "_kstreamint(stream)")
        L.append("                        _krc = _kpacked(_kq)")
        L.append("                        if _krc:")
        L.append("                            _kcheck(_krc)")
        outs = [names[p.index] for p in self.outputs]
        ret = outs[0] if len(outs) == 1 else "(" + "".join(f"{o}, " for o in outs) + ")"
        L.append(f"                        return {ret}")
        return "\n".join(L) + "\n"

    def _bind(self, args, kwargs) -> tuple:
        if len(args) > self._np:
            raise KilnTypeError(f"{self.name}: takes {self._np} arguments "
                                f"({', '.join(p.name for p in self.params)}), got {len(args)}")
        vals = list(args) + [_MISSING] * (self._np - len(args))
        for k, v in kwargs.items():
            for p in self.params:
                if p.name == k:
                    vals[p.index] = v
                    break
            else:
                raise KilnTypeError(f"{self.name}: no argument named {k!r}")
        return tuple(None if (p.output and v is _MISSING) else v
                     for p, v in zip(self.params, vals))

    def _signature(self, symkw: List[str]) -> inspect.Signature:
        P = inspect.Parameter
        ps = []
        for p in self.params:
            if p.output:
                ps.append(P(p.name, P.POSITIONAL_OR_KEYWORD, default=None,
                            annotation=f"Optional[Tensor]  # {p.type_text()}, output"))
            elif p.scalar:
                ps.append(P(p.name, P.POSITIONAL_OR_KEYWORD,
                            annotation=f"{'float' if p.dtype in _FLOATS else 'int'}  # "
                                       f"{p.type_text()}, by value"))
            else:
                ps.append(P(p.name, P.POSITIONAL_OR_KEYWORD,
                            annotation=f"Tensor  # {p.type_text()}"))
        ps.append(P("stream", P.KEYWORD_ONLY, default=None, annotation="Optional[int]"))
        for s in symkw:
            ps.append(P(s, P.KEYWORD_ONLY, default=None, annotation="Optional[int]"))
        outs = [p.type_text() for p in self.outputs]
        ret = f"Tensor  # {outs[0]}" if len(outs) == 1 else f"Tuple[{', '.join(outs)}]"
        return inspect.Signature(ps, return_annotation=ret)

    def _docstring(self) -> str:
        lines = [f"Kiln kernel {self.signature_text()}",
                 f"from bundle {self.bundle.path} on cuda:{self._device}.", "", "Inputs:"]
        lines += [f"    {p.name}: {p.type_text()}" for p in self.inputs]
        lines += ["Outputs (allocated with torch.empty when omitted and the inputs are torch "
                  "tensors; returned in this order):"]
        lines += [f"    {p.name}: {p.type_text()}" for p in self.outputs]
        if self.symbols:
            lines += ["Symbols (inferred from the shapes; keywords must agree with them): "
                      + ", ".join(self.symbols)]
        lines += ["stream: a CUstream handle (int) or an object with .cuda_stream; default: "
                  "torch's current stream (torch inputs), else the default stream.",
                  "Arguments: torch tensors or objects with __cuda_array_interface__, "
                  "C-contiguous, on the bundle's device; outputs may not overlap any argument."]
        return "\n".join(lines)

    # ---- the launch ---------------------------------------------------------------------------
    def _ready_torch(self, torch) -> None:
        for p in self.params:
            # torch.uint32 exists from torch 2.3; before, a u32 parameter takes no torch tensor.
            p.torch_dtype = getattr(torch, p.torch_dtype_name, None)
        self._torch_dtypes = tuple(p.torch_dtype for p in self.params)
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is None:  # older torch: the public (slower) way
            def raw(dev):
                return torch.cuda.current_stream(dev).cuda_stream
        self._current_stream = raw
        scope = getattr(self, "_scope", None)
        if scope is not None:  # the generated fast path may run from now on
            scope["_kcur"] = raw
            for i, p in enumerate(self.params):
                scope[f"_kd{i}"] = p.torch_dtype
            scope["_kT"] = torch.Tensor
        self._torch_ready = True

    def _arrays(self):
        tls = self._tls
        try:
            return tls.ptrs, tls.syms
        except AttributeError:
            ptrs, syms = self._PtrArray(), self._SymArray()
            args = _lib.LaunchArgs(self._handle, None, ctypes.addressof(ptrs), self._np,
                                   ctypes.addressof(syms), self._ns)
            # What the generated fast path fills and passes: one attribute read per launch.
            tls.args = (args, ptrs, syms, ctypes.pointer(args))
            tls.ptrs, tls.syms = ptrs, syms
            return ptrs, syms

    def _call(self, args: tuple, stream, symkw: tuple):
        Tensor = _torch_state["Tensor"]
        if Tensor is _NoTensor and _torch() is not None:
            Tensor = _torch_state["Tensor"]
        if Tensor is not _NoTensor and not self._torch_ready:
            self._ready_torch(_torch_state["torch"])
        tls = self._tls
        try:
            ptrs = tls.ptrs
            syms = tls.syms
        except AttributeError:
            ptrs, syms = self._arrays()
        values = [None] * self._ns
        view_strides = {}  # strided inputs: index -> strides in elements (None: contiguous)
        dev = self._device
        tdtypes = self._torch_dtypes
        ref = None  # a torch tensor argument: the device and stream come from torch
        missing = None
        for i, rank, checks, output in self._plan:
            t = args[i]
            if t is None or t is _MISSING:
                if output and t is None:
                    missing = (missing or []) + [self.params[i]]
                    continue
                p = self.params[i]
                raise KilnTypeError(f"{self.name}: missing argument {i + 1} ({p.name}: "
                                    f"{p.type_text()})")
            if self.params[i].scalar:
                ptrs[i] = _scalar_slot(self.name, self.params[i], t)
                continue
            if isinstance(t, Tensor):
                if t.dtype is not tdtypes[i]:
                    raise self._bad_dtype(self.params[i], str(t.dtype).replace("torch.", ""))
                shape = t.shape
                if len(shape) != rank:
                    raise self._bad_rank(self.params[i], tuple(shape))
                if t.get_device() != dev:
                    raise self._bad_device(self.params[i], t)
                if self.params[i].strided:
                    view_strides[i] = t.stride()
                elif not t.is_contiguous():
                    raise self._not_contiguous(self.params[i], tuple(shape), tuple(t.stride()))
                ptrs[i] = t.data_ptr()
                ref = t
            else:
                shape, ptrs[i] = self._foreign(self.params[i], t, view_strides)
            for d, fixed, j in checks:
                n = shape[d]
                if j < 0:
                    if n != fixed:
                        raise self._bad_extent(self.params[i], d, n, tuple(shape))
                elif values[j] is None:
                    values[j] = n
                elif values[j] != n:
                    raise self._inconsistent(args, self.params[i], d, n, values[j])
        if symkw:
            self._given_symbols(symkw, values)
        if missing is not None:
            args = self._allocate(args, missing, values, ref, _torch_state["torch"])
            for p in missing:
                ptrs[p.index] = args[p.index].data_ptr()
        if None in values or 0 in values:
            self._symbol_error(values)
        syms[:self._ns] = values
        if stream is None:
            s = self._current_stream(dev) if ref is not None else 0
        else:
            s = _stream_int(stream)
        if self._strided:
            rc = self._launch_with_strides(s, ptrs, syms, view_strides)
        else:
            rc = self._launch(self._handle, s, ptrs, self._np, syms, self._ns)
        if rc:
            _lib.check(rc)
        out = self._out_index
        if type(out) is int:
            return args[out]
        return tuple(args[i] for i in out)

    def _launch_with_strides(self, s: int, ptrs, syms, view_strides: dict) -> int:
        """kiln_launch_strided with every strided input's strides (contiguous ones for an
        argument that gave none: a __cuda_array_interface__ without strides)."""
        flat = []
        for i in self._strided:
            st = view_strides.get(i)
            if st is None:
                st = self._contiguous_strides(i, syms)
            flat.extend(st)
        arr = (ctypes.c_int64 * max(len(flat), 1))(*flat)
        return self._launch_strided(self._handle, s, ptrs, self._np, syms, self._ns, arr,
                                    len(flat))

    def _contiguous_strides(self, i: int, syms) -> list:
        ext = [x if isinstance(x, int) else syms[self.symbols.index(x)]
               for x in self.params[i].dims]
        out, acc = [], 1
        for n in reversed(ext):
            out.append(acc)
            acc *= n
        return out[::-1]

    def _given_symbols(self, symkw: tuple, values: list) -> None:
        for k, j in enumerate(self._symkw):
            v = symkw[k]
            if v is None:
                continue
            if values[j] is None:
                values[j] = int(v)
            elif values[j] != v:
                raise KilnValueError(f"{self.name}: symbol {self.symbols[j]} = {v} given, but "
                                     f"the arguments' shapes give {self.symbols[j]} = "
                                     f"{values[j]}")

    def _symbol_error(self, values: list) -> None:
        for j, v in enumerate(values):
            if v is None:
                raise KilnValueError(f"{self.name}: symbol {self.symbols[j]} has no value: no "
                                     f"argument given has it in its shape; pass "
                                     f"{self.symbols[j]}=... or the output that has it")
            if v == 0:  # an empty tensor: its pointer may be null, say what is wrong first
                raise KilnValueError(f"{self.name}: symbol {self.symbols[j]} = 0 must be > 0 "
                                     f"(Kiln kernels take no empty tensors)")

    def _foreign(self, p: Param, t, view_strides: Optional[dict] = None) -> Tuple[tuple, int]:
        """(shape, pointer) of a non-torch argument, after its checks."""
        cai = getattr(t, "__cuda_array_interface__", None)
        if cai is None:
            raise self._not_a_tensor(p, t)
        try:
            typestr = cai["typestr"]
            shape = cai["shape"]
            strides = cai.get("strides")
            ptr = cai["data"][0]
            if typestr not in p.typestrs:
                raise self._bad_dtype(p, f"typestr {typestr!r}")
            if len(shape) != len(p.dims):
                raise self._bad_rank(p, tuple(shape))
            if p.strided and strides is not None:
                if any(b % p.itemsize for b in strides):
                    raise KilnValueError(f"{self._where(p)}: byte strides {list(strides)} are "
                                         f"not multiples of its {p.itemsize}-byte elements")
                view_strides[p.index] = tuple(b // p.itemsize for b in strides)
            elif strides is not None and not _c_contiguous(shape, strides, p.itemsize):
                raise self._not_contiguous(p, tuple(shape),
                                           tuple(s // p.itemsize for s in strides),
                                           tuple(strides))
            if cai.get("mask") is not None:
                raise KilnValueError(f"{self._where(p)}: masked arrays are not supported")
        except KilnError:
            raise
        except (KeyError, TypeError, IndexError, AttributeError) as e:
            raise KilnTypeError(f"{self._where(p)}: malformed __cuda_array_interface__ "
                                f"({e!r})") from None
        return shape, ptr

    def _not_a_tensor(self, p: Param, t) -> KilnError:
        kind = type(t).__module__ + "." + type(t).__qualname__
        if hasattr(t, "__array_interface__") or hasattr(t, "__array__"):
            return KilnValueError(f"{self._where(p)}: a CPU array ({kind}); Kiln kernels take "
                                  f"CUDA tensors on cuda:{self._device}")
        return KilnTypeError(f"{self._where(p)}: {kind} is not a tensor (a torch.Tensor or an "
                             f"object with __cuda_array_interface__)")

    def _allocate(self, args: tuple, missing: List[Param], values: list, ref, torch) -> tuple:
        if ref is None:
            names = ", ".join(p.name for p in missing)
            raise KilnTypeError(f"{self.name}: output{'s' if len(missing) > 1 else ''} {names} "
                                f"not given; outputs are allocated only for torch tensor "
                                f"inputs")
        out = list(args)
        for p in missing:
            shape = []
            for x in p.dims:
                if isinstance(x, str):
                    v = values[self.symbols.index(x)]
                    if v is None:
                        raise KilnValueError(f"{self.name}: cannot allocate output {p.name}: "
                                             f"{p.type_text()}: symbol {x} has no value; "
                                             f"pass {x}=... or the output")
                    shape.append(v)
                else:
                    shape.append(x)
            out[p.index] = torch.empty(shape, dtype=p.torch_dtype, device=ref.device)
        return tuple(out)

    # ---- messages -----------------------------------------------------------------------------
    def _where(self, p: Param) -> str:
        return f"{self.name}: argument {p.index + 1} ({p.name})"

    def _bad_dtype(self, p: Param, got: str) -> KilnError:
        return KilnTypeError(f"{self._where(p)}: dtype {got}, expected {p.dtype} "
                             f"({p.type_text()})")

    def _bad_rank(self, p: Param, shape: tuple) -> KilnError:
        return KilnValueError(f"{self._where(p)}: rank {len(shape)} (shape {list(shape)}), "
                              f"expected rank {p.rank} ({p.type_text()})")

    def _bad_device(self, p: Param, t) -> KilnError:
        d = t.get_device()
        if d < 0:
            return KilnValueError(f"{self._where(p)}: a CPU tensor; Kiln kernels take CUDA "
                                  f"tensors on cuda:{self._device} (the bundle's device)")
        return KilnValueError(f"{self._where(p)}: on cuda:{d}, the bundle is loaded on "
                              f"cuda:{self._device}")

    def _not_contiguous(self, p: Param, shape: tuple, strides: tuple,
                        byte_strides: Optional[tuple] = None) -> KilnError:
        what = f"byte strides {list(byte_strides)}" if byte_strides else f"strides {list(strides)}"
        return KilnValueError(f"{self._where(p)}: not contiguous (shape {list(shape)}, {what}); "
                              f"Kiln kernels take C-contiguous tensors: pass .contiguous() (or "
                              f"declare {p.name} strided in the spec)")

    def _bad_extent(self, p: Param, d: int, n: int, shape: tuple) -> KilnError:
        return KilnValueError(f"{self._where(p)}: dim {d} is {n}, expected {p.dims[d]} "
                              f"(shape {list(shape)}, expected {p.type_text()})")

    def _inconsistent(self, args: tuple, p: Param, d: int, n: int, before: int) -> KilnError:
        sym = p.dims[d]
        first = "an earlier argument"
        for q in self.params:  # the first argument that gave the symbol its value
            if q.index >= p.index or args[q.index] is None or args[q.index] is _MISSING:
                continue
            if sym in q.dims:
                first = f"argument {q.index + 1} ({q.name})"
                break
        return KilnValueError(f"{self._where(p)}: dim {d} gives {sym} = {n}, but {first} gave "
                              f"{sym} = {before} ({p.name}: {p.type_text()})")


def _c_contiguous(shape: tuple, strides: tuple, itemsize: int) -> bool:
    if len(strides) != len(shape):
        return False
    expect = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def _stream_int(stream) -> int:
    """A CUstream argument as an int (the packed launch's field takes ints)."""
    return stream if type(stream) is int else _stream_handle(stream)


def _stream_handle(stream) -> int:
    h = getattr(stream, "cuda_stream", None)
    if h is not None:
        return int(h)
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        v = proto() if callable(proto) else proto
        return int(v[1] if isinstance(v, tuple) else v)
    raise KilnTypeError(f"stream: {type(stream).__qualname__} is not a CUDA stream (an int "
                        f"CUstream, or an object with .cuda_stream or __cuda_stream__)")


class _Runtime:
    """An open device (kiln_runtime); one per process and device, never closed (as torch keeps
    its contexts), so bundles can be freed in any order."""

    _open: Dict[int, "_Runtime"] = {}
    _lock = threading.Lock()

    def __init__(self, device: int):
        L = _lib.lib()
        h = ctypes.c_void_p()
        _lib.check(L.kiln_runtime_open(device, ctypes.byref(h)))
        self.handle = h.value
        self.device = device
        name = ctypes.c_char_p()
        _lib.check(L.kiln_device_name(self.handle, ctypes.byref(name)))
        self.name = name.value.decode()
        major, minor = ctypes.c_int(), ctypes.c_int()
        _lib.check(L.kiln_device_compute_capability(self.handle, ctypes.byref(major),
                                                    ctypes.byref(minor)))
        self.compute_capability = (major.value, minor.value)

    @classmethod
    def get(cls, device: int) -> "_Runtime":
        with cls._lock:
            rt = cls._open.get(device)
            if rt is None:
                rt = cls._open[device] = _Runtime(device)
            return rt


class Bundle:
    """A bundle loaded onto a device. Its kernels are attributes and items:
    `b.rmsnorm(x, w)`, `b["rmsnorm"](x, w)`; `b.kernels` maps names to the Kernel objects."""

    def __init__(self, path: Union[str, Path], device: int = 0):
        if not isinstance(device, int) or isinstance(device, bool) or device < 0:
            raise KilnValueError(f"device must be a CUDA device ordinal >= 0, got {device!r}")
        self.path = Path(path)
        self.device = device
        self._handle = None
        self._runtime = _Runtime.get(device)
        L = _lib.lib()
        h = ctypes.c_void_p()
        _lib.check(L.kiln_bundle_load(self._runtime.handle, str(self.path).encode(),
                                      ctypes.byref(h)))
        self._handle = h.value
        n = ctypes.c_size_t()
        _lib.check(L.kiln_bundle_kernel_count(self._handle, ctypes.byref(n)))
        self.kernels: Dict[str, Kernel] = {}
        for i in range(n.value):
            k = ctypes.c_void_p()
            _lib.check(L.kiln_bundle_kernel_at(self._handle, i, ctypes.byref(k)))
            kernel = Kernel(self, k.value)
            self.kernels[kernel.name] = kernel

    @property
    def device_name(self) -> str:
        return self._runtime.name

    @property
    def compute_capability(self) -> Tuple[int, int]:
        return self._runtime.compute_capability

    def use_cache(self, cache_path: Union[str, Path]) -> None:
        """Launch with the tuned winners of an autotune cache file (`kiln tune -c`)."""
        _lib.check(_lib.lib().kiln_bundle_use_cache(self._handle, str(cache_path).encode()))

    def __getitem__(self, name: str):
        k = self.kernels.get(name)
        if k is None:
            raise KeyError(f"bundle {self.path} has no kernel {name!r} (its kernels: "
                           f"{', '.join(self.kernels)})")
        return k.function

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("kernels", "_handle", "_runtime"):
            raise AttributeError(name)
        k = self.__dict__.get("kernels", {}).get(name)
        if k is None:
            raise AttributeError(f"bundle {self.path} has no kernel {name!r} (its kernels: "
                                 f"{', '.join(self.__dict__.get('kernels', {}))})")
        return k.function

    def __dir__(self):
        return list(super().__dir__()) + list(self.kernels)

    def __contains__(self, name: str) -> bool:
        return name in self.kernels

    def __iter__(self) -> Iterator[str]:
        return iter(self.kernels)

    def __repr__(self) -> str:
        return f"<kiln.Bundle {self.path} on cuda:{self.device}: {', '.join(self.kernels)}>"

    def __del__(self):
        h = self.__dict__.get("_handle")
        if h:
            try:
                _lib.lib().kiln_bundle_free(h)
            except Exception:  # interpreter shutdown
                pass
            self._handle = None


def load(bundle_dir: Union[str, Path], device: int = 0) -> Bundle:
    """Loads the bundle directory `bundle_dir` (written by `kiln compile -o`) onto CUDA device
    `device` and returns it; its kernels are callables: `kiln.load(d).rmsnorm(x, w)`."""
    return Bundle(bundle_dir, device)


def device_name(device: int = 0) -> str:
    """The name of CUDA device `device` as the runtime sees it."""
    return _Runtime.get(device).name


def trim_scratch(device: int = 0) -> int:
    """Frees the scratch memory the streams keep on CUDA device `device` (a launch of a kernel
    with buffers or split steps takes it from the runtime's pool, and its stream keeps it for
    the next launches), each in stream order after its last launch, as torch.cuda.empty_cache
    frees torch's cached blocks; returns its bytes. Later launches take scratch anew."""
    freed = ctypes.c_size_t()
    _lib.check(_lib.lib().kiln_runtime_trim_scratch(_Runtime.get(device).handle,
                                                    ctypes.byref(freed)))
    return freed.value


def set_keep_scratch(on: bool, device: int = 0) -> None:
    """Whether streams keep their scratch between launches on CUDA device `device` (on by
    default, unless KILN_KEEP_SCRATCH=0 was set when the device was opened). Off, every launch
    takes its scratch from the pool and gives it back."""
    _lib.check(_lib.lib().kiln_runtime_set_keep_scratch(_Runtime.get(device).handle,
                                                        1 if on else 0))


def cached_scratch(device: int = 0) -> Tuple[int, int]:
    """The streams that keep scratch on CUDA device `device` now, and its bytes in all."""
    streams, nbytes = ctypes.c_int(), ctypes.c_size_t()
    _lib.check(_lib.lib().kiln_runtime_cached_scratch(_Runtime.get(device).handle,
                                                      ctypes.byref(streams),
                                                      ctypes.byref(nbytes)))
    return streams.value, nbytes.value


Tensor = Any  # torch.Tensor or an object with __cuda_array_interface__ (for annotations)
