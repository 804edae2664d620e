#!/usr/bin/env bash
# Session 43, device call 1: the suite's mean over a middle axis ([64, 1024, 512] f32, 72% of
# copy) and rotation ([256, 512, 64] -> [64, 256, 512], 73%) run below colsum_f32 and the 2-D
# transposes, which run the same variants at 95%; torch.compile is as slow on both. Are the
# power-of-two strides between the blocks in flight (2 MB batches, 512 KB output rows) the
# cause? Kiln's default and torch.compile at the suite's shapes and at neighbours, and Nsight
# Compute's DRAM counters on the mean at 1024 and 1025 rows.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
D=bench/results/2026-12-01-h200-strides
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
timeout 200 $K compile $D/strides.kiln -o $W/b --arch sm_90 > $W/compile.txt 2>&1; echo "compiled $(el)"
for c in mid_mean:B=64,M=1024,N=512 mid_mean:B=64,M=1025,N=512 mid_mean:B=64,M=1000,N=512 \
         mid_mean:B=64,M=1024,N=520 mid_mean:B=63,M=1024,N=512 mid_mean:B=128,M=512,N=512 \
         mid_mean:B=16,M=4096,N=512 mid_mean:B=8,M=1024,N=4096 mid_mean:B=64,M=1024,N=256 \
         colsum_f32:M=1024,N=32768 colsum_f32:M=4096,N=32768 colsum_f32:M=1024,N=32760 \
         rotate3:A=256,B=512,C=64 rotate3:A=255,B=512,C=64 rotate3:A=256,B=511,C=64 \
         rotate3:A=250,B=500,C=64 rotate3:A=128,B=1024,C=64 rotate3:A=256,B=512,C=128 \
         transpose_f32:M=64,N=131072 transpose_f32:M=64,N=131000 transpose_f32:M=8192,N=8192; do
  k=${c%%:*} s=${c#*:}
  f=$W/run_${k}_${s//[=,]/_}.txt
  timeout 60 $K run $W/b $k --shape $s --variant default --copy-baseline --reps 50 > $f 2>&1
  echo "$k $s: $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3), "us", $NF "%"}')"
done | tee $W/times.txt
echo "times $(el)"; pack
timeout 300 python3 $D/torch_strides.py > $W/torch.txt 2>&1; cat $W/torch.txt; echo "torch $(el)"; pack
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active,lts__average_gcomp_input_sector_success_rate.pct
for s in B=64,M=1024,N=512 B=64,M=1025,N=512; do
  timeout 100 ncu --clock-control none --metrics $m --launch-skip 3 --launch-count 2 $K run $W/b mid_mean --shape $s --variant default --reps 5 --no-check > $W/ncu_mid_mean_${s//[=,]/_}.txt 2>&1
done
for s in A=256,B=512,C=64 A=255,B=512,C=64; do
  timeout 100 ncu --clock-control none --metrics $m --launch-skip 3 --launch-count 2 $K run $W/b rotate3 --shape $s --variant default --reps 5 --no-check > $W/ncu_rotate3_${s//[=,]/_}.txt 2>&1
done
grep -h -E "gpu__time|dram__|warps_active" $W/ncu_*.txt | head -40
echo "ncu $(el)"; pack
