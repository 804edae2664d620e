"""Every kernel of every example (examples/*.kiln) through the kiln package on a real GPU,
against a torch implementation computed in float64 from the same (rounded) inputs.

Shapes are awkward on purpose: 1, odd, prime, not multiples of 128; few very long rows (the
runtime's split variants), few very long columns, many short rows. Outputs are poisoned first
(NaN, or a sentinel for i32) so an element the kernel never wrote fails. Inputs are random
normal, and a second run puts NaN (every kernel) and +-inf (where the result is unambiguous)
into the inputs.

Tolerance, per output element, after docs/testing.md (Kiln's own harness):
    |got - exact| <= u * |exact| + gamma * (|exact| + scale)
  u      2 x the output type's unit roundoff: 2^-7 for bf16 (8 significant bits: 2^-8 for one
         rounding of the f32 result, doubled because a kernel may re-read one rounded
         intermediate output, e.g. add_rmsnorm's h), 2^-10 for f16, 0 for f32;
  gamma  16 * 2^-24 * (1 + ceil(log2 K)): f32 arithmetic, 16 ulps per level of a summation
         tree over K, the longest reduced extent (K = 1 for pointwise kernels);
  scale  the largest finite |exact| of the output (errors of a sum are absolute in the scale
         of what was summed).
NaN must be NaN where the reference is NaN, infinities must match exactly, i32 is exact.

Bundles: $KILN_TEST_BUNDLES/<example> when it holds a manifest (the build tree's
tests/gpu_bundles, compiled by ctest), else kiln.compile of the example (cached)."""
import json
import math
import os
import re
from pathlib import Path

import pytest

from conftest import REPO, skip_or_fail

try:
    import torch
except ImportError:
    skip_or_fail("torch is not installed: the GPU tests compare with torch")
if not torch.cuda.is_available():
    skip_or_fail("torch.cuda.is_available() is False: no CUDA GPU or driver")

import kiln  # noqa: E402

F64 = torch.float64


# ---- torch references: inputs are float64 (i32 stays int64), outputs float64 / int64 ------------

def _rowmax(x):
    return x.amax(dim=1)


def _layernorm(x, w, b, eps):
    mean = x.sum(1, keepdim=True) / x.shape[1]
    d = x - mean
    var = (d * d).sum(1, keepdim=True) / x.shape[1]
    return d * torch.rsqrt(var + eps) * w + b


def _rmsnorm(x, w):
    ms = (x * x).sum(1, keepdim=True) / x.shape[1]
    return x * torch.rsqrt(ms + 1e-6) * w


def _softmax(x):
    mx = x.amax(1, keepdim=True)
    e = torch.exp(x - mx)
    return e / e.sum(1, keepdim=True)


def _logsumexp(x):
    mx = x.amax(1)
    c = torch.where(mx.abs() > 3.4028235e38, torch.zeros_like(mx), mx)
    return c + torch.log(torch.exp(x - c[:, None]).sum(1))


def _mean_var(x):
    mean = x.sum(1) / x.shape[1]
    return {"mean": mean, "var": ((x - mean[:, None]) ** 2).sum(1) / x.shape[1]}


def _add_rmsnorm(dtype):
    # y reads h as it is stored (Kiln reads an output back at its storage type, as torch's
    # bf16 `h = x + r` is rounded before the norm): the reference rounds it likewise.
    def ref(x, r, w):
        h = (x + r).to(dtype).to(F64)
        return {"h": h, "y": _rmsnorm(h, w)}
    return ref


def _rowsum_colsum(x):
    r = (x * x).sum(1)
    return (x / r[:, None]).sum(0)


def _mixed(x, k):
    kf = k.to(F64)
    y = torch.where(x > 0, x, torch.exp(x) - 1.0) * kf
    q = torch.div(k, 7, rounding_mode="trunc") + k.clamp(min=0) - k.abs() * 3
    r = kf * 0.001 + torch.sqrt(kf.abs())
    return {"y": y, "q": q, "r": r}


