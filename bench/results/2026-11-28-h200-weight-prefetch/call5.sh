#!/usr/bin/env bash
# Session 25, device call 5 (measured for the next step; nothing changed by it): with the
# weight prefetch submitted, every variant of the two softmaxes of norms.kiln (the "final"
# bundle of call 3; they read no weight, so the prefetch does not apply) at 1, 8 and 33 rows
# of 1000, 4096 and 8192, 100 launches each: how far the rule's tier is from the fastest
# variant on few rows for kernels that read no weight (call 4 did the norms).
set -uo pipefail
W=/tmp/w5
source bench/device_setup.sh
tar xJf .carry/sp.tar.xz -C $W final
t0=$(date +%s)
for k in softmax_f32 softmax_bf16; do
  for n in 1000 4096 8192; do
    for m in 1 8 33; do
      echo "== $k M=$m,N=$n"
      $K run $W/final $k --shape M=$m,N=$n --variant all --reps 100 --no-check 2>&1 | grep -E '^  v[0-9]|rror'
    done
  done
done > $W/all.txt 2>&1
python3 - $W/all.txt <<'PY' | tee $W/all_summary.txt
import sys
case, rows = None, []
def flush():
    if not case or not rows: return
    best = min(rows, key=lambda r: r[1])
    rule = [r for r in rows if r[0].endswith("*")]
    if rule:
        print(f"{case} rule {rule[0][0]} {rule[0][1]:.2f} best {best[0]} {best[1]:.2f} "
              f"rule/best {rule[0][1] / best[1]:.2f}")
for line in open(sys.argv[1]):
    if line.startswith("== "):
        flush(); case, rows = line[3:].strip(), []
    elif line.startswith("  v"):
        f = line.split()
        rows.append((f[0], float(f[-3])))
flush()
PY
echo "total $(( $(date +%s) - t0 )) s"
tar czf $OUT/call5.tgz -C $W --exclude=final .
