#!/usr/bin/env python3
"""Table of a call's ab.txt: per case, the median times of each round for each build and the
ratio of the means, dependent launches (new) over KILN_DEPENDENT_LAUNCH=0 (off).
    python3 ab_summary.py call2/ab.txt"""
import collections
import sys

times = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    p = line.split()  # round R kernel shape build variant(s) us
    if len(p) != 7:
        continue
    times[(p[2], p[3])][p[4]].append(float(p[6]))
print("| kernel, shape | " + " | ".join(next(iter(times.values())).keys()) + " | new / off |")
print("| --- |" + " ---: |" * (len(next(iter(times.values()))) + 1))
for (kernel, shape), by in times.items():
    cells = " | ".join(" / ".join(f"{t:.2f}" for t in ts) for ts in by.values())
    mean = {b: sum(ts) / len(ts) for b, ts in by.items()}
    print(f"| {kernel} {shape} | {cells} | {mean['new'] / mean['off']:.3f} |")