def _gelu(x, b):
    h = x + b
    return 0.5 * h * (1.0 + torch.erf(h * 0.70710678))


def _causal(s):
    T = s.shape[0]
    j = torch.arange(T, device=s.device)
    return torch.where(j[None, :] > j[:, None], torch.full_like(s, -60000.0), s * 0.125)


def _cross_entropy(x, t):
    tc = t.clamp(0, x.shape[1] - 1)  # Kiln clamps a gather's positions (docs/language.md)
    return _logsumexp(x) - x.gather(1, tc[:, None]).squeeze(1)


def _embedding(ids, w):
    return w[ids.clamp(0, w.shape[0] - 1)]


def _rotary(x, pos, cs, sn):
    p = pos.clamp(0, cs.shape[0] - 1)
    c, s = cs[p][:, None, :], sn[p][:, None, :]
    x0, x1 = x[:, :, 0, :], x[:, :, 1, :]
    return torch.stack((x0 * c - x1 * s, x1 * c + x0 * s), dim=2)


def _rotary_f32(x, pos, cs, sn):
    p = pos.clamp(0, cs.shape[0] - 1)
    d = torch.arange(x.shape[2], device=x.device)
    half = x.shape[2] // 2
    partner = torch.where(d < half, -x[:, :, (d + half).clamp(max=x.shape[2] - 1)],
                          x[:, :, (d - half).clamp(min=0)])
    return x * cs[p][:, None, :] + partner * sn[p][:, None, :]


def _weighted_colsum(x):
    y = x.sum(1)
    return {"y": y, "z": (x * y[:, None]).sum(0)}


def _linear_gelu(x, w, bias):
    t = x @ w + bias
    return {"h": t, "y": 0.5 * t * (1.0 + torch.erf(t * 0.70710678))}


def _linear_relu(x, w, bias):
    t = x @ w + bias
    return {"h": t, "y": t.clamp(min=0)}


def _heads_keys_f32(x, bias):
    d = torch.arange(x.shape[3], device=x.device, dtype=F64)
    return x.permute(0, 2, 3, 1) + bias[None, :, None, :] + d[None, None, :, None]


def _transpose_gather(x, t, z):
    tc = t.clamp(0, x.shape[1] - 1)
    return x.t() + z + x[:, tc].t()


def _cumsum_fused(x, w):
    s = (x * 2.0 - w).cumsum(1)
    j = torch.arange(1, x.shape[1] + 1, dtype=x.dtype, device=x.device)
    return {"y": s / j, "m": torch.where(s > 0.0, s, torch.zeros_like(s))}


