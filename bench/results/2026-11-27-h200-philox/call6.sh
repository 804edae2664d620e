#!/usr/bin/env bash
# Session 17, device call 6: the committed build. Nsight Compute on the three defaults still
# under 90% of copy: dropout bf16, cumsum 4K x 32K f32, rotary bf16.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w6; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
K=build/tools/kiln
for ex in dropout scan rotary; do $K compile examples/$ex.kiln -o $W/b_$ex > /dev/null & done; wait
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_blocks,sm__inst_executed.sum,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,lts__t_sector_hit_rate.pct
for k in "dropout dropout_bf16 M=16384,N=8192 --scalar p=0.1" "scan cumsum_rows M=4096,N=32768" "rotary rotary T=16384,H=32,R=64,P=16384"; do
  set -- $k
  timeout 100 ncu --clock-control none --kernel-name regex:$2 --launch-count 1 --metrics $M $K run $W/b_$1 $2 --shape $3 ${4:-} ${5:-} --variant default --reps 1 --no-check > $W/ncu_$2.txt 2>&1
  echo "== $2 $3"; grep -E "^\s+(gpu__|dram__|smsp__|sm__|launch__|lts__)" $W/ncu_$2.txt
done
tar czf $OUT/call6.tgz -C $W gpu.txt ncu_dropout_bf16.txt ncu_cumsum_rows.txt ncu_rotary.txt
