#!/usr/bin/env bash
# Session 43, device call 7: the suite's five 2-D transposes again (bench/memory_bound.sh
# transpose), Kiln and torch in one run, on a bundle compiled with the odd-tiles rule of call 6
# (the manifest's tiles.elementwise): the f32 8191 x 8193 transpose's default is now v1.
set -uo pipefail
W=/tmp/w7; source bench/device_setup.sh
t0=$(date +%s)
tar xJf .carry/mb.tar.xz -C $W
BENCH_BUNDLE=$W/mb timeout 200 bash bench/memory_bound.sh $K $W/suite transpose > $W/suite.txt 2>&1
echo "exit $? ($(( $(date +%s) - t0 )) s)"
grep -E "^\| transpose" $W/suite.txt | cut -d'|' -f2,4,5,6,7,10,11,12
tar czf $OUT/call7.tgz -C $W suite.txt gpu.txt suite