# name -> (reference(**inputs) -> output or {name: output}, reduces, specials)
# reduces: the kernel has a reduction (K = the largest symbol value, else 1), or the symbols
# of the indices it reduces over (K = the product of their values).
# specials: which special values the second run puts into the float inputs.
REFERENCES = {
    "add": (lambda x, y: x + y, False, ("nan", "inf")),
    "add_rmsnorm": (_add_rmsnorm(torch.bfloat16), True, ("nan",)),
    "bias_gelu": (_gelu, False, ("nan",)),
    "gelu_tanh": (lambda x, b: torch.nn.functional.gelu(x + b, approximate="tanh"), False,
                  ("nan",)),
    "tanh_f16": (lambda x: torch.tanh(x * 4.0), False, ("nan", "inf")),
    "tanh_f32": (lambda x: torch.tanh(x * 4.0), False, ("nan", "inf")),
    "erf_f16": (lambda x: torch.erf(x * 4.0), False, ("nan", "inf")),
    "erf_f32": (lambda x: torch.erf(x * 4.0), False, ("nan", "inf")),
    "causal_mask": (_causal, False, ("nan", "inf")),
    "colsum": (lambda x: x.sum(0), True, ("nan",)),
    "global_max_norm": (lambda x: x / x.amax(), True, ("nan",)),
    "layernorm": (lambda x, w, b: _layernorm(x, w, b, 1e-5), True, ("nan",)),
    "logsumexp": (_logsumexp, True, ("nan",)),
    "mean_var": (_mean_var, True, ("nan",)),
    "mixed": (_mixed, False, ("nan",)),
    "rowsum_bf16": (lambda x: x.sum(1), True, ("nan",)),
    "rowmax": (_rowmax, True, ("nan", "inf")),
    "rowmax_bf16": (_rowmax, True, ("nan", "inf")),
    "rowmin": (lambda x: x.amin(1), True, ("nan", "inf")),
    "rowmin_bf16": (lambda x: x.amin(1), True, ("nan", "inf")),
    "rowmean": (lambda x: x.sum(1) / x.shape[1], True, ("nan",)),
    "rowmean_bf16": (lambda x: x.sum(1) / x.shape[1], True, ("nan",)),
    "colsum_bf16": (lambda x: x.sum(0), True, ("nan",)),
    "softmax_f32": (_softmax, True, ("nan",)),
    "layernorm_f32": (lambda x, w, b: _layernorm(x, w, b, 1e-5), True, ("nan",)),
    "rmsnorm_f32": (_rmsnorm, True, ("nan",)),
    "logsumexp_bf16": (_logsumexp, True, ("nan",)),
    "mean_var_bf16": (_mean_var, True, ("nan",)),
    "add_rmsnorm_f32": (_add_rmsnorm(torch.float32), True, ("nan",)),
    "global_max_norm_bf16": (lambda x: x / x.amax(), True, ("nan",)),
    "rowsum_colsum_bf16": (_rowsum_colsum, True, ("nan",)),
    "rmsnorm": (_rmsnorm, True, ("nan",)),
    "rowsum": (lambda x: x.sum(1), True, ("nan",)),
    "rowsum_colsum": (_rowsum_colsum, True, ("nan",)),
    "softmax": (_softmax, True, ("nan",)),
    "swiglu": (lambda a, b: a * torch.sigmoid(a) * b, False, ("nan",)),
    "transpose_scale": (lambda x: 2.0 * x.t(), False, ("nan", "inf")),
    "weighted_colsum": (_weighted_colsum, True, ("nan",)),
    "cross_entropy": (_cross_entropy, True, ("nan",)),
    "embedding": (_embedding, False, ("nan", "inf")),
    "rotary": (_rotary, False, ("nan",)),
    "rotary_f32": (_rotary_f32, False, ("nan",)),
    "colsum_gather": (lambda x, ids, w: x.sum(0) + _embedding(ids, w), True, ("nan",)),
    "transpose_gather": (_transpose_gather, False, ("nan", "inf")),
    "matmul": (lambda a, w: a @ w, True, ("nan",)),
    "matmul_nt": (lambda a, w: a @ w.t(), True, ("nan",)),
    "matmul_tn": (lambda a, w, s: (a.t() @ w) * s, True, ("nan",)),
    "scores": (lambda q, kt: (q @ kt.transpose(1, 2)) / q.shape[2], True, ("nan",)),
    "linear_gelu": (_linear_gelu, True, ("nan",)),
    "linear_relu": (_linear_relu, True, ("nan",)),
    "transpose_add": (lambda x, z: x.t() + z, False, ("nan", "inf")),
    "transpose_bf16": (lambda x: x.t(), False, ("nan", "inf")),
    "transpose_cast": (lambda x: x.t() * 0.5, False, ("nan", "inf")),
    "heads_first": (lambda x: x.permute(0, 2, 1, 3), False, ("nan", "inf")),
    "heads_keys": (lambda x: x.permute(0, 2, 3, 1), False, ("nan", "inf")),
    "heads_keys_f32": (_heads_keys_f32, False, ("nan", "inf")),
    # Scalar parameters (examples/scalars.kiln) arrive as Python numbers.
    "rmsnorm_eps": (lambda x, w, eps: x * torch.rsqrt((x * x).sum(1, keepdim=True) / x.shape[1]
                                                      + eps) * w, True, ("nan",)),
    "colsum_scaled": (lambda x, scale: x.sum(0) * scale, True, ("nan",)),
    "softmax_temperature": (lambda x, t: _softmax(x / t), True, ("nan",)),
    "matmul_scaled": (lambda a, w, scale: (a @ w) * scale, True, ("nan",)),
    # Scans (examples/scan.kiln): inclusive, NaN carried forward (cummax and cummin too).
    "cumsum_rows": (lambda x: x.cumsum(1), True, ("nan", "inf")),
    "cumsum_row": (lambda x: x.cumsum(0), True, ("nan", "inf")),
    "cumsum_cols": (lambda x: x.cumsum(0), True, ("nan", "inf")),
    "cummax_rows": (lambda x: x.cummax(1).values, True, ("nan", "inf")),
    "cummin_cols": (lambda x: x.cummin(1).values, True, ("nan", "inf")),
    "cumprod_rows": (lambda x: x.cumprod(1), True, ("nan",)),
    "cumsum_bf16": (lambda x: x.cumsum(1), True, ("nan",)),
    "cumsum_i32": (lambda n: n.cumsum(1), True, ("nan",)),  # specials touch float inputs only
    "cumsum_fused": (_cumsum_fused, True, ("nan",)),
    # Reductions over several indices (examples/spatial_mean.kiln): reduces names the
    # reduced symbols, K their product.
    "spatial_mean": (lambda x: x.mean((2, 3)), ("H", "W"), ("nan",)),
    "spatial_mean_bf16": (lambda x: x.mean((2, 3)), ("H", "W"), ("nan",)),
    "channel_sums": (lambda x: {"s": x.sum((0, 2, 3)), "q": (x * x).sum((0, 2, 3))},
                     ("N", "H", "W"), ("nan",)),
    "sum_bh": (lambda x: x.sum((0, 2)), ("B", "H"), ("nan",)),
    "channel_mean_bf16": (lambda x: x.mean((0, 2)), ("N", "L"), ("nan",)),
    # Outer reductions of examples/reduction_suite.kiln: two outputs of one pass, and a mean
    # over the middle index of three.
    "ln_wgrad_bf16": (lambda dy, xhat: {"dw": (dy * xhat).sum(0), "db": dy.sum(0)}, ("M",),
                      ("nan",)),
    "mid_mean": (lambda x: x.mean(1), ("M",), ("nan",)),
    "diag_sums": (lambda x, t: torch.einsum("nchw,wchw->c", x, t), ("N", "H", "W"), ("nan",)),
    "token_max": (lambda x: x.amax((0, 1)), ("B", "S"), ("nan", "inf")),
    # Strided inputs (examples/strided.kiln): these cases pass contiguous tensors (the fast
    # path); test_strided_views passes transposed, padded and expanded views.
    "layernorm_strided": (lambda x, w, b: _layernorm(x, w, b, 1e-5), True, ("nan",)),
    "layernorm_strided_f32": (lambda x, w, b: _layernorm(x, w, b, 1e-5), True, ("nan",)),
    "add_strided": (lambda a, bias: a + bias, False, ("nan", "inf")),
    "colsum_strided": (lambda x: x.sum(0), True, ("nan",)),
}

