#!/usr/bin/env bash
# Session 42, device call 2: the submitted build (Tiling::registers: tiled kernels held to the
# registers of their loads in flight). Every variant of the examples with tiled steps end to
# end against the interpreter (three shards); memcheck and racecheck on the default at odd
# shapes; call 1's cases timed again (before: call 1's R=0, the same build without the hold);
# a bf16 transpose with an add (bf16_add.kiln); the suite's permutations beside torch eager
# and torch.compile in one run.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
D=bench/results/2026-12-01-h200-tiled-registers
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W $(cd $W && ls *.txt *.log 2>/dev/null) suite 2>/dev/null; }
$K compile examples/permute.kiln -o $W/perm --arch sm_90 > /dev/null &
$K compile bench/memory_bound.kiln -o $W/mb --arch sm_90 > /dev/null &
$K compile $D/bf16_add.kiln -o $W/ba --arch sm_90 > /dev/null &
export KILN_REQUIRE_GPU=1
for i in 0 1 2; do
  KILN_GPU_EXAMPLES="transpose permute f32_matmul gather_suite" KILN_GPU_SHARD=$i/3 timeout 230 \
    tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
for tool in memcheck racecheck; do
  for c in heads_keys:B=2,S=101,H=8,D=127 transpose_bf16:N=999,M=1000 transpose_add:N=1001,M=999 \
           transpose_cast:N=65,M=1000; do
    k=${c%%:*} s=${c#*:} f=$W/san_${tool}_${k}_${s//[=,]/_}.log
    timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/perm $k --shape $s --variant default --reps 1 > $f 2>&1
    echo "$tool $k $s exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | head -1) $(grep -E '^ *v[0-9]+' $f | head -1)"
  done
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
for c in transpose_bf16:N=8192,M=8192 transpose_bf16:N=8191,M=8192 transpose_bf16:N=8191,M=8193 \
         heads_keys:B=8,S=2048,H=32,D=128 heads_keys:B=8,S=2047,H=32,D=127 heads_keys:B=4,S=4095,H=12,D=64 \
         transpose_f32:N=8192,M=8192 transpose_f32:N=8191,M=8192 transpose_f32:N=8193,M=8191 \
         transpose_add:N=8192,M=8192 transpose_add:N=8191,M=8193 rotate3:A=256,B=512,C=64 \
         ba:transpose_add_bf16:N=8192,M=8192 ba:transpose_add_bf16:N=8191,M=8192 ba:transpose_add_bf16:N=8191,M=8193; do
  b=$W/mb; [[ $c == ba:* ]] && { b=$W/ba; c=${c#ba:}; }
  k=${c%%:*} s=${c#*:} f=$W/run_${k}_${s//[=,]/_}.txt
  timeout 40 $K run $b $k --shape $s --variant default --copy-baseline --reps 50 > $f 2>&1
  echo "$k $s: $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3), "us", $NF "%"}')"
done | tee $W/times.txt
echo "times $(el)"; pack
mkdir -p $W/suite
BENCH_BUNDLE=$W/mb timeout 200 bash bench/memory_bound.sh $K $W/suite transpose heads rotate3 > $W/suite.txt 2>&1
grep -E "^\| (transpose|heads|rotate)|torch (transpose|heads|rotate)" $W/suite.txt
echo "suite $(el)"; pack
