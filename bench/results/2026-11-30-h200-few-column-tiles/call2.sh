#!/usr/bin/env bash
# Session 40, device call 2 (call 1 ran past the device's 600 s with nothing back): the same,
# each command under a timeout, timed, its output written to $OUT as it goes.
set -uo pipefail
W=$OUT/w; source bench/device_setup.sh
D=bench/results/2026-11-30-h200-few-column-tiles
t() { local s=$SECONDS; timeout "$@"; echo "[rc $? in $((SECONDS - s)) s: $*]"; }
t 120 $K compile $D/oc.kiln -o /tmp/b --arch sm_90 -j 16 > $W/compile.txt 2>&1
tail -2 $W/compile.txt
for v in 30 31 32 33 34; do
  t 20 $K run /tmp/b colsum_bf16 --shape M=100003,N=16 --variant $v --reps 3
  t 20 $K run /tmp/b colsum_f32 --shape M=100003,N=8 --variant $v --reps 3
  t 20 $K run /tmp/b ln_wgrad --shape M=65539,N=24 --variant $v --reps 3 --inputs specials
done > $W/checks.txt 2>&1
grep "rc \|v3[0-4]" $W/checks.txt | head -40
for s in "colsum_bf16 M=4194304,N=16" "colsum_bf16 M=1048576,N=64" "colsum_f32 M=2097152,N=16" \
         "ln_wgrad M=4194304,N=16" "colsum_bf16 M=8388608,N=8" "colsum_bf16 M=2097152,N=32"; do
  set -- $s
  for v in default 23 29 30 31 32 33 34; do
    t 30 $K run /tmp/b $1 --shape $2 --variant $v --no-check --reps 50
  done
done > $W/some.txt 2>&1
grep -E "^  v|rc " $W/some.txt | head -80
