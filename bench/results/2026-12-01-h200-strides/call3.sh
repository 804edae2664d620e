#!/usr/bin/env bash
# Session 43, device calls 3 and 4: the memory-bound suite (bench/memory_bound.sh) with the L2
# flushed by a read (autotune/l2_flush.h, bench/torch_common.py), on the bundle of
# bench/memory_bound.kiln compiled for sm_90 on the build machine (.carry/mb.tar.xz), in two
# calls: `call3.sh 3 IDS...` (Kiln only), `call3.sh 4 IDS...` (Kiln, then torch on every case).
set -uo pipefail
n=$1; shift
W=/tmp/w$n; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
tar xJf .carry/mb.tar.xz -C $W
mkdir -p $W/suite
BENCH_BUNDLE=$W/mb BENCH_TORCH=0 timeout 480 bash bench/memory_bound.sh $K $W/suite "$@" > $W/suite.txt 2>&1
echo "kiln exit $? $(el)"; grep -c "^\[" $W/suite.txt
if [[ $n == 4 ]]; then
  (cd bench && timeout 300 python3 torch_memory_bound.py $W/suite/torch.json) > $W/suite/torch.txt 2>&1
  echo "torch exit $? $(el)"; tail -3 $W/suite/torch.txt
fi
tar czf $OUT/call$n.tgz -C $W suite.txt gpu.txt suite
