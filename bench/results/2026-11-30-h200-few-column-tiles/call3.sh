#!/usr/bin/env bash
# Session 40, device call 5 (the third here): the submitted build's rule (the fitted deep
# splits: v30 = 4 threads along the columns, v31 = 2). Its pick checked against the
# interpreter at odd shapes (NaN and infinities too), then timed against the deep split (v29),
# interleaved, two rounds, at the call-2 shapes and two f32 ones nobody measured before.
set -uo pipefail
W=$OUT/w; source bench/device_setup.sh
D=bench/results/2026-11-30-h200-few-column-tiles
t() { timeout "$@"; echo "[rc $?: ${*:2}]"; }
$K compile $D/oc.kiln -o /tmp/b --arch sm_90 > /dev/null
{
  t 20 $K run /tmp/b colsum_bf16 --shape M=100003,N=8 --variant default --reps 3
  t 20 $K run /tmp/b colsum_bf16 --shape M=100003,N=16 --variant default --reps 3 --inputs specials
  t 20 $K run /tmp/b colsum_f32 --shape M=100003,N=4 --variant default --reps 3
  t 20 $K run /tmp/b colsum_f32 --shape M=65537,N=8 --variant default --reps 3 --inputs specials
  t 20 $K run /tmp/b ln_wgrad --shape M=65539,N=16 --variant default --reps 3 --inputs specials
  t 20 $K run /tmp/b ln_wgrad --shape M=1000003,N=8 --variant default --reps 3
} > $W/checks.txt 2>&1
grep -E "^  v|rc " $W/checks.txt
for round in 1 2; do
  for s in "colsum_bf16 M=8388608,N=8" "colsum_bf16 M=4194304,N=16" "ln_wgrad M=4194304,N=16" \
           "colsum_f32 M=4194304,N=8" "colsum_f32 M=8388608,N=4"; do
    set -- $s
    for v in default 29; do t 20 $K run /tmp/b $1 --shape $2 --variant $v --no-check --reps 50; done
  done
done > $W/times.txt 2>&1
grep -E "^  v|rc " $W/times.txt | paste - - | cut -c1-230
