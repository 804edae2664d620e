"""The cases of bench/memory_bound.sh (issue 19): each a kernel of bench/memory_bound.kiln at one
shape, and the same computation in PyTorch. `python3 bench/memory_bound_cases.py --list` prints
"ID KERNEL SHAPE" lines for the Kiln side (no torch needed); bench/torch_memory_bound.py times
the torch side. Bytes are what a case must move at least: every input read once and every
output written once, the same count for Kiln and torch.

A case's `kind` groups the plot; `bound` is "memory" for the cases that are memory-bound by
nature (judged against >= 90% of the copy bandwidth), "launch" for the small ones (judged by
time only)."""
import sys

F32, BF16 = "f32", "bf16"
SIZE = {F32: 4, BF16: 2}


class Case:
    def __init__(self, cid, kind, kernel, shape, ins, outs, torch_fn, bound="memory", note=""):
        self.id, self.kind, self.kernel, self.shape = cid, kind, kernel, shape
        self.ins, self.outs = ins, outs  # [(dtype, [extents])] in the kernel's order
        self.torch_fn, self.bound, self.note = torch_fn, bound, note

    def shape_arg(self):
        return ",".join(f"{k}={v}" for k, v in self.shape.items())

    def bytes(self):
        n = 0
        for dtype, ext in self.ins + self.outs:
            e = SIZE[dtype]
            for x in ext:
                e *= x
            n += e
        return n


def _t():
    import torch
    import torch.nn.functional as F
    return torch, F


def add(a, b): return a + b
def bias_gelu_tanh(x, b): return _t()[1].gelu(x + b, approximate="tanh")
def bias_gelu_erf(x, b): return _t()[1].gelu(x + b)
def silu_mul(a, b): return _t()[1].silu(a) * b
def scale_cast(x): return (x * 0.125).bfloat16() if x.dtype != _t()[0].float64 else x * 0.125
def transpose(x): return x.t().contiguous()
def transpose_add(x, z): return x.t() + z
def heads_first(x): return x.permute(0, 2, 1, 3).contiguous()
def heads_keys(x): return x.permute(0, 2, 3, 1).contiguous()
def rotate3(x): return x.permute(2, 0, 1).contiguous()
def rowsum(x): return x.sum(1)
def rowmax(x): return x.amax(1)
def softmax(x): return _t()[0].softmax(x, -1)
def logsumexp(x): return _t()[0].logsumexp(x.float() if x.dtype != _t()[0].float64 else x, -1)
def total(x): return x.sum(1)
def colsum(x): return x.sum(0, dtype=_t()[0].float64 if x.dtype == _t()[0].float64
                            else _t()[0].float32)
def mid_mean(x): return x.mean(1)
def ln_wgrad(dy, xhat):
    torch = _t()[0]
    c = torch.float64 if dy.dtype == torch.float64 else torch.float32
    return (dy.to(c) * xhat.to(c)).sum(0), dy.to(c).sum(0)
def layernorm(x, w, b): return _t()[1].layer_norm(x, (x.shape[-1],), w, b, 1e-5)
def rmsnorm(x, w): return _t()[1].rms_norm(x, (x.shape[-1],), w, 1e-6)
def add_rmsnorm(x, r, w):
    h = x + r
    return h, _t()[1].rms_norm(h, (h.shape[-1],), w, 1e-6)


