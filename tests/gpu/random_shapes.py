#!/usr/bin/env python3
"""Every kernel of tests/gpu/cases.txt at shapes nobody chose: the runtime's pick for each shape
(`kiln run --variant default`, the variant the rule or nothing else would run) checked against
the interpreter, inputs poisoned as `kiln run` does, a quarter of them with NaN and infinities.

    tests/gpu/random_shapes.py KILN BUNDLES_DIR OUT_DIR [--per-kernel N] [--seed S]
                               [--timeout SECONDS]

--timeout bounds each `kiln run` (a run past it fails) and, ten times over, each compile.

BUNDLES_DIR/<example> is compiled from examples/<example>.kiln when it has no manifest. Each
kernel's symbols are those of its first shape in cases.txt; a shape draws each symbol from
awkward values (1, primes, one off a power of two) and uniform ones, then halves the largest
until the product of the symbols is at most 2^24 (the interpreter checks every element). The
shapes come from the seed alone; a run that did not pass leaves its command line and output in
OUT_DIR/<example>.<kernel>.<n>.log, every run a line in OUT_DIR/summary.txt.
Exits non-zero when a run failed (rc 77, no GPU, counts as a failure with KILN_REQUIRE_GPU=1).
"""
import argparse
import os
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AWKWARD = [1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 33, 63, 65, 100, 127, 129, 255, 257, 1000, 1023,
           1025, 2047, 2049, 4095, 4097, 8191, 10007]
MOST = 1 << 24


def kernels():
    """(example, kernel, symbols) in cases.txt order, each pair once."""
    seen, out = set(), []
    for line in (ROOT / "tests/gpu/cases.txt").read_text().splitlines():
        if not line[:1].isalpha():
            continue
        example, kernel, first = line.split()[:3]
        if (example, kernel) in seen:
            continue
        seen.add((example, kernel))
        out.append((example, kernel, [kv.split("=")[0] for kv in first.split(",")]))
    return out


def shape(rng, symbols):
    values = {s: rng.choice(AWKWARD) if rng.random() < 0.6 else rng.randint(1, 6000)
              for s in symbols}
    while True:
        product = 1
        for v in values.values():
            product *= v
        if product <= MOST:
            return ",".join(f"{s}={values[s]}" for s in symbols)
        largest = max(values, key=values.get)
        values[largest] = max(1, values[largest] // 2 + rng.randint(0, 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kiln")
    ap.add_argument("bundles")
    ap.add_argument("out")
    ap.add_argument("--per-kernel", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=120, help="seconds per run")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    require = os.environ.get("KILN_REQUIRE_GPU", "0") not in ("", "0")
    counts = {"ok": 0, "FAIL": 0, "SKIP": 0}
    failed_compiles = set()
    with open(out / "summary.txt", "w") as summary:
        for example, kernel, symbols in kernels():
            bundle = Path(a.bundles) / example
            if example in failed_compiles:
                continue
            if not (bundle / "manifest.json").exists():
                try:
                    r = subprocess.run(
                        [a.kiln, "compile", str(ROOT / "examples" / f"{example}.kiln"), "-o",
                         str(bundle)], capture_output=True, text=True, timeout=10 * a.timeout)
                    rc, why = r.returncode, r.stderr.strip()[-300:]
                except subprocess.TimeoutExpired:
                    rc, why = -1, f"timed out after {10 * a.timeout} s"
                if rc != 0:  # counted once, not once per kernel of the example
                    line = f"FAIL compile {example}: {why}"
                    print(line, file=summary, flush=True)
                    print(line, flush=True)
                    counts["FAIL"] += 1
                    failed_compiles.add(example)
                    continue
            for n in range(a.per_kernel):
                s = shape(rng, symbols)
                inputs = "specials" if rng.random() < 0.25 else "random"
                log = out / f"{example}.{kernel}.{n}.log"
                cmd = [a.kiln, "run", str(bundle), kernel, "--shape", s, "--variant", "default",
                       "--reps", "2", "--inputs", inputs, "--seed", str(rng.randint(1, 1 << 30))]
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
                    rc, text = r.returncode, r.stdout + r.stderr
                except subprocess.TimeoutExpired:
                    rc, text = -1, f"timed out after {a.timeout} s"
                status = "ok" if rc == 0 else "SKIP" if rc == 77 and not require else "FAIL"
                if status != "ok":  # the run's command line and output, to rerun it
                    log.write_text(" ".join(cmd) + "\n" + text)
                counts[status] += 1
                line = f"{status:4} {example:16} {kernel:22} {inputs:8} {s}"
                if status != "ok":
                    line += f"  (rc {rc}) " + " | ".join(text.strip().splitlines()[-3:])
                print(line, file=summary, flush=True)
                print(line, flush=True)
    print(f"{counts['ok']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
