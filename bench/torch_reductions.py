"""The reductions of bench/reductions.sh in PyTorch (eager and torch.compile with
mode="max-autotune-no-cudagraphs"), timed on the same GPU in the same run as Kiln, with the
device-to-device copy bandwidth they are judged against (bench/torch_common.py says how).

    python3 bench/torch_reductions.py OUT.json [NAME_PART ...]

With NAME_PARTs, only the cases whose name contains one of them run."""
import sys

import torch
import torch.nn.functional as F

from torch_common import case, copy_gbps, report


def main():
    dev, bf16, f32 = "cuda", torch.bfloat16, torch.float32
    torch.manual_seed(0)
    copy = copy_gbps()

    def randn(*shape, dtype):
        return torch.randn(*shape, device=dev, dtype=dtype)

    cases = []
    only = sys.argv[2:]

    def add(name, make_args, fn, nbytes):
        """Runs the case now (make_args allocates its inputs) unless filtered out."""
        if not only or any(part in name for part in only):
            cases.append(case(name, make_args(), fn, nbytes))

    M, N = 32768, 4096
    add("rowsum f32 32768x4096", lambda: (randn(M, N, dtype=f32),), lambda x: x.sum(1),
        4 * M * N + 4 * M)
    M, N = 4096, 32768
    add("colsum f32 4096x32768", lambda: (randn(M, N, dtype=f32),), lambda x: x.sum(0),
        4 * M * N + 4 * N)
    for M, N in [(32768, 1024), (8192, 8192)]:
        add(f"softmax bf16 {M}x{N}", lambda: (randn(M, N, dtype=bf16),),
            lambda x: torch.softmax(x, -1), 2 * 2 * M * N)
    M, N = 32768, 4096
    add("layernorm bf16 32768x4096",
        lambda: (randn(M, N, dtype=bf16), randn(N, dtype=bf16), randn(N, dtype=bf16)),
        lambda x, w, b: F.layer_norm(x, (N,), w, b, 1e-5), 2 * 2 * M * N + 4 * N)
    add("rmsnorm bf16 32768x4096", lambda: (randn(M, N, dtype=bf16), randn(N, dtype=bf16)),
        lambda x, w: F.rms_norm(x, (N,), w, 1e-6), 2 * 2 * M * N + 2 * N)
    # Few, very long rows (split reductions).
    M, N = 1, 1 << 26
    add("rowsum f32 1x67108864", lambda: (randn(M, N, dtype=f32),), lambda x: x.sum(1),
        4 * M * N + 4 * M)
    M, N = 4, 1 << 22
    add("softmax bf16 4x4194304", lambda: (randn(M, N, dtype=bf16),),
        lambda x: torch.softmax(x, -1), 2 * 2 * M * N)
    # Kernels of several steps, intermediates between them (Kiln's buffers); bytes count x
    # once and the output once, as Kiln counts them, though both read x twice.
    M, N = 8192, 8192
    add("global_max_norm f32 8192x8192", lambda: (randn(M, N, dtype=f32),),
        lambda x: x / x.max(), 2 * 4 * M * N)
    add("rowsum_colsum f32 8192x8192", lambda: (randn(M, N, dtype=f32),),
        lambda x: (x / (x * x).sum(1, keepdim=True)).sum(0), 4 * M * N + 4 * N)
    report(sys.argv[1], copy, cases)


if __name__ == "__main__":
    main()
