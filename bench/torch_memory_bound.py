"""The torch side of bench/memory_bound.sh: every case of bench/memory_bound_cases.py through
eager PyTorch and torch.compile(mode="max-autotune-no-cudagraphs"), each checked against the
same function in float64 first (bench/torch_common.py), with the peak copy bandwidth measured
in the same process.

    python3 bench/torch_memory_bound.py OUT.json [ID_PART ... | K/N]

K/N runs every N-th case from the K-th (0-based), for calls too short for every case (all 36
of 2026-11-29 took 120 s on an H200, bench/results/2026-11-29-h200-suite); the summary reads
every torch*.json of the directory (torch_0.json, torch_1.json, ...)."""
import sys

import torch

from memory_bound_cases import BF16, CASES
from torch_common import case, copy_gbps, report


def main():
    torch.manual_seed(0)
    copy = copy_gbps()
    only = [a for a in sys.argv[2:] if "/" not in a]
    shard = next((tuple(map(int, a.split("/"))) for a in sys.argv[2:] if "/" in a), (0, 1))
    results, failed = [], []
    for i, c in enumerate(CASES):
        if only and not any(part in c.id for part in only) or i % shard[1] != shard[0]:
            continue
        dtype = {BF16: torch.bfloat16}
        args = [torch.randn(*ext, device="cuda", dtype=dtype.get(dt, torch.float32))
                for dt, ext in c.ins]
        try:
            r = case(c.id, args, c.torch_fn, c.bytes())
            results.append(r)
        except Exception as e:  # noqa: BLE001: the message is the report
            print(f"torch {c.id}: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            failed.append(c.id)
        del args
        torch.cuda.empty_cache()
    report(sys.argv[1], copy, results)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