# Kernels torch cannot check: the reason. tests/gpu/cases.txt checks them against the
# interpreter instead.
TORCH_UNSUPPORTED = {
    "hash_gather": "u32 parameters: torch.uint32 (torch >= 2.3) has no arithmetic to check with",
    "affine_scalars": "a u32 output: torch.uint32 (torch >= 2.3) has no arithmetic to check with",
    "dropout": "Philox counters torch does not lay out this way: the interpreter checks it",
    "dropout_backward": "Philox counters torch does not lay out this way: the interpreter checks it",
    "dropout_bf16": "Philox counters torch does not lay out this way: the interpreter checks it",
    "dropout_backward_bf16": "Philox counters torch does not lay out this way: the interpreter "
                             "checks it",
    "dropout_mask": "u32 output and Philox numbers: the interpreter checks them bit for bit",
}

# Integer inputs read as gather positions: the symbol of the dimension they index. They are
# drawn in [0, extent) with a few out of range (-1, extent), which the kernel clamps.
INDEX_INPUTS = {("cross_entropy", "t"): "V", ("embedding", "ids"): "V",
                ("rotary", "pos"): "P", ("rotary_f32", "pos"): "P",
                ("colsum_gather", "ids"): "V", ("transpose_gather", "t"): "M"}
# Contractions: M, N, K of 1, odd and not multiples of the tiles, K not a multiple of 8 (rows
# copied element by element) and of 8 (through tensor maps on sm_90).
_MNK = [{"M": 1, "N": 1, "K": 1}, {"M": 17, "N": 33, "K": 1000}, {"M": 129, "N": 64, "K": 4095},
        {"M": 257, "N": 1000, "K": 64}]
