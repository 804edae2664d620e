#!/usr/bin/env bash
# Session 19, device call 9 (for the next session's one-row scan): every variant of cumsum over
# one row of 64M f32 and of 8 rows of 8M, and Nsight Compute's speed of light and warp states on
# the default's scan phase.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w9; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
K=build/tools/kiln
$K compile examples/scan.kiln -o $W/scan > /dev/null
for s in N=67108864 M=8,N=8388608; do
  k=cumsum_row; [[ $s == M=* ]] && k=cumsum_rows
  timeout 150 $K run $W/scan $k --shape $s --variant all --reps 30 --no-check --copy-baseline > $W/all_$k.txt 2>&1
  echo "== $k $s"; grep -E '^ *v[0-9]+|copy' $W/all_$k.txt | awk '{print $1, $2, $(NF-3), $NF}'
done
timeout 120 ncu --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats -k regex:cumsum_row -c 2 \
  $K run $W/scan cumsum_row --shape N=67108864 --variant default --reps 1 --no-check > $W/ncu_cumsum_row.txt 2>&1
echo "ncu: exit $?"; grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Stall|Achieved Occupancy|Grid Size|Block Size|Registers|cumsum_row_s" $W/ncu_cumsum_row.txt | head -40
tar czf $OUT/call9.tgz -C $W --exclude='scan' .
