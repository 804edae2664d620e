#!/usr/bin/env bash
# Session 21, device call 5: why the submitted build's split column sum (bf16 1048576 x 64, v23)
# and the mean over a middle axis (v17) stay below the copy bandwidth: Nsight Compute's warp
# state (stall reasons), occupancy and memory sections on each kernel of one launch.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w5; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/mb.tar.xz -C $W
K=build/tools/kiln
R=smsp__average_warps_issue_stalled
S="--section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis --section SpeedOfLight --section LaunchStats --metrics ${R}_long_scoreboard_per_issue_active.ratio,${R}_barrier_per_issue_active.ratio,${R}_wait_per_issue_active.ratio,${R}_lg_throttle_per_issue_active.ratio,${R}_short_scoreboard_per_issue_active.ratio,${R}_not_selected_per_issue_active.ratio,${R}_selected_per_issue_active.ratio,${R}_math_pipe_throttle_per_issue_active.ratio,${R}_mio_throttle_per_issue_active.ratio,${R}_no_instruction_per_issue_active.ratio"
ncu $S $K run $W/mb colsum_bf16 --shape M=1048576,N=64 --variant default --reps 1 --no-check > $W/ncu_colsum_bf16_64.txt 2>&1
ncu $S $K run $W/mb mid_mean --shape B=64,M=1024,N=512 --variant default --reps 1 --no-check > $W/ncu_mid_mean.txt 2>&1
tar czf $OUT/call5.tgz -C $W --exclude=mb .
grep -E "colsum_bf16_s0|mid_mean_s0|Duration|DRAM Throughput|Warp Cycles Per Issued|Stall Long|Achieved Occupancy|long_scoreboard|Issued Warp Per|issue_stalled" $W/ncu_*.txt | head -60