def _cases():
    c = []
    M, N = 8192, 8192
    c.append(Case("add_f32", "pointwise", "add_f32", {"M": M, "N": N},
                  [(F32, [M, N])] * 2, [(F32, [M, N])], add))
    c.append(Case("add_f32_odd", "pointwise", "add_f32", {"M": 8191, "N": 8193},
                  [(F32, [8191, 8193])] * 2, [(F32, [8191, 8193])], add))
    M, N = 16384, 8192
    for k, fn in (("bias_gelu_tanh", bias_gelu_tanh), ("bias_gelu_erf", bias_gelu_erf)):
        c.append(Case(k, "pointwise", k, {"M": M, "N": N}, [(BF16, [M, N]), (BF16, [N])],
                      [(BF16, [M, N])], fn))
    c.append(Case("silu_mul", "pointwise", "silu_mul", {"M": M, "N": N}, [(BF16, [M, N])] * 2,
                  [(BF16, [M, N])], silu_mul))
    c.append(Case("scale_cast", "pointwise", "scale_cast", {"M": 8192, "N": 8192},
                  [(F32, [8192, 8192])], [(BF16, [8192, 8192])], scale_cast))
    B, S, D = 32, 2048, 1024
    c.append(Case("add_pos_3d", "pointwise", "add_pos", {"B": B, "S": S, "D": D},
                  [(BF16, [B, S, D]), (BF16, [S, D])], [(BF16, [B, S, D])], add))
    for cid, k, dt, (M, N), fn in (
            ("transpose_f32", "transpose_f32", F32, (8192, 8192), transpose),
            ("transpose_f32_odd", "transpose_f32", F32, (8191, 8193), transpose),
            ("transpose_bf16", "transpose_bf16", BF16, (8192, 8192), transpose),
            ("transpose_bf16_odd", "transpose_bf16", BF16, (8191, 8193), transpose)):
        c.append(Case(cid, "transpose", k, {"M": M, "N": N}, [(dt, [N, M])], [(dt, [M, N])], fn))
    c.append(Case("transpose_add", "transpose", "transpose_add", {"M": 8192, "N": 8192},
                  [(F32, [8192, 8192])] * 2, [(F32, [8192, 8192])], transpose_add))
    B, S, H, D = 8, 2048, 32, 128
    c.append(Case("heads_first_4d", "transpose", "heads_first", {"B": B, "S": S, "H": H, "D": D},
                  [(BF16, [B, S, H, D])], [(BF16, [B, H, S, D])], heads_first))
    c.append(Case("heads_keys_4d", "transpose", "heads_keys", {"B": B, "S": S, "H": H, "D": D},
                  [(BF16, [B, S, H, D])], [(BF16, [B, H, D, S])], heads_keys))
    B, S, H, D = 8, 2047, 32, 127
    c.append(Case("heads_keys_4d_odd", "transpose", "heads_keys", {"B": B, "S": S, "H": H, "D": D},
                  [(BF16, [B, S, H, D])], [(BF16, [B, H, D, S])], heads_keys))
    # D not a multiple of 8 but H * D (1200) one: the two are one dimension of the tiles
    B, S, H, D = 4, 4096, 12, 100
    c.append(Case("heads_keys_4d_d100", "transpose", "heads_keys", {"B": B, "S": S, "H": H, "D": D},
                  [(BF16, [B, S, H, D])], [(BF16, [B, H, D, S])], heads_keys))
    A, Bb, C = 256, 512, 64
    c.append(Case("rotate3_3d", "transpose", "rotate3", {"A": A, "B": Bb, "C": C},
                  [(F32, [A, Bb, C])], [(F32, [C, A, Bb])], rotate3))
    c.append(Case("rowsum_f32", "row reduction", "rowsum_f32", {"M": 32768, "N": 4096},
                  [(F32, [32768, 4096])], [(F32, [32768])], rowsum))
    c.append(Case("rowmax_bf16", "row reduction", "rowmax_bf16", {"M": 32768, "N": 4096},
                  [(BF16, [32768, 4096])], [(BF16, [32768])], rowmax))
    for cid, k, dt, (M, N) in (("softmax_bf16_1k", "softmax_bf16", BF16, (32768, 1024)),
                               ("softmax_bf16_8k", "softmax_bf16", BF16, (8192, 8192)),
                               ("softmax_bf16_odd", "softmax_bf16", BF16, (16384, 4095)),
                               ("softmax_f32_odd", "softmax_f32", F32, (32768, 1001)),
                               ("softmax_f32_32k", "softmax_f32", F32, (4096, 32768))):
        c.append(Case(cid, "softmax", k, {"M": M, "N": N}, [(dt, [M, N])], [(dt, [M, N])],
                      softmax))
    c.append(Case("logsumexp_bf16", "row reduction", "logsumexp_bf16", {"M": 4096, "N": 32768},
                  [(BF16, [4096, 32768])], [(F32, [4096])], logsumexp))
    c.append(Case("total_f32_64m", "row reduction", "total_f32", {"M": 1, "N": 1 << 26},
                  [(F32, [1, 1 << 26])], [(F32, [1])], total))
    c.append(Case("colsum_f32", "outer reduction", "colsum_f32", {"M": 4096, "N": 32768},
                  [(F32, [4096, 32768])], [(F32, [32768])], colsum))
    c.append(Case("colsum_bf16_2k", "outer reduction", "colsum_bf16", {"M": 65536, "N": 2048},
                  [(BF16, [65536, 2048])], [(F32, [2048])], colsum))
    c.append(Case("colsum_bf16_64", "outer reduction", "colsum_bf16", {"M": 1 << 20, "N": 64},
                  [(BF16, [1 << 20, 64])], [(F32, [64])], colsum))
    c.append(Case("colsum_bf16_16", "outer reduction", "colsum_bf16", {"M": 1 << 22, "N": 16},
                  [(BF16, [1 << 22, 16])], [(F32, [16])], colsum))
    B, M, N = 64, 1024, 512
    c.append(Case("mid_mean_3d", "outer reduction", "mid_mean", {"B": B, "M": M, "N": N},
                  [(F32, [B, M, N])], [(F32, [B, N])], mid_mean))
    M, N = 32768, 4096
    c.append(Case("ln_wgrad", "outer reduction", "ln_wgrad", {"M": M, "N": N},
                  [(BF16, [M, N])] * 2, [(F32, [N])] * 2, ln_wgrad))
    c.append(Case("ln_wgrad_64", "outer reduction", "ln_wgrad", {"M": 1 << 20, "N": 64},
                  [(BF16, [1 << 20, 64])] * 2, [(F32, [64])] * 2, ln_wgrad))
    c.append(Case("layernorm_bf16", "norm", "layernorm_bf16", {"M": M, "N": N},
                  [(BF16, [M, N]), (BF16, [N]), (BF16, [N])], [(BF16, [M, N])], layernorm))
    c.append(Case("layernorm_f32_odd", "norm", "layernorm_f32", {"M": 16383, "N": 1023},
                  [(F32, [16383, 1023]), (F32, [1023]), (F32, [1023])], [(F32, [16383, 1023])],
                  layernorm))
    c.append(Case("rmsnorm_bf16", "norm", "rmsnorm_bf16", {"M": M, "N": N},
                  [(BF16, [M, N]), (BF16, [N])], [(BF16, [M, N])], rmsnorm))
    c.append(Case("add_rmsnorm_bf16", "norm", "add_rmsnorm", {"M": M, "N": N},
                  [(BF16, [M, N])] * 2 + [(BF16, [N])], [(BF16, [M, N])] * 2, add_rmsnorm))
    c.append(Case("softmax_f32_small", "small", "softmax_f32", {"M": 64, "N": 1000},
                  [(F32, [64, 1000])], [(F32, [64, 1000])], softmax, bound="launch"))
    c.append(Case("add_f32_small", "small", "add_f32", {"M": 256, "N": 256},
                  [(F32, [256, 256])] * 2, [(F32, [256, 256])], add, bound="launch"))
    return c


CASES = _cases()

if __name__ == "__main__" and sys.argv[1:] == ["--list"]:
    for c in CASES:
        print(c.id, c.kernel, c.shape_arg())
