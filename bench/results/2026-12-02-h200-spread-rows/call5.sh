#!/usr/bin/env bash
# Session 51, device call 5: call 4's checks again (the same build and bundles), each run's
# variants counted: those that matched the interpreter (ok) and those that did not.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
tar xJf .carry/exp.tar.xz -C $W
CHECKS=$(sed -n '/^CHECKS="/,/"$/p' bench/results/2026-12-02-h200-spread-rows/call4.sh | tr -d '"' | sed 's/^CHECKS=//')
for inputs in random specials; do
  for c in $CHECKS; do
    IFS=: read -r b k s <<<"$c"
    KILN_RUN_INPUTS=$inputs timeout 120 $K run $W/exp/$b $k --shape $s --variant all --reps 1 > $W/c.log 2>&1
    rc=$?
    echo "$inputs $k $s: rc=$rc ok=$(grep -cE '^ *v[0-9]+.* ok ' $W/c.log) mismatch=$(grep -c MISMATCH $W/c.log)"
  done
done | tee $W/checks.txt
echo "checks $(el)"; tar czf $OUT/call5.tgz -C $W checks.txt gpu.txt
