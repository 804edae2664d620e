#!/usr/bin/env bash
# Session 49, device call 6: what bounds the 7 x 7 runs now, and what torch.compile runs there.
# Nsight Compute on C's (the committed build's) default variant of channel_sums and
# channel_var_bf16 over [64, 512, 7, 7], one launch each, and on torch.compile's kernels for the
# same (torch_ncu.py, whose generated code TORCH_LOGS=output_code prints).
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
D=bench/results/2026-12-02-h200-chunk-sums
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call6.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
S="--section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section SchedulerStats --metrics smsp__inst_executed.sum,dram__bytes_read.sum,gpu__time_duration.sum"
for k in channel_sums channel_var_bf16; do
  timeout 120 ncu $S $K run $W/exp/C_rows $k --shape N=64,C=512,H=7,W=7 --variant default --reps 1 --no-check > $W/ncu_kiln_$k.txt 2>&1
  grep -E "Duration|inst_executed|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|DRAM Throughput|Grid Size|Block Size|Issued Warp|No Eligible" $W/ncu_kiln_$k.txt | sed "s/^/$k: /"
done
echo "ncu kiln $(el)"; pack
TORCH_LOGS=output_code timeout 300 python3 $D/torch_ncu.py > $W/torch_code.txt 2>&1; tail -2 $W/torch_code.txt
timeout 300 ncu --profile-from-start off $S python3 $D/torch_ncu.py > $W/ncu_torch.txt 2>&1
grep -E "^  [a-z_]+.*\(|Duration|inst_executed|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|DRAM Throughput|Grid Size|Block Size" $W/ncu_torch.txt
echo "ncu torch $(el)"; pack
