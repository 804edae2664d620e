#!/usr/bin/env bash
# Session 39, device call 8 (run as one command line): call7.kiln's `red` (a tf32 temporary
# read by a row sum), which call 7 ran with a symbol it lacks: every variant at M=333,K=1000,
# the default at M=4097,K=33 and with NaN and infinities at M=64,K=20000, checked against the
# interpreter.
W=/tmp/w8; source bench/device_setup.sh >/dev/null
$K compile bench/results/2026-11-30-h200-tf32/call7.kiln -o $W/r --arch sm_90 > /dev/null
(timeout 60 $K run $W/r red --shape M=333,K=1000 --variant all --reps 2
 timeout 60 $K run $W/r red --shape M=4097,K=33 --variant default --reps 2
 KILN_RUN_INPUTS=specials timeout 60 $K run $W/r red --shape M=64,K=20000 --variant default --reps 2) 2>&1 |
  grep -vE "^\s*$" | tee $OUT/call8_red.txt
