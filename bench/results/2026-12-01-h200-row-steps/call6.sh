#!/usr/bin/env bash
# Session 48, device call 6: the committed build (1be717b) checked on the GPU: every variant of
# rows.kiln's kernels and of the multi-axis cases of tests/gpu/cases.txt (examples/
# spatial_mean.kiln, examples/reduction_suite.kiln's diag_sums) against the interpreter, random
# inputs, then NaN and infinities; memcheck of every variant at 4 shapes; the default variant of
# rows.kiln at call 3's 19 cases.
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call6.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
pass=0; fail=0
{
while read -r inputs b k shapes; do
  for s in $shapes; do
    KILN_RUN_INPUTS=$inputs timeout 120 $K run $W/exp/$b $k --shape $s --variant all --reps 2 > $W/t.log 2>&1
    rc=$?
    if ((rc == 0)); then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL($rc) $b $inputs $k $s"; tail -3 $W/t.log; fi
  done
done <<'CHECKS'
random bR channel_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=2,C=3,H=5,W=33 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=2,C=1,H=300,W=300 N=5,C=7,H=16,W=16 N=33,C=2,H=17,W=17 N=65,C=2,H=17,W=17
random bR channel_var_bf16 N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=2,C=1,H=300,W=304 N=65,C=2,H=17,W=17
random bR channel_mean_bf16 N=1,C=1,L=1 N=3,C=5,L=49 N=9,C=3,L=4096 N=5,C=2,L=30001 N=2,C=1,L=100000 N=15,C=3,L=3001
random bR diag_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=8 N=9,C=2,H=33,W=64 N=5,C=3,H=130,W=33
specials bR channel_sums N=3,C=5,H=7,W=7 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=65,C=2,H=17,W=17
specials bR channel_var_bf16 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257
specials bR channel_mean_bf16 N=5,C=2,L=30001 N=15,C=3,L=3001
specials bR diag_sums N=9,C=2,H=33,W=64
random bS spatial_mean B=1,C=1,H=1,W=1 B=3,C=5,H=7,W=7 B=1,C=3,H=1001,W=1001 B=2,C=64,H=14,W=14 B=5,C=33,H=1,W=1000 B=8,C=7,H=129,W=131
random bS spatial_mean_bf16 B=1,C=1,H=1,W=1 B=3,C=5,H=7,W=7 B=1,C=3,H=1001,W=1001 B=8,C=7,H=129,W=131
random bS channel_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=2,C=3,H=257,W=255 N=5,C=64,H=14,W=14 N=32,C=64,H=181,W=181 N=3,C=5,H=2,W=6 N=16,C=32,H=56,W=56
random bS channel_mean_bf16 N=1,C=1,L=1 N=3,C=5,L=8 N=5,C=3,L=1001 N=7,C=33,L=12 N=16,C=64,L=4096 N=64,C=3,L=3136
random bS sum_bh B=1,C=1,H=1,W=1 B=3,C=5,H=7,W=7 B=64,C=3,H=33,W=5 B=2,C=33,H=3,W=1000 B=16,C=64,H=256,W=256
random bS token_max B=1,S=1,D=1 B=3,S=7,D=9 B=4,S=1000,D=1001
specials bS channel_sums N=3,C=5,H=7,W=7 N=2,C=3,H=257,W=255
specials bS channel_mean_bf16 N=5,C=3,L=1001
CHECKS
echo "gpu checks: $pass passed, $fail failed"
} > $W/checks.txt 2>&1
tail -4 $W/checks.txt; echo "checks $(el)"; pack
for c in "channel_sums N=3,C=2,H=130,W=257" "channel_sums N=65,C=2,H=17,W=17" "channel_var_bf16 N=3,C=2,H=130,W=257" "channel_mean_bf16 N=5,C=2,L=30001" "diag_sums N=5,C=3,H=130,W=33"; do
  set -- $c
  timeout 100 compute-sanitizer --tool memcheck $K run $W/exp/bR $1 --shape $2 --variant all --reps 1 > $W/mc.txt 2>&1
  echo "memcheck bR $1 $2: rc=$? $(grep -E 'ERROR SUMMARY' $W/mc.txt | sort | uniq -c | tr '\n' ' ')"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
run1() { timeout 60 $K run $W/exp/$1 $2 --shape $3 --variant default --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
for c in channel_sums:N=64,C=256,H=56,W=56 channel_sums:N=32,C=64,H=28,W=28 channel_sums:N=8,C=512,H=14,W=14 \
  channel_sums:N=128,C=64,H=56,W=56 channel_sums:N=256,C=32,H=32,W=32 channel_sums:N=4,C=3,H=224,W=224 \
  channel_sums:N=128,C=128,H=17,W=17 channel_sums:N=64,C=512,H=7,W=7 channel_var_bf16:N=64,C=256,H=56,W=56 \
  channel_var_bf16:N=32,C=128,H=28,W=28 channel_var_bf16:N=128,C=64,H=56,W=56 channel_var_bf16:N=64,C=128,H=17,W=17 \
  channel_mean_bf16:N=64,C=256,L=3136 channel_mean_bf16:N=512,C=64,L=256 channel_mean_bf16:N=16,C=512,L=3001 \
  diag_sums:N=16,C=256,H=32,W=32 channel_sums:N=65,C=64,H=17,W=17 channel_var_bf16:N=63,C=64,H=17,W=17 \
  channel_mean_bf16:N=15,C=512,L=3001; do
  k=${c%%:*}; s=${c#*:}
  echo "$k $s | R $(run1 bR $k $s)"
done | tee $W/defaults.txt
echo "defaults $(el)"; pack
