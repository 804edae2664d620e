#!/usr/bin/env bash
# Session 29, device call 2: call 1's outputs packed (its files did not all come back), then
# the rest of the memory-bound suite's Kiln side: outer reductions, norms.
set -uo pipefail
[[ -d /tmp/w1/suite ]] && tar czf $OUT/call1_suite.tgz -C /tmp/w1 suite
W=/tmp/w2
source bench/device_setup.sh
tar xJf .carry/mb.tar.xz -C $W
t0=$(date +%s)
BENCH_BUNDLE=$W/mb BENCH_TORCH=0 timeout 570 bench/memory_bound.sh $K $W/suite \
  colsum mid_mean ln_wgrad layernorm rmsnorm > $W/suite.txt 2>&1
echo "exit $? after $(( $(date +%s) - t0 )) s"
grep -v " - | - | - | - | - | - |" $W/suite.txt | tail -20
cp $W/gpu.txt $W/suite.txt $OUT/; tar czf $OUT/call2_suite.tgz -C $W suite
true
