#!/usr/bin/env bash
# Session 38, device call 3: the submitted build (40d01eb: bundle::rule_variant, the rule's pick
# at a shape in one place for the runtime and kiln explain). The runtime's pick at odd, short
# and aligned tiled shapes (`kiln run --variant default` names it) beside explain's, and every
# variant of the norm_linear, permute and transpose examples end to end (four shards).
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call3.tgz *.txt 2>/dev/null); }
export KILN_REQUIRE_GPU=1
$K compile examples/permute.kiln -o $W/perm --arch sm_90 > /dev/null
for c in transpose_bf16:M=8191,N=8193 transpose_bf16:M=8192,N=8192 transpose_bf16:M=1000,N=40 heads_keys:B=8,S=2047,H=32,D=127 heads_keys:B=8,S=2048,H=32,D=128 rotate3:A=1000,B=999,C=33; do
  IFS=: read -r k s <<< "$c"
  run=$($K run $W/perm $k --shape $s --variant default --reps 5 2>&1 | grep -E '^  v[0-9]' | awk '{print $1}')
  ex=$($K explain examples/permute.kiln --kernel $k --shape $s 2>&1 | grep -oE 'runs: variant [0-9]+' | head -1)
  echo "$k $s: kiln run $run; explain: $ex"
done | tee $W/picks.txt
echo "picks $(el)"; pack
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="norm_linear permute transpose" KILN_GPU_SHARD=$i/4 timeout 300 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
