#!/usr/bin/env bash
# Session 29, device call 4: the torch side of all 36 cases in one process (call 3 showed it
# takes minutes, not the 10+ the shards were made for), the summary and plot of calls 1-2's
# Kiln results beside it (torch_1129.json, the newest, wins over the older files), and Nsight
# Compute on the odd transpose (8191 x 8193 f32, 1.07x torch.compile's time in call 3) and the
# aligned one, default variants.
set -uo pipefail
W=/tmp/w4
source bench/device_setup.sh
d=bench/results/2026-11-29-h200-suite
mkdir -p $W/suite
tar xJf .carry/mb.tar.xz -C $W
cp $d/call1/kiln_*.json $d/call2/kiln_*.json $d/torch_11*.json $d/call3/torch_1129*.json $W/suite/
t0=$(date +%s)
(cd bench && timeout 400 python3 torch_memory_bound.py $W/suite/torch_1129z.json) > $W/torch.txt 2>&1
echo "torch exit $? after $(( $(date +%s) - t0 )) s"
python3 bench/summarize_memory_bound.py $W/suite > $W/summary.md 2>&1
cat $W/summary.md
cp $W/torch.txt $W/summary.md $W/gpu.txt $W/suite/torch_1129z.json $W/suite/*.png $OUT/ 2>/dev/null
for s in M=8191,N=8193 M=8192,N=8192; do
  timeout 60 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats \
    $K run $W/mb transpose_f32 --shape $s --variant default --reps 1 > $OUT/ncu_transpose_f32_${s//[=,]/_}.txt 2>&1
  echo "ncu $s exit $?"
done
true
