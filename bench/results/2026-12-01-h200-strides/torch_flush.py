"""Call 2's torch side: torch.compile(mode="max-autotune-no-cudagraphs") of some of the suite's
cases timed three ways in turn: bench/torch_common.bench (the L2 flushed by a read of twice
the L2), triton.testing.do_bench (flushed by a write of 256 MB, what the suite used before),
and bench again; and the 1 GiB copy both ways.
    python3 torch_flush.py ID ..."""
import sys

import torch
import triton.testing

sys.path.insert(0, "bench")
import torch_common  # noqa: E402
from memory_bound_cases import BF16, CASES  # noqa: E402


def write(fn):
    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median") * 1e-3


n = 256 * 1024 * 1024
src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_(-2, 2)
dst = torch.empty_like(src)
for name, t in (("read", torch_common.bench), ("write", write)):
    print(f"copy 1 GiB, flushed by a {name}: {2 * n * 4 / t(lambda: dst.copy_(src)) / 1e9:.0f} GB/s")
del src, dst
for c in CASES:
    if c.id not in sys.argv[1:]:
        continue
    args = [torch.randn(*ext, device="cuda", dtype=torch.bfloat16 if dt == BF16 else torch.float32)
            for dt, ext in c.ins]
    f = torch.compile(c.torch_fn, mode="max-autotune-no-cudagraphs")
    f(*args)
    t = [torch_common.bench(lambda: f(*args)), write(lambda: f(*args)),
         torch_common.bench(lambda: f(*args))]
    print(f"{c.id:<20} torch.compile read {t[0]*1e6:8.1f} us  write {t[1]*1e6:8.1f} us  "
          f"read {t[2]*1e6:8.1f} us  ({c.bytes() / 1e6:.1f} MB)")
    del args, f
    torch.cuda.empty_cache()
