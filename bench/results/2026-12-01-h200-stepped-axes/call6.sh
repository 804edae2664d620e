#!/usr/bin/env bash
# Session 47, device call 6: the rule's few-tiles pick (bundle/rule.h few_tiles_variant: the
# deep split where an unsplit scalar stand-in has fewer tiles than twice the SMs), the build to
# be committed (F). At 16 shapes where its pick changes (8 of call 5, 8 new, 2-D column sums
# among them) and 2 where it does not: the pick before (R's, from `kiln explain` of the commit
# before) and F's, by --variant, interleaved, 50 launches, two rounds; F's `--variant default`
# once (the runtime's pick, which must be F's explain); the GPU checks of the default at every
# changed shape (random inputs, then NaN and infinities at four) and memcheck at two; torch
# eager and torch.compile at the 16. Bundle bF: outer.kiln + axes.kiln (all.kiln), compiled
# on the build machine by F (.carry/exp.tar.xz).
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
D=bench/results/2026-12-01-h200-stepped-axes
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call6.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
B=$W/exp/bF
run1() { timeout 60 $K run $B $1 --shape $2 --variant $3 --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
cat > $W/cases.txt <<'CASES'
mid_mean B=6,M=8192,N=705 8 29
mid_mean B=4,M=4096,N=1057 32 29
mid_mean B=8,M=8192,N=999 32 29
mid_mean B=32,M=2048,N=257 32 29
mid_mean B=7,M=5000,N=641 8 29
mid_mean B=10,M=4096,N=555 8 29
mid_mean_bf16 B=4,M=8192,N=1057 14 29
mid_mean_bf16 B=6,M=4096,N=801 14 29
sum_bh B=2,C=128,H=1000,W=33 32 29
sum_bh B=2,C=256,H=1000,W=17 32 29
sum_bh B=8,C=96,H=256,W=63 32 29
sum_bh B=3,C=96,H=700,W=47 32 29
max_bh B=4,C=64,H=300,W=83 32 29
dbias_bf16 B=4,H=8,Q=512,K=1023 32 29
colsum_f32 M=100000,N=4223 8 29
colsum_bf16 M=50000,N=7001 14 29
mid_mean B=16,M=4096,N=1001 32 32
sum_bh B=4,C=128,H=512,W=99 32 32
CASES
{
for round in 1 2; do
  while read -r k s old new; do
    echo "round $round | $k $s | before $(run1 $k $s $old) | after $(run1 $k $s $new)"
  done < $W/cases.txt
done
while read -r k s old new; do echo "default $k $s: explain v$new, runs $(run1 $k $s default)"; done < $W/cases.txt
} | tee $W/ab.txt
echo "ab $(el)"; pack
pass=0; fail=0
{
while read -r k s old new; do
  [[ $old == "$new" ]] && continue
  for inputs in random specials; do
    [[ $inputs == specials && $k != mid_mean && $k != sum_bh ]] && continue
    KILN_RUN_INPUTS=$inputs timeout 120 $K run $B $k --shape $s --variant default --reps 2 > $W/t.log 2>&1
    rc=$?
    if ((rc == 0)); then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL($rc) $inputs $k $s"; tail -3 $W/t.log; fi
  done
done < $W/cases.txt
echo "gpu checks: $pass passed, $fail failed"
} > $W/checks.txt 2>&1
tail -4 $W/checks.txt; echo "checks $(el)"; pack
for c in "mid_mean B=6,M=817,N=705" "sum_bh B=2,C=128,H=600,W=33"; do
  set -- $c
  timeout 120 compute-sanitizer --tool memcheck $K run $B $1 --shape $2 --variant 29 --reps 1 > $W/mc.txt 2>&1
  echo "memcheck $1 $2 v29: rc=$? $(grep -E 'ERROR SUMMARY' $W/mc.txt | sort | uniq -c | tr '\n' ' ')"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
timeout 300 python3 $D/torch_few.py $W/torch.json > $W/torch.txt 2>&1; tail -18 $W/torch.txt
echo "torch $(el)"; pack
