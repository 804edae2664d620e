"""The scans of bench/scans.sh in PyTorch (eager and torch.compile with
mode="max-autotune-no-cudagraphs"), timed on the same GPU in the same run as Kiln, with the
device-to-device copy bandwidth they are judged against (bench/torch_common.py says how).

    python3 bench/torch_scans.py OUT.json [NAME_PART ...]"""
import sys

import torch

from torch_common import case, copy_gbps, report


def main():
    dev, bf16, f32 = "cuda", torch.bfloat16, torch.float32
    torch.manual_seed(0)
    copy = copy_gbps()
    cases = []
    only = sys.argv[2:]

    def add(name, make_args, fn, nbytes):
        if not only or any(part in name for part in only):
            cases.append(case(name, make_args(), fn, nbytes))

    def randn(*shape, dtype=f32):
        return torch.randn(*shape, device=dev, dtype=dtype)

    M, N = 4096, 32768
    add("cumsum f32 4096x32768", lambda: (randn(M, N),), lambda x: torch.cumsum(x, 1),
        2 * 4 * M * N)
    add("cumsum f32 1x67108864", lambda: (randn(1 << 26),), lambda x: torch.cumsum(x, 0),
        2 * 4 * (1 << 26))
    add("cumsum cols f32 4096x32768", lambda: (randn(M, N),), lambda x: torch.cumsum(x, 0),
        2 * 4 * M * N)
    add("cummax f32 4096x32768", lambda: (randn(M, N),), lambda x: torch.cummax(x, 1).values,
        2 * 4 * M * N)
    # torch accumulates a bf16 cumsum in bf16 unless asked: dtype=f32, then rounded, as Kiln.
    add("cumsum bf16 4096x32768", lambda: (randn(M, N, dtype=bf16),),
        lambda x: torch.cumsum(x, 1, dtype=f32).to(bf16), 2 * 2 * M * N)
    report(sys.argv[1], copy, cases)


if __name__ == "__main__":
    main()
