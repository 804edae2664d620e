#!/usr/bin/env bash
# Session 46, device call 1: why scalar outer variants of bf16 run at 20-55% of copy, and why
# 8 steps in flight are 2x faster than 4 at some shapes and 2x slower at others. SASS of the
# scalar variants, Nsight Compute counters on pairs of them, and every variant of outer.kiln's
# bf16 kernels at power-of-two and odd column counts. Bundle: outer.kiln compiled here by HEAD
# (.carry/exp.tar.xz).
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
B=$W/exp/b0
for v in 8 14 15; do
  for k in mid_mean_bf16 colsum_bf16 mid_mean; do
    timeout 30 cuobjdump -sass $B/${k}_s0_v$v.sm_90.cubin > $W/sass_${k}_v$v.txt 2>&1
  done
done
echo "sass $(el)"
sweep() {  # kernel shape...
  local k=$1; shift
  for s in "$@"; do
    f=$W/all_${k}_${s//[=,]/_}.txt
    timeout 90 $K run $B $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
    echo "== $k $s"; grep -E '^ *v[0-9]+' $f | awk '{print $1, $2, $3, $4, $5, $6, $(NF-3), "us", $NF "%"}' | sort -k7 -n | head -3
  done
}
{
sweep colsum_bf16 M=8192,N=32768 M=8192,N=32769 M=8192,N=20000 M=8192,N=20001 M=8192,N=8192 M=8191,N=8193
sweep mid_mean_bf16 B=8,M=2048,N=4096 B=8,M=2048,N=4097
sweep colsum_f32 M=8192,N=32768 M=8192,N=20001
} | tee $W/sweep.txt
echo "sweep $(el)"; pack
met=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_op_read_hit_rate.pct,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,launch__grid_size,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_lg_throttle.ratio,smsp__average_warp_latency_issue_stalled_drain.ratio,smsp__inst_executed.sum,lts__average_t_sector_hit_rate_realtime.pct,dram__sectors_read.sum,lts__t_requests_srcunit_tex_op_read.sum
{
while read -r k s v; do
  echo "=== $k $s v$v"
  timeout 120 ncu --metrics $met -k regex:"${k}_s0_v${v}\$" -c 1 $K run $B $k --shape $s --variant $v --reps 2 --no-check 2>&1 | grep -vE '^==PROF==|^ *v[0-9]|kernel |copy base' | tail -22
done <<'CASES'
mid_mean_bf16 B=8,M=2048,N=4097 8
mid_mean_bf16 B=8,M=2048,N=4097 14
mid_mean_bf16 B=8,M=2048,N=4097 12
colsum_bf16 M=8192,N=32768 8
colsum_bf16 M=8192,N=32768 14
colsum_bf16 M=8192,N=32768 1
mid_mean B=64,M=1024,N=513 15
mid_mean B=64,M=1024,N=513 17
CASES
} > $W/ncu.txt 2>&1
echo "ncu $(el)"; pack
