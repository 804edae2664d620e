#!/usr/bin/env bash
# Session 29, device call 3: the torch side (eager and torch.compile max-autotune-no-cudagraphs,
# bench/torch_memory_bound.py, copy measured in the same process) of the cases where calls 1-2
# put Kiln behind or within 5% of the torch.compile times recorded before (torch_1125_*.json:
# bench/results/2026-11-25-h200-memory-bound/final; torch_1127.json:
# bench/results/2026-11-27-h200-few-columns/call4), then the summary and plot of all 36 cases
# from calls 1-2's Kiln results, the newest torch result of each case winning.
set -uo pipefail
W=/tmp/w3
source bench/device_setup.sh
d=bench/results/2026-11-29-h200-suite
mkdir -p $W/suite
cp $d/call1/kiln_*.json $d/call2/kiln_*.json $d/torch_11*.json $W/suite/
t0=$(date +%s)
(cd bench && timeout 280 python3 torch_memory_bound.py $W/suite/torch_1129a.json colsum mid_mean ln_wgrad) > $W/torch_a.txt 2>&1
echo "a exit $? after $(( $(date +%s) - t0 )) s"
(cd bench && timeout 280 python3 torch_memory_bound.py $W/suite/torch_1129b.json layernorm_f32 total heads_keys rotate3 transpose_f32) > $W/torch_b.txt 2>&1
echo "b exit $? after $(( $(date +%s) - t0 )) s"
python3 bench/summarize_memory_bound.py $W/suite > $W/summary.md 2>&1
cat $W/summary.md
cp $W/torch_*.txt $W/summary.md $W/gpu.txt $OUT/; cp $W/suite/torch_1129*.json $W/suite/*.png $OUT/ 2>/dev/null
true
