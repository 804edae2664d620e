#!/usr/bin/env bash
# Session 40, device call 1: outer split variants whose tiles are 2 or 4 threads across
# (16 or 32 bf16 columns, 8 or 16 f32) beside the existing ones, every variant at few-column
# shapes; the new ones checked against the interpreter at odd shapes first; Nsight Compute on
# the 16-column sum's deep split (v29) and the 2-across one (v30).
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
D=bench/results/2026-11-30-h200-few-column-tiles
pack() { (cd $W && tar czf $OUT/call1.tgz *.txt 2>/dev/null); }
$K compile $D/oc.kiln -o $W/b --arch sm_90 > /dev/null
for v in 29 30 31 32 33 34; do
  $K run $W/b colsum_bf16 --shape M=100003,N=16 --variant $v --reps 3
  $K run $W/b colsum_bf16 --shape M=70001,N=24 --variant $v --reps 3
  $K run $W/b colsum_f32 --shape M=100003,N=8 --variant $v --reps 3
  $K run $W/b ln_wgrad --shape M=65539,N=16 --variant $v --reps 3
  $K run $W/b colsum_bf16 --shape M=100003,N=16 --variant $v --reps 3 --inputs specials
done > $W/checks.txt 2>&1
grep -c " ok " $W/checks.txt; grep -i "fail\|error\|mismatch" $W/checks.txt | head
for s in "colsum_bf16 M=4194304,N=16" "colsum_bf16 M=8388608,N=8" "colsum_bf16 M=2097152,N=32" \
         "colsum_bf16 M=1048576,N=64" "colsum_f32 M=4194304,N=8" "colsum_f32 M=2097152,N=16" \
         "colsum_f32 M=1048576,N=32" "ln_wgrad M=4194304,N=16" "ln_wgrad M=1048576,N=64" \
         "colsum_bf16 M=262144,N=16" "colsum_bf16 M=65536,N=16"; do
  set -- $s
  $K run $W/b $1 --shape $2 --variant all --no-check --reps 100 --copy-baseline
done > $W/all.txt 2>&1
pack
for v in 29 30; do
  timeout 120 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
    -k regex:colsum_bf16 $K run $W/b colsum_bf16 --shape M=4194304,N=16 --variant $v --reps 1 --no-check > $W/ncu_v$v.txt 2>&1
done
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occ|Grid Size|Warp Cycles Per Issued" $W/ncu_v*.txt
pack
