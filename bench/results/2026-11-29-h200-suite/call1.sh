#!/usr/bin/env bash
# Session 29, device call 1: the Kiln side of the memory-bound suite (bench/memory_bound.sh,
# BENCH_TORCH=0), the pointwise, transpose, row-reduction and softmax cases and the small ones;
# bundle compiled beforehand for sm_90 (.carry/mb.tar.xz) from the tree of this commit.
set -uo pipefail
W=/tmp/w1
source bench/device_setup.sh
tar xJf .carry/mb.tar.xz -C $W
t0=$(date +%s)
BENCH_BUNDLE=$W/mb BENCH_TORCH=0 timeout 570 bench/memory_bound.sh $K $W/suite \
  add_f32 bias_gelu silu scale_cast add_pos transpose heads rotate3 rowsum rowmax softmax \
  logsumexp total > $W/suite.txt 2>&1
echo "exit $? after $(( $(date +%s) - t0 )) s"
tail -40 $W/suite.txt
cp $W/gpu.txt $W/suite.txt $OUT/; mkdir -p $OUT/suite; cp $W/suite/*.json $W/suite/*.txt $OUT/suite/ 2>/dev/null
true
