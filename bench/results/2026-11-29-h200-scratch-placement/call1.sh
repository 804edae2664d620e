#!/usr/bin/env bash
# Session 34, device call 8: is the 1.2 us that a 20 KiB kept scratch cost softmax_f32
# (bench/results/2026-11-29-h200-split-ticket, calls 2-6) about where the scratch lies, and is it
# an artifact of the L2 flush before each timed launch? An experiment build of main
# (experiment.patch, not on main): KILN_EXP_PAD=N allocates the kept scratch N bytes larger,
# KILN_EXP_OFFSET=N places the launch's scratch N bytes into it, KILN_EXP_NO_FLUSH=1 times
# without the flush. Each case with the scratch kept as on main, padded by 16 KiB, padded and
# offset by 16 KiB, and not kept (KILN_KEEP_SCRATCH=0), with and without the flush; two rounds.
set -uo pipefail
W=/tmp/w9; source bench/device_setup.sh
D=bench/results/2026-11-29-h200-scratch-placement
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call1 && cp $W/*.txt $OUT/call1/ 2>/dev/null; }
$K compile $D/s.kiln -o $W/s --arch sm_90 > /dev/null
cases=("softmax_f32 M=4,N=1048576" "total_f32 M=1,N=1048576" "total_f32 M=1,N=16777216")
configs=("main:" "pad:KILN_EXP_PAD=16384" "pad+offset:KILN_EXP_PAD=16384 KILN_EXP_OFFSET=16384" "pool:KILN_KEEP_SCRATCH=0")
for r in 1 2; do for flush in yes no; do for c in "${cases[@]}"; do set -- $c; for cfg in "${configs[@]}"; do
  name=${cfg%%:*} vars=${cfg#*:}
  nf=""; [ $flush = no ] && nf="KILN_EXP_NO_FLUSH=1"
  echo "round $r flush=$flush $1 $2 $name $(env $vars $nf $K run $W/s $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/placement.txt
done; done; done; done
echo "placement $(el)"; pack