_BSHD = [{"B": 1, "S": 1, "H": 1, "D": 1}, {"B": 2, "S": 33, "H": 3, "D": 64},
         {"B": 1, "S": 1000, "H": 7, "D": 5}, {"B": 3, "S": 100, "H": 5, "D": 72}]
# [B, C, H, W]: 1s, odd extents (7 x 7: H*W = 49, no vectors), H*W a multiple of the vector
# but W not (14 x 14), and long flattened rows (H*W = 16641, looped).
_BCHW = [{"B": 1, "C": 1, "H": 1, "W": 1}, {"B": 3, "C": 5, "H": 7, "W": 7},
         {"B": 2, "C": 64, "H": 14, "W": 14}, {"B": 1, "C": 3, "H": 129, "W": 129},
         {"B": 5, "C": 33, "H": 1, "W": 1000}]
# Kernels with more symbols than SHAPES_1 and SHAPES_2 cover.
SHAPES_BY_KERNEL = {"cummin_cols": [{"B": 1, "M": 1, "N": 1}, {"B": 3, "M": 1000, "N": 7},
                                    {"B": 2, "M": 33, "N": 4097}],
                    "embedding": [{"T": 1, "V": 1, "D": 1}, {"T": 7, "V": 3, "D": 4099},
                                  {"T": 1000, "V": 50, "D": 1024}, {"T": 4097, "V": 32003, "D": 33}],
                    "rotary": [{"T": 1, "H": 1, "R": 1, "P": 1}, {"T": 7, "H": 3, "R": 33, "P": 5},
                               {"T": 1000, "H": 8, "R": 64, "P": 4096}],
                    "rotary_f32": [{"T": 1, "H": 1, "D": 1, "P": 1}, {"T": 7, "H": 3, "D": 33, "P": 5},
                                   {"T": 1000, "H": 8, "D": 128, "P": 4096}],
                    "colsum_gather": [{"M": 1, "N": 1, "V": 1}, {"M": 1000, "N": 1024, "V": 7},
                                      {"M": 70001, "N": 3, "V": 1000}],
                    "matmul": _MNK, "matmul_nt": _MNK, "matmul_tn": _MNK, "linear_gelu": _MNK,
                    "linear_relu": _MNK,
                    "matmul_scaled": _MNK,
                    "scores": [{"B": 1, "M": 1, "N": 1, "D": 1}, {"B": 3, "M": 17, "N": 1000, "D": 64},
                               {"B": 5, "M": 257, "N": 129, "D": 128}],
                    "heads_first": _BSHD, "heads_keys": _BSHD, "heads_keys_f32": _BSHD,
                    "spatial_mean": _BCHW, "spatial_mean_bf16": _BCHW, "sum_bh": _BCHW,
                    "channel_mean_bf16": [{"N": 1, "C": 1, "L": 1}, {"N": 3, "C": 5, "L": 8},
                                          {"N": 7, "C": 33, "L": 1001},
                                          {"N": 16, "C": 64, "L": 4096}],
                    "channel_sums": [{"N": d["B"], "C": d["C"], "H": d["H"], "W": d["W"]}
                                     for d in _BCHW],
                    "token_max": [{"B": 1, "S": 1, "D": 1}, {"B": 3, "S": 33, "D": 1000},
                                  {"B": 7, "S": 1000, "D": 5}, {"B": 2, "S": 4097, "D": 64}],
                    "diag_sums": [{"N": 1, "C": 1, "H": 1, "W": 1}, {"N": 2, "C": 3, "H": 4, "W": 4},
                                  {"N": 3, "C": 5, "H": 7, "W": 8}],
                    "mid_mean": [{"B": 1, "M": 1, "N": 1}, {"B": 3, "M": 1000, "N": 33},
                                 {"B": 2, "M": 70001, "N": 7}, {"B": 5, "M": 17, "N": 4099}]}

