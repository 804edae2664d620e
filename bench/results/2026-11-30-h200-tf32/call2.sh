#!/usr/bin/env bash
# Session 39, device call 2: the lifted operands of examples/norm_linear.kiln again end to end
# (lift_operands changed), Nsight Compute times of the tf32 GEMMs' steps at 4096^3 (the [K, N]
# weight's transposing step beside the contraction), and bench/contraction.py's other tf32 cases.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call2.tgz *.txt 2>/dev/null); }
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="norm_linear" KILN_GPU_SHARD=$i/4 timeout 200 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP|mismatch" $W/e2e_$i.log | head -8; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
$K compile bench/contraction.kiln -o $W/cb --arch sm_90 > /dev/null
for k in gemm_tf32 linear_tf32; do
  ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    -k regex:${k}_s[0-9]+_v --launch-count 6 $K run $W/cb $k --shape M=4096,N=4096,K=4096 --variant default --reps 3 --no-check > $W/ncu_$k.log 2>&1
  echo "== $k"; grep -E "${k}_s[0-9]+_v|gpu__time_duration|dram__bytes|dram__throughput" $W/ncu_$k.log
done | tee $W/ncu.txt
echo "ncu $(el)"; pack
tar xf .carry/lib.tar -C build
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 330 python3 bench/contraction.py $W/contraction --only "tf32 linear 8192" "tf32 gemm 8192" "tf32 linear 2048" "tf32 gemm 2048" "tf32 linear 3000" "tf32 gemm 3000" > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $?"; grep -E "^tf32|cuBLAS full|Error|error" $W/contraction_bench.txt | tail -16
cp $W/contraction/contraction.json $W/contraction.json.txt 2>/dev/null
echo "bench $(el)"; pack
