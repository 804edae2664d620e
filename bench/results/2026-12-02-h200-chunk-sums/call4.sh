#!/usr/bin/env bash
# Session 49, device call 4: joined reduced indices (reduction::stepped_axis_groups: batchnorm's
# x[n, c, h, w] steps (n, h * w), one wrap a point where it was two) on top of N (2326d6c, the
# chunk sums): JT (the join, and a row kernel's whole-program image kept where it reaches the
# occupancy target, compiler/compile.cpp whole_program_reaches_target) against N on rows.kiln's
# cases, and J (the join alone) where the two differ (channel_var_bf16's 128-thread variants);
# the default variant, interleaved, two rounds. Then every variant of JT's rows.kiln and of
# examples/spatial_mean.kiln against the interpreter (random inputs, then NaN and infinities)
# and memcheck at 4 shapes.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call4.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
run1() { timeout 60 $K run $W/exp/$1 $2 --shape $3 --variant default --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
CASES="channel_sums:N=64,C=512,H=7,W=7 channel_sums:N=32,C=1024,H=7,W=7 channel_sums:N=128,C=128,H=17,W=17
channel_sums:N=16,C=64,H=35,W=35 channel_var_bf16:N=64,C=512,H=7,W=7 channel_sums:N=64,C=256,H=56,W=56
channel_sums:N=32,C=64,H=28,W=28 channel_sums:N=128,C=64,H=56,W=56 channel_sums:N=256,C=32,H=32,W=32
channel_sums:N=4,C=3,H=224,W=224 channel_var_bf16:N=64,C=256,H=56,W=56 channel_var_bf16:N=128,C=64,H=56,W=56
channel_var_bf16:N=64,C=128,H=17,W=17 channel_var_bf16:N=32,C=128,H=28,W=28 channel_sums:N=65,C=64,H=17,W=17
channel_var_bf16:N=63,C=64,H=17,W=17 channel_sums:N=8,C=512,H=14,W=14 channel_var_bf16:N=32,C=1024,H=7,W=7"
{
for round in 1 2; do
  for c in $CASES; do
    k=${c%%:*}; s=${c#*:}
    j=""; [[ $k == channel_var_bf16 && $s == *H=7,* ]] && j=" | J $(run1 J_rows $k $s)"
    echo "round $round | $k $s | N $(run1 N_rows $k $s) | JT $(run1 JT_rows $k $s)$j"
  done
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
pass=0; fail=0
{
while read -r inputs b k shapes; do
  for s in $shapes; do
    KILN_RUN_INPUTS=$inputs timeout 120 $K run $W/exp/$b $k --shape $s --variant all --reps 2 > $W/t.log 2>&1
    rc=$?
    if ((rc == 0)); then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL($rc) $b $inputs $k $s"; tail -3 $W/t.log; fi
  done
done <<'CHECKS'
random JT_rows channel_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=2,C=3,H=5,W=33 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=2,C=1,H=300,W=300 N=33,C=2,H=17,W=17 N=65,C=2,H=17,W=17 N=64,C=3,H=7,W=7 N=5,C=2,H=1,W=999
random JT_rows channel_var_bf16 N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=65,C=2,H=17,W=17 N=64,C=3,H=7,W=7
random JT_rows channel_mean_bf16 N=1,C=1,L=1 N=3,C=5,L=49 N=5,C=2,L=30001 N=15,C=3,L=3001
random JT_rows diag_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=8 N=9,C=2,H=33,W=64
specials JT_rows channel_sums N=3,C=5,H=7,W=7 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=65,C=2,H=17,W=17
specials JT_rows channel_var_bf16 N=7,C=3,H=64,W=64 N=64,C=3,H=7,W=7
random JT_spatial spatial_mean B=1,C=1,H=1,W=1 B=3,C=5,H=7,W=7 B=1,C=3,H=1001,W=1001 B=8,C=7,H=129,W=131
random JT_spatial spatial_mean_bf16 B=1,C=1,H=1,W=1 B=3,C=5,H=7,W=7 B=8,C=7,H=129,W=131
random JT_spatial channel_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=2,C=3,H=257,W=255 N=5,C=64,H=14,W=14 N=32,C=64,H=181,W=181 N=3,C=5,H=2,W=6 N=16,C=32,H=56,W=56
random JT_spatial channel_mean_bf16 N=1,C=1,L=1 N=5,C=3,L=1001 N=64,C=3,L=3136
random JT_spatial sum_bh B=1,C=1,H=1,W=1 B=3,C=5,H=7,W=7 B=64,C=3,H=33,W=5 B=2,C=33,H=3,W=1000
random JT_spatial token_max B=1,S=1,D=1 B=3,S=7,D=9 B=4,S=1000,D=1001
specials JT_spatial channel_sums N=3,C=5,H=7,W=7 N=2,C=3,H=257,W=255
CHECKS
echo "gpu checks: $pass passed, $fail failed"
} > $W/checks.txt 2>&1
tail -4 $W/checks.txt; echo "checks $(el)"; pack
for c in "JT_rows channel_sums N=3,C=2,H=130,W=257" "JT_rows channel_sums N=65,C=2,H=17,W=17" "JT_rows channel_var_bf16 N=3,C=2,H=130,W=257" "JT_spatial channel_sums N=2,C=3,H=257,W=255"; do
  set -- $c
  timeout 100 compute-sanitizer --tool memcheck $K run $W/exp/$1 $2 --shape $3 --variant all --reps 1 > $W/mc.txt 2>&1
  echo "memcheck $1 $2 $3: rc=$? $(grep -E 'ERROR SUMMARY' $W/mc.txt | sort | uniq -c | tr '\n' ' ')"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
