#!/usr/bin/env bash
# Session 33, device call 3: (a) torch.compile's sum of one f32 row again, twice in fresh
# processes (call 2's run gave 21.5/51.2/50.0 us at 2^20/2^22/2^24 where the session before had
# 11.0/12.7/25.2); (b) where the contraction's default variant spills: the SASS of bmm's and
# gemm's variant 7 (cubins compiled on the build machine, carried as .carry/cubins.tar), each
# local load and store with the instructions around it, and Nsight Compute's local-memory
# counters for bmm and gemm's defaults.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call3 && cp $W/*.txt $OUT/call3/ 2>/dev/null; }
for i in 1 2; do
  TORCHINDUCTOR_CACHE_DIR=/tmp/ti$i timeout 150 python3 bench/results/2026-11-29-h200-uniform-warp/torch_sum.py 1048576 4194304 16777216 67108864 2>&1 | grep -v '^ *$'
done | tee $W/torch_sum.txt; echo "torch $(el)"; pack
tar xf .carry/cubins.tar -C $W
for c in $W/cub/*.cubin; do
  n=$(basename $c .cubin)
  cuobjdump -sass $c > $W/$n.sass 2>&1
  echo "== $n: $(grep -c 'STL' $W/$n.sass) STL, $(grep -c 'LDL' $W/$n.sass) LDL, $(grep -cE '^ +/\*[0-9a-f]+\*/' $W/$n.sass) instructions"
  grep -nE 'STL|LDL|HGMMA|WARPGROUP|SETMAXNREG|UTMASTG|UBLKCP|UTMALDG|SYNCS|BAR|EXIT|BRA' $W/$n.sass | awk '{$1=$1; print}' | cut -c1-110 | head -400
done > $W/spills.txt; echo "sass $(el)"; pack
# main's code generator (kiln_base: this session changed only the runtime).
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_base.xz build/tools/kiln_base && chmod +x build/tools/kiln_base
K=build/tools/kiln_base
$K compile bench/contraction.kiln -o $W/bc --arch sm_90 -j 8 > /dev/null
m="--metrics gpu__time_duration.sum,smsp__inst_executed_op_local_ld.sum,smsp__inst_executed_op_local_st.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum,smsp__inst_executed.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread"
for c in "bmm B=16,M=2048,N=2048,K=512" "gemm M=4096,N=4096,K=4096" "linear_bias_gelu M=8192,N=4096,K=4096"; do
  set -- $c
  timeout 90 ncu $m -k regex:$1 --launch-count 1 $K run $W/bc $1 --shape $2 --variant default --reps 1 --no-check > $W/ncu_$1.txt 2>&1
  echo "$c: $(grep -E 'gpu__time|local|inst_executed.sum|throughput|registers' $W/ncu_$1.txt | tr -s ' ' | tr '\n' ';')"
done | tee $W/ncu_local.txt; echo "ncu $(el)"; pack