SHAPES_2 = [(1, 1), (1, 4099), (7, 33), (129, 1000), (3, 70001), (70001, 3), (4097, 5)]
SHAPES_1 = [1, 7, 129, 1000, 100003]
MAX_ELEMENTS = 1 << 22


def example_kernels():
    """(example, kernel) for every kernel of every example, read from the spec text."""
    out = []
    for spec in sorted((REPO / "examples").glob("*.kiln")):
        for name in re.findall(r"^kernel\s+(\w+)\s*\(", spec.read_text(), re.M):
            out.append((spec.stem, name))
    return out


_bundles = {}


def bundle(example):
    if example not in _bundles:
        d = os.environ.get("KILN_TEST_BUNDLES")
        if d and (Path(d) / example / "manifest.json").is_file():
            _bundles[example] = kiln.load(Path(d) / example)
        else:
            _bundles[example] = kiln.compile(REPO / "examples" / f"{example}.kiln")
    return _bundles[example]


def symbol_cases(symbols, name=None):
    if name in SHAPES_BY_KERNEL:
        return SHAPES_BY_KERNEL[name]
    if len(symbols) == 1:
        return [{symbols[0]: n} for n in SHAPES_1]
    if len(symbols) == 2:
        return [dict(zip(symbols, s)) for s in SHAPES_2]
    raise AssertionError(f"no shapes for {len(symbols)} symbols: add some")


TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                "i32": torch.int32, "i64": torch.int64}
UNIT = {"f32": 0.0, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}


