"""Per-kernel GPU times of torch.compile(mode="max-autotune-no-cudagraphs") on one case of
bench/memory_bound_cases.py: python3 torch_profile.py CASE_ID. Compiles, checks nothing (the
suite does), warms up, then profiles 20 calls and prints each kernel's mean time and count."""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, "bench")
from memory_bound_cases import BF16, CASES  # noqa: E402

c = next(c for c in CASES if c.id == sys.argv[1])
args = [torch.randn(*ext, device="cuda", dtype={BF16: torch.bfloat16}.get(dt, torch.float32))
        for dt, ext in c.ins]
fn = torch.compile(c.torch_fn, mode="max-autotune-no-cudagraphs")
for _ in range(30):
    fn(*args)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(20):
        fn(*args)
    torch.cuda.synchronize()
for e in prof.key_averages():
    if e.device_type.name == "CUDA" or getattr(e, "device_time", 0):
        print(f"{c.id}: {e.key[:90]:90s} count {e.count:4d} mean {e.device_time:8.2f} us")
