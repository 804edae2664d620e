#!/usr/bin/env bash
# Session 25, device call 2: call 1's L1 prefetch of the weights made few rows 0.79-0.97 of
# main's time but 4096 rows up to 1.6x slower. Four bundles of norms.kiln, all compiled by
# this session's kiln for sm_90 (the experiment's switch, KILN_EXPERIMENT_PREFETCH, set at
# compile time): "old" (no prefetch: main's code), "new" (call 1's: every block prefetches
# into L1), "wave" (only blocks with an index below %nsmid, the first wave, prefetch), "touch"
# (no prefetch instruction: each thread loads the first element of two lines of each weight
# into a register at the start, used only by an empty asm at the kernel's exit). The default
# variant at 1, 8, 132 and 4096 rows of 1000, 4096 and 8192, two rounds interleaved, 100
# launches each; then each variant's defaults against the interpreter.
set -uo pipefail
W=/tmp/w2
source bench/device_setup.sh
tar xJf .carry/sp.tar.xz -C $W
t0=$(date +%s)
for round in 1 2; do
  for k in layernorm_f32 layernorm_bf16 rmsnorm_bf16; do
    for n in 1000 4096 8192; do
      for m in 1 8 132 4096; do
        for which in old new wave touch; do
          line=$($K run $W/$which $k --shape M=$m,N=$n --variant default --reps 100 --no-check 2>&1 |
                 grep -E '^  v[0-9]|rror' | head -1)
          echo "$round $which $k M=$m,N=$n $line"
        done
      done
    done
  done
  echo "round $round $(( $(date +%s) - t0 )) s" >&2
done > $W/ab.txt 2>&1
python3 - $W/ab.txt <<'PY' | tee $W/ab_summary.txt
import sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 8 or not f[4].startswith("v"): continue
    t[(f[2], f[3])][f[1]].append(float(f[-3]))
print("kernel shape old_us new/old wave/old touch/old")
for (k, s), d in sorted(t.items()):
    o = min(d["old"])
    print(k, s, f"{o:.2f}", *(f"{min(d[w]) / o:.3f}" for w in ("new", "wave", "touch")))
PY
for which in wave touch; do
  for k in layernorm_f32 layernorm_bf16 rmsnorm_bf16; do
    for s in M=1,N=1 M=8,N=4096 M=131,N=1001 M=1000,N=4095; do
      echo "$which $k $s $($K run $W/$which $k --shape $s --variant default --reps 3 2>&1 |
                     grep -E '^  v[0-9]|rror|MISMATCH' | head -2)"
    done
  done
done > $W/checked.txt 2>&1
echo "checked: $(grep -c ' ok ' $W/checked.txt) ok of $(wc -l < $W/checked.txt)"
echo "total $(( $(date +%s) - t0 )) s"
tar czf $OUT/call2.tgz -C $W --exclude=old --exclude=new --exclude=wave --exclude=touch .
