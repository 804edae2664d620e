#!/usr/bin/env bash
# Session 49, device call 3: torch eager and torch.compile(mode="max-autotune-no-cudagraphs")
# beside N's default variant (call 1's build, the one submitted) in one run: rows.kiln's cases
# (torch_rows.py) and those whose trailing run is not a multiple of the vector
# (torch_odd_runs.py), each checked against float64 before it is timed.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
D=bench/results/2026-12-02-h200-chunk-sums
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call3.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
timeout 240 python3 $D/torch_odd_runs.py $W/torch_odd.json > $W/torch_odd.txt 2>&1; grep -E "eager|copy" $W/torch_odd.txt
echo "torch odd $(el)"; pack
timeout 300 python3 $D/torch_rows.py $W/torch_rows.json > $W/torch_rows.txt 2>&1; grep -E "eager|copy" $W/torch_rows.txt
echo "torch rows $(el)"; pack
