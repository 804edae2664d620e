#!/usr/bin/env bash
# Session 38, device call 2: the build with the rounded terms' tolerance (bac12ab). Every
# variant of examples/norm_linear.kiln end to end against the interpreter (four shards),
# memcheck on the rule's pick at four shapes, then where the RMSNorm-with-gain case spends its
# time: each kernel's duration under Nsight Compute (clocks not locked) beside the plain GEMM
# and the RMSNorm case whose gain is folded into w, and `kiln run` medians of each.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call2.tgz *.txt *.log 2>/dev/null); }
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="norm_linear" KILN_GPU_SHARD=$i/4 timeout 250 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done
$K compile bench/contraction.kiln -o $W/bc --arch sm_90 > /dev/null &
wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
$K compile examples/norm_linear.kiln -o $W/nl --arch sm_90 > /dev/null
for c in rmsnorm_linear:M=333,N=257,K=4096 rmsnorm_linear:M=1000,N=17,K=4095 cast_products:B=2,M=100,N=72,K=1000 gain_linear:M=17,N=24,K=8191; do
  IFS=: read -r k s <<< "$c"; f=$W/san_${k}_${s//[,=]/_}.log
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/nl $k --shape $s --variant default --reps 1 > $f 2>&1
  echo "memcheck $k $s exit $? $(grep -E 'ERROR SUMMARY' $f | head -1)"
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
for s in M=8192,N=4096,K=4096 M=2048,N=11008,K=4096 M=256,N=4096,K=4096; do
  for k in rmsnorm_gain_linear rmsnorm_linear gemm; do
    echo "== $k $s"
    timeout 90 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:_s[0-9]+_v --launch-count 4 $K run $W/bc $k --shape $s --variant default --reps 2 --no-check 2>&1 | grep -E '^  [a-zA-Z_0-9]+.*\(|gpu__time' | tr -s ' '
    timeout 60 $K run $W/bc $k --shape $s --variant default --reps 50 2>&1 | tail -3
  done
done > $W/breakdown.txt 2>&1
cat $W/breakdown.txt
echo "breakdown $(el)"; pack