def make_inputs(kernel, syms, special, gen):
    ins = {}
    for p in kernel.inputs:
        if p.scalar:  # a Python number, as kiln run draws them; floats as the kernel rounds them
            if p.dtype in ("i32", "i64"):
                ins[p.name] = int(torch.randint(1, 1001, (), generator=gen, device="cuda"))
            else:
                u = torch.rand((), generator=gen, device="cuda") * 0.75 + 0.125
                ins[p.name] = u.to(TORCH_DTYPES[p.dtype]).item()
            continue
        shape = [syms[d] if isinstance(d, str) else d for d in p.dims]
        dt = TORCH_DTYPES[p.dtype]
        extent = INDEX_INPUTS.get((kernel.name, p.name))
        if extent is not None:
            n = syms[extent]
            t = torch.randint(0, n, shape, generator=gen, device="cuda", dtype=dt)
            flat = t.view(-1)
            flat[::61] = -1
            flat[7::61] = n
        elif p.dtype in ("i32", "i64"):
            t = torch.randint(-1000, 1001, shape, generator=gen, device="cuda", dtype=dt)
        else:
            t = torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32).to(dt)
            flat = t.view(-1)
            if special == "nan":
                flat[(flat.numel() * 2) // 3] = float("nan")
            elif special == "inf":
                flat[flat.numel() // 3] = float("inf")
                if flat.numel() > 2:
                    flat[flat.numel() - 1] = float("-inf")
        ins[p.name] = t
    return ins


def poisoned_outputs(kernel, syms):
    outs = {}
    for p in kernel.outputs:
        shape = [syms[d] if isinstance(d, str) else d for d in p.dims]
        dt = TORCH_DTYPES[p.dtype]
        if p.dtype == "i32":
            outs[p.name] = torch.full(shape, -(2 ** 31) + 7, dtype=dt, device="cuda")
        else:
            outs[p.name] = torch.full(shape, float("nan"), dtype=dt, device="cuda")
    return outs


def approx_error(b, name):
    """The largest steps[].approx_error of kernel `name` in bundle `b`'s manifest: the error of
    approximate functions (tanh and erf on tanh.approx.f32 in 16-bit steps), which the
    harness's tolerance adds to gamma too (docs/testing.md, "Tolerances")."""
    manifest = json.loads((b.path / "manifest.json").read_text())
    kernel = next(k for k in manifest["kernels"] if k["name"] == name)
    return max((s.get("approx_error", 0.0) for s in kernel["steps"]), default=0.0)


def check_close(where, p, got, exact, K, approx=0.0):
    if p.dtype == "i32":
        bad = got.to(torch.int64) != exact.to(torch.int64)
        assert not bad.any(), (f"{where}: {int(bad.sum())} of {bad.numel()} i32 elements "
                               f"differ; first at {bad.nonzero()[0].tolist()}: got "
                               f"{got[bad][0].item()}, expected {exact[bad][0].item()}")
        return
    g = got.to(F64)
    e = exact.to(F64)
    nan = e.isnan()
    assert g[nan].isnan().all(), f"{where}: {int((~g[nan].isnan()).sum())} elements not NaN " \
                                 f"where torch has NaN"
    inf = e.isinf()
    assert (g[inf] == e[inf]).all(), f"{where}: infinities differ from torch's"
    fin = ~nan & ~inf
    if not fin.any():
        return
    u = 2.0 * UNIT[p.dtype]
    gamma = 16 * 2.0 ** -24 * (1 + math.ceil(math.log2(max(K, 1)))) + approx
    scale = e[fin].abs().max()
    tol = u * e.abs() + gamma * (e.abs() + scale)
    err = (g - e).abs()
    bad = fin & ~(err <= tol)  # a NaN or unwritten (poisoned) element is bad too
    if bad.any():
        i = bad.nonzero()[0].tolist()
        raise AssertionError(
            f"{where}: {int(bad.sum())} of {bad.numel()} elements out of tolerance; first at "
            f"{i}: got {g[tuple(i)].item()!r}, expected {e[tuple(i)].item()!r}, |err| "
            f"{err[tuple(i)].item():.3g} > {tol[tuple(i)].item():.3g} (u {u}, gamma "
            f"{gamma:.3g}, scale {scale.item():.3g})")


# Kernels torch cannot check are not cases here (a skip fails the GPU machine's run): the GPU
# end-to-end tests (tests/gpu/cases.txt) check them against the interpreter.
CASES = [(ex, k, mode) for ex, k in example_kernels() for mode in ("random", "special")
         if k not in TORCH_UNSUPPORTED]


@pytest.mark.parametrize("example,name,mode", CASES,
                         ids=[f"{e}/{k}/{m}" for e, k, m in CASES])
def test_kernel_matches_torch(example, name, mode):
    assert name in REFERENCES, f"no torch reference for kernel {name} ({example}.kiln): add " \
                               f"one to REFERENCES in {Path(__file__).name}"
    ref, reduces, specials = REFERENCES[name]
    b = bundle(example)
    fn = b[name]
    kernel = fn.kernel
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    cases = 0
    for syms in symbol_cases(kernel.symbols, name):
        numel = max(math.prod(syms[d] if isinstance(d, str) else d for d in p.dims)
                    for p in kernel.params)
        if numel > MAX_ELEMENTS:
            continue
        for special in (specials if mode == "special" else (None,)):
            ins = make_inputs(kernel, syms, special, gen)
            outs = poisoned_outputs(kernel, syms)
            result = fn(**ins, **outs)
            torch.cuda.synchronize()
            got = (result,) if len(kernel.outputs) == 1 else result
            for p, g in zip(kernel.outputs, got):
                assert g is outs[p.name]
            exact = ref(**{k: (v if not isinstance(v, torch.Tensor)
                               else v.to(torch.int64) if v.dtype in (torch.int32, torch.int64)
                               else v.to(F64))
                           for k, v in ins.items()})
            if not isinstance(exact, dict):
                exact = {kernel.outputs[0].name: exact}
            K = (math.prod(syms[s] for s in reduces) if isinstance(reduces, tuple)
                 else max(syms.values())) if reduces else 1
            for p in kernel.outputs:
                check_close(f"{name} {syms} {special or 'random'} output {p.name}", p,
                            outs[p.name], exact[p.name], K, approx_error(b, name))
            cases += 1
    assert cases > 0


def test_every_example_kernel_has_a_reference():
    names = {k for _, k in example_kernels()}
    known = set(REFERENCES) | set(TORCH_UNSUPPORTED)
    assert names <= known, sorted(names - known)


# Strided inputs on views torch makes without a copy: a transposed tensor (x.t() of an [N, M]
# tensor), rows padded to a pitch (a slice of wider rows), and an expanded one (stride 0). The
# views must give what their contiguous copies give; a non-strided parameter still refuses them.
_VIEW_SHAPES = [(1, 1), (7, 1000), (1000, 33), (4097, 3), (3, 100003), (64, 8192)]


def _views(M, N, dtype, gen):
    base_t = torch.randn(N, M, generator=gen, device="cuda").to(dtype)
    wide = torch.randn(M, N + 5, generator=gen, device="cuda").to(dtype)
    return {"transposed": base_t.t(), "padded": wide[:, 2:N + 2]}


@pytest.mark.parametrize("name,dtype", [("layernorm_strided", torch.bfloat16),
                                        ("layernorm_strided_f32", torch.float32)])
def test_strided_views_layernorm(name, dtype):
    fn = bundle("strided")[name]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    for M, N in _VIEW_SHAPES:
        w = torch.randn(N, generator=gen, device="cuda").to(dtype)
        b = torch.randn(N, generator=gen, device="cuda").to(dtype)
        for kind, x in _views(M, N, dtype, gen).items():
            assert not x.is_contiguous() or M == 1 or N == 1
            y = torch.full((M, N), float("nan"), dtype=dtype, device="cuda")
            fn(x, w, b, y)
            torch.cuda.synchronize()
            exact = _layernorm(x.to(F64), w.to(F64), b.to(F64), 1e-5)
            p = fn.kernel.outputs[0]
            check_close(f"{name} M={M} N={N} {kind}", p, y, exact, N)


def test_strided_views_add_transposed_and_expanded():
    fn = bundle("strided")["add_strided"]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(11)
    for M, N in [(1, 1), (1000, 7), (4097, 33), (1, 1000), (8191, 8193)]:
        a = torch.randn(N, M, generator=gen, device="cuda").t()   # transposed
        bias = torch.randn(N, generator=gen, device="cuda").expand(M, N)  # stride (0, 1)
        col = torch.randn(M, 1, generator=gen, device="cuda").expand(M, N)  # stride (1, 0)
        for other in (bias, col):
            y = fn(a, other)
            torch.cuda.synchronize()
            check_close(f"add_strided M={M} N={N}", fn.kernel.outputs[0], y,
                        a.to(F64) + other.to(F64), 1)


def test_strided_views_colsum_transposed():
    fn = bundle("strided")["colsum_strided"]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(13)
    for M, N in [(1, 1), (1000, 33), (100003, 3), (4097, 1024)]:
        x = torch.randn(N, M, generator=gen, device="cuda").t()
        s = fn(x)
        torch.cuda.synchronize()
        check_close(f"colsum_strided M={M} N={N}", fn.kernel.outputs[0], s,
                    x.to(F64).sum(0), M)


def test_non_strided_parameters_still_refuse_views():
    b = bundle("strided")
    x = torch.randn(33, 16, device="cuda").t()
    w = torch.randn(33, device="cuda")
    with pytest.raises(ValueError) as e:  # w is not strided: a view of it is refused
        b.layernorm_strided_f32(x, torch.randn(66, device="cuda")[::2], w)
    assert "argument 2 (w): not contiguous" in str(e.value)
    assert isinstance(e.value, kiln.KilnError)
    with pytest.raises(ValueError):  # outputs are never strided
        b.layernorm_strided_f32(x, w, w, torch.empty(33, 16, device="cuda").t())
