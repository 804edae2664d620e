#!/usr/bin/env bash
# Session 41, device call 2: Nsight Compute on the aligned-rows path against the vector path of
# the same config (transpose_bf16 v5, 8191 x 8192 against 8192 x 8192), the f32 one against the
# element-by-element path it replaced (kiln_old), and the shifted path: DRAM bytes each way,
# L2 sectors written, throughput and warp stalls. Uses call 1's bundles when the machine is
# still warm, else compiles them.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
[[ -x build/tools/kiln_old ]] || python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
  .carry/kiln_old.xz build/tools/kiln_old; chmod +x build/tools/kiln_old; KO=build/tools/kiln_old
[[ -d $W/mb_new ]] || $K compile bench/memory_bound.kiln -o $W/mb_new --arch sm_90 > /dev/null
[[ -d $W/mb_old ]] || $KO compile bench/memory_bound.kiln -o $W/mb_old --arch sm_90 > /dev/null
M=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warp_latency_issue_stalled_lg_throttle,smsp__average_warp_latency_issue_stalled_mio_throttle,smsp__average_warp_latency_issue_stalled_short_scoreboard,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
mkdir -p $OUT/call2
for c in new:transpose_bf16:N=8191,M=8192:v5 new:transpose_bf16:N=8192,M=8192:v5 new:transpose_bf16:N=8191,M=8192:v1 \
         new:transpose_bf16:N=8191,M=8193:v1 new:transpose_f32:N=8191,M=8192:v7 old:transpose_f32:N=8191,M=8192:v5 \
         new:transpose_f32:N=8192,M=8192:v5; do
  IFS=: read -r b k s v <<< "$c"
  bin=$K; [[ $b == old ]] && bin=$KO
  f=$OUT/call2/ncu_${b}_${k}_${s//[=,]/_}_$v.txt
  timeout 120 ncu --clock-control none --kernel-name regex:$k --launch-skip 2 --launch-count 1 --metrics $M \
    $bin run $W/mb_$b $k --shape $s --variant ${v#v} --reps 3 --no-check > $f 2>&1
  echo "== $b $k $s $v"; grep -E "dram__|gpu__time|lts__|sm__|smsp__|l1tex|launch__" $f | awk '{print $1, $(NF-1), $NF}'
done
