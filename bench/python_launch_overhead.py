#!/usr/bin/env python3
"""The cost of a launch through the kiln Python package against a launch of the same kernel
through the C API (bench/c_api_launch_overhead.cpp, built as
BUILD/bench/kiln_c_api_launch_overhead), on one GPU.

    python3 bench/python_launch_overhead.py [--build build] [--count 20000]

Both enqueue COUNT back-to-back launches of examples/add.kiln's `add` at N = 1 on the default
stream (tiny GPU work: the host side is what is timed) and report host time from the first
launch to the end of the synchronization, divided by COUNT, the median of 7 rounds after a
warm-up of 2000. The package is timed on torch tensors with the output given (the same work
as the C API call: checks, symbol inference, the launch), and for information also with the
output allocated by the package and on __cuda_array_interface__ objects. The requirement
(issue 22): the package costs at most 5 us more than the C API; exit 1 when it does not."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
LIMIT_US = 5.0


def per_launch_us(fn, count, sync):
    for _ in range(2000):
        fn()
    sync()
    rounds = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(count):
            fn()
        sync()
        rounds.append((time.perf_counter() - t0) * 1e6 / count)
    return statistics.median(rounds)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--count", type=int, default=20000)
    a = ap.parse_args()
    build = Path(a.build).resolve()
    libs = [p for p in sorted((build / "lib").glob("libkiln_runtime.so*")) if p.is_file()]
    if libs:
        os.environ.setdefault("KILN_RUNTIME_LIB", str(libs[0]))
    os.environ.setdefault("KILN_BIN", str(build / "tools" / "kiln"))
    import torch
    import kiln
    if not torch.cuda.is_available():
        print("python_launch_overhead: no CUDA GPU", file=sys.stderr)
        return 77
    bundle = kiln.compile(REPO / "examples" / "add.kiln")
    print(f"GPU: {torch.cuda.get_device_name()}; bundle {bundle.path}; {a.count} launches x 7 "
          f"rounds, median")

    exe = build / "bench" / "kiln_c_api_launch_overhead"
    r = subprocess.run([str(exe), str(bundle.path), str(a.count)], capture_output=True,
                       text=True)
    sys.stdout.write(r.stdout)
    m = re.search(r"^c_api_us_per_launch ([0-9.]+)$", r.stdout, re.M)
    if r.returncode != 0 or not m:
        print(f"python_launch_overhead: {exe} failed (exit {r.returncode}): {r.stderr.strip()}",
              file=sys.stderr)
        return 1
    c_api = float(m.group(1))

    add = bundle.add
    x, y, z = (torch.zeros(1, device="cuda") for _ in range(3))

    class View:
        def __init__(self, t):
            self.__cuda_array_interface__ = t.__cuda_array_interface__
    vx, vy, vz = View(x), View(y), View(z)
    sync = torch.cuda.synchronize
    py = per_launch_us(lambda: add(x, y, z), a.count, sync)
    py_alloc = per_launch_us(lambda: add(x, y), a.count, sync)
    py_cai = per_launch_us(lambda: add(vx, vy, vz), a.count, sync)
    diff = py - c_api
    print(f"C API (kiln_launch):                      {c_api:7.3f} us per launch")
    print(f"Python, torch tensors, output given:      {py:7.3f} us per launch")
    print(f"Python, torch tensors, output allocated:  {py_alloc:7.3f} us per launch")
    print(f"Python, __cuda_array_interface__ objects: {py_cai:7.3f} us per launch")
    verdict = "within" if diff <= LIMIT_US else "OVER"
    print(f"difference (Python, output given - C API): {diff:.3f} us: {verdict} the "
          f"{LIMIT_US:.0f} us budget")
    return 0 if diff <= LIMIT_US else 1


if __name__ == "__main__":
    sys.exit(main())
