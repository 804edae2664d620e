#!/usr/bin/env python3
"""The table of bench/everyday_shapes.sh: per case, the default variant of the bundle that was
timed (starred by `kiln run`), the fastest variant, and the default's time over the best's.
Reads the `kiln run` tables (kiln_*.txt, not the .check.txt) in OUT_DIR.
    python3 bench/summarize_shapes.py OUT_DIR"""
import pathlib
import re
import sys

rows = []
for f in sorted(pathlib.Path(sys.argv[1]).glob("kiln_*.txt")):
    if f.name.endswith(".check.txt"):
        continue
    text = f.read_text().splitlines()
    head = re.match(r"kernel (\S+) on .*\), (.*); ([0-9.]+) MB moved", text[0])
    if not head:
        continue
    variants = []
    for line in text[2:]:
        m = re.match(r"\s+(v\d+\*?)\s+(.*?)\s+-\s+-\s+([0-9.]+)\s", line)
        if m:
            variants.append((m.group(1), m.group(2), float(m.group(3))))
    copy = re.search(r"copy baseline .*: ([0-9.]+) us, ([0-9.]+) GB/s", "\n".join(text))
    if not variants:
        continue
    default = next((v for v in variants if v[0].endswith("*")), None)
    best = min(variants, key=lambda v: v[2])
    rows.append((head.group(1), head.group(2), default, best, copy.group(2) if copy else "?"))

print("| kernel | shape | default (when timed) | best | default / best | copy GB/s |")
print("| --- | --- | --- | --- | ---: | ---: |")
for kernel, shape, default, best, copy in rows:
    d = f"{default[2]:.1f} us ({default[0]}: {default[1]})" if default else "-"
    ratio = f"{default[2] / best[2]:.2f}" if default else "-"
    print(f"| {kernel} | {shape} | {d} | {best[2]:.1f} us ({best[0]}: {best[1]}) | {ratio} | {copy} |")
