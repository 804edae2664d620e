#!/usr/bin/env bash
# Session 47, device call 4: what bounds the committed build's sum over b and h of
# [8, 64, 128, 511] f32 (its v32, whole-program image, 46.4 us, 68% of the copy, where
# torch.compile takes 36.4): Nsight Compute's speed of light, occupancy and warp states on v32,
# and on the split v29 beside it. Bundle bR of call 3 (.carry/exp.tar.xz).
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
pack() { tar czf $OUT/call4.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
for v in 32 29; do
  timeout 150 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
    --metrics smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum \
    -k regex:"sum_bh_s0_v$v\$" -c 1 $K run $W/exp/bR sum_bh --shape B=8,C=64,H=128,W=511 --variant $v --reps 1 --no-check > $W/ncu_v$v.txt 2>&1
  echo "== v$v"; grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit Registers|Stall Long|Warp Cycles Per Issued|Issued Warp|inst_executed|t_requests|dram__bytes|Waves Per SM|Grid Size" $W/ncu_v$v.txt
done | tee $W/ncu.txt
pack
