#!/usr/bin/env bash
# Session 46, device call 6 (the build committed): what bounds the sums over two strided axes
# (outer2.kiln sum_bh at [8, 64, 128, 511], the rule's v32 and the split v29: Nsight Compute
# issue and pipe counters), and every variant, the prefetching ones included, at four 2-D
# shapes of odd columns (outer.kiln), for the tuner's view. Bundles as call 5.
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call6.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
met=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__average_warp_latency_issue_stalled_not_selected.ratio,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
{
for v in 32 17 29; do
  echo "=== sum_bh B=8,C=64,H=128,W=511 v$v"
  timeout 120 ncu --metrics $met -k regex:"sum_bh_s0_v${v}\$" -c 1 $K run $W/exp/b2 sum_bh --shape B=8,C=64,H=128,W=511 --variant $v --reps 2 --no-check 2>&1 | grep -vE '^==PROF==|^ *v[0-9]|kernel |copy base' | tail -18
done
} > $W/ncu.txt 2>&1
echo "ncu $(el)"; pack
for c in "colsum_f32 M=4095,N=32769" "colsum_f32 M=6000,N=20001" "colsum_bf16 M=6000,N=20001" "ln_wgrad M=4001,N=20001"; do
  set -- $c
  f=$W/all_$1_${2//[=,]/_}.txt
  timeout 90 $K run $W/exp/bN $1 --shape $2 --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
  echo "== $1 $2 $(grep -E '^ *v[0-9]+\*' $f | awk '{print "default", $1, $(NF-3)}') v32 $(grep -E '^ *v32 ' $f | awk '{print $(NF-3)}') v33 $(grep -E '^ *v33 ' $f | awk '{print $(NF-3)}') best $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3)}' | sort -k2 -n | head -3 | tr '\n' ' ')"
done | tee $W/sweep.txt
echo "sweep $(el)"; pack
