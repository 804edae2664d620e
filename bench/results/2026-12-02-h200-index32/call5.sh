#!/usr/bin/env bash
# Session 52, device call 5: a launch past 2^31 - 1 elements runs the general entry (64-bit
# indices): F's default of colsum_bf16 (the deep split) at 33554433 x 64 (2^31 + 64 elements),
# checked against the interpreter; then 33554431 x 64 (2^31 - 64: the own entry, 32-bit, at
# its edge) if time is left.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
tar xJf .carry/exp.tar.xz -C $W
for s in M=33554433,N=64 M=33554431,N=64; do
  timeout 150 $K run $W/exp/bF colsum_bf16 --shape $s --variant default --reps 1 > $W/big.txt 2>&1
  echo "colsum_bf16 $s: rc=$? $(grep -E '^ *v[0-9]+|MISMATCH' $W/big.txt | head -2 | tr '\n' ' ') $(el)"
done | tee $W/big_summary.txt
tar czf $OUT/call5.tgz -C $W big_summary.txt big.txt
