#!/usr/bin/env bash
# Session 52, device call 2: why call 1's split v29 lost on rows that are not whole vectors
# (its scalar path): every variant of N and O at two of those shapes and one of whole vectors,
# then Nsight Compute on v29 of both at colsum_bf16 8191 x 8193.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
for c in "colsum_bf16 M=8191,N=8193" "sum_bh B=2,C=128,H=1000,W=33" "colsum_bf16 M=1048576,N=64"; do
  set -- $c
  for b in bN bO; do
    echo "== $b $1 $2"
    timeout 120 $K run $W/exp/$b $1 --shape $2 --variant all --reps 20 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $2, $(NF-2)}' | sort -k3 -g | head -8
  done
done | tee $W/sweep.txt
echo "sweep $(el)"; pack
for b in bN bO; do
  timeout 120 ncu --kernel-name regex:colsum_bf16_s0_v29 --launch-count 1 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section InstructionStats \
    $K run $W/exp/$b colsum_bf16 --shape M=8191,N=8193 --variant 29 --reps 1 --no-check > $W/ncu_$b.txt 2>&1
  grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Executed Ipc A|Warp Cycles Per Issued|Stall Long|DRAM Throughput|Executed Instructions  |Block Size|Grid Size|Function Name|colsum" $W/ncu_$b.txt | head -30
done | tee $W/ncu.txt
echo "ncu $(el)"; pack
