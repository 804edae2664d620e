#!/usr/bin/env bash
# Session 41, device call 3: the aligned-rows path with every block's loads in flight before
# the first is written (call 2's Nsight Compute: a second round trip to global memory per tile
# where the tile's To / V + 1 block rows took two rounds). Every variant timed at the aligned-rows
# shapes of call 1, before (kiln_old: ba3240a) and after, then Nsight Compute on two of them.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
  .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
KO=build/tools/kiln_old
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call3.tgz -C $W $(cd $W && ls *.txt) 2>/dev/null; }
$K compile bench/memory_bound.kiln -o $W/mb_new --arch sm_90 > /dev/null &
$KO compile bench/memory_bound.kiln -o $W/mb_old --arch sm_90 > /dev/null &
wait; echo "compiled $(el)"
for c in heads_keys:B=8,S=2047,H=32,D=127 heads_keys:B=4,S=4095,H=12,D=64 transpose_bf16:N=8191,M=8192 \
         transpose_bf16:N=999,M=3000 transpose_f32:N=8191,M=8192 transpose_add:N=8191,M=8192 \
         rotate3:A=256,B=511,C=64 transpose_bf16:N=8192,M=8192; do
  k=${c%%:*} s=${c#*:}
  for b in old new; do
    bin=$K; [[ $b == old ]] && bin=$KO
    f=$W/time_${b}_${k}_${s//[=,]/_}.txt
    [[ $b == new ]] && { timeout 60 $bin run $W/mb_$b $k --shape $s --variant default --reps 1 > $W/check_${k}_${s//[=,]/_}.txt 2>&1 || echo "$b $k $s: check FAILED"; }
    timeout 90 $bin run $W/mb_$b $k --shape $s --variant all --copy-baseline --reps 50 --no-check > $f 2>&1
    echo "$b $k $s default: $(grep -E '^ *v[0-9]+\*' $f | awk '{print $1, $(NF-3), "us", $NF, "% copy"}')"
    echo "$b $k $s best:    $(grep -E '^ *v[0-9]+' $f | awk '{print $(NF-3), $1, $NF, "% copy"}' | sort -g | head -3 | tr '\n' ' ')"
  done
done | tee $W/perm.txt
echo "perm $(el)"; pack
M=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_barrier,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
for c in transpose_bf16:N=8191,M=8192:v5 transpose_f32:N=8191,M=8192:v7; do
  IFS=: read -r k s v <<< "$c"
  f=$W/ncu_${k}_${s//[=,]/_}_$v.txt
  timeout 120 ncu --clock-control none --kernel-name regex:$k --launch-skip 2 --launch-count 1 --metrics $M \
    $K run $W/mb_new $k --shape $s --variant ${v#v} --reps 3 --no-check > $f 2>&1
  echo "== $k $s $v"; grep -E "dram__|gpu__time|sm__|smsp__|l1tex|launch__" $f | grep -v "max_rate\|\.pct " | awk '{print $1, $(NF-1), $NF}'
done
echo "ncu $(el)"; pack
