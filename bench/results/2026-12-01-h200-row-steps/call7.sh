#!/usr/bin/env bash
# Session 48, device call 7: what bounds the committed build's per-channel sums over 7 x 7 runs
# ([64, 512, 7, 7] f32: the rule's v5 10.8 us, its best variant v27 9.8, torch.compile 7.3 in
# call 4): Nsight Compute's speed of light, occupancy, warp states and launch on v5 and v27, and
# on v7 at [64, 256, 56, 56] (55.4 us, 87% of the copy) beside them. Call 6's bundle bR.
set -uo pipefail
W=/tmp/w7; source bench/device_setup.sh
pack() { tar czf $OUT/call7.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
for c in 5:N=64,C=512,H=7,W=7 27:N=64,C=512,H=7,W=7 7:N=64,C=256,H=56,W=56; do
  v=${c%%:*}; s=${c#*:}
  timeout 150 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
    --metrics smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum,gpu__time_duration.sum \
    -k regex:"channel_sums_s0_v$v\$" -c 1 $K run $W/exp/bR channel_sums --shape $s --variant $v --reps 1 --no-check > $W/ncu_v${v}_$s.txt 2>&1  # renamed here: ncu_v5_64x512x7x7.txt ...
  echo "== v$v $s"; grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit Registers|Stall Long|Warp Cycles Per Issued|Issued Warp|inst_executed|t_requests|dram__bytes|Waves Per SM|Grid Size|Block Size|Executed Ipc" $W/ncu_v${v}_$s.txt
done | tee $W/ncu.txt
pack
