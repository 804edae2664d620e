#!/usr/bin/env bash
# Session 46, device call 5: the rule's prefetching variant (bundle/rule.h prefetching_variant)
# at means, a max and a sum over middle axes whose innermost extent is odd, 16 shapes (3 of
# call 4, 13 new): the build to be committed (N) against the rule before it (the same binary
# with KILN_OLD_RULE=1, an experiment-only switch: the same kernels, the old pick), 50 launches
# each, interleaved, two rounds; every variant at 5 of them; torch.compile in the same call;
# then the GPU checks of outer.kiln's kernels (every variant, the prefetching ones included, as
# call 4) and memcheck. Bundles compiled here by N (.carry/exp.tar.xz: outer2.kiln as b2,
# outer.kiln as bN).
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
D=bench/results/2026-12-01-h200-outer-scalar
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call5.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
B=$W/exp/b2
run1() { timeout 60 env $4 $K run $B $1 --shape $2 --variant $3 --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
CASES="mid_mean:B=64,M=1024,N=513 mid_mean:B=16,M=4096,N=1001 mid_mean:B=4,M=8192,N=1025
mid_mean:B=32,M=2048,N=257 mid_mean:B=8,M=8192,N=999 mid_mean:B=128,M=1024,N=129
mid_mean:B=12,M=3000,N=1003 mid_mean_bf16:B=8,M=2048,N=4097 mid_mean_bf16:B=16,M=1024,N=1023
mid_mean_bf16:B=24,M=2048,N=1001 mid_mean_bf16:B=8,M=4096,N=2049 mid_mean_bf16:B=32,M=1536,N=511
mid_max:B=64,M=1024,N=513 mid_max:B=16,M=4096,N=1001 sum_bh:B=8,C=64,H=128,W=511
sum_bh:B=4,C=32,H=512,W=1001"
{
for round in 1 2; do
  for c in $CASES; do
    k=${c%%:*}; s=${c#*:}
    echo "round $round | $k $s | new $(run1 $k $s default X=1) | old $(run1 $k $s default KILN_OLD_RULE=1)"
  done
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
for c in mid_mean:B=64,M=1024,N=513 mid_mean:B=8,M=8192,N=999 mid_mean_bf16:B=24,M=2048,N=1001 mid_max:B=16,M=4096,N=1001 sum_bh:B=8,C=64,H=128,W=511; do
  k=${c%%:*}; s=${c#*:}
  f=$W/all_${k}_${s//[=,]/_}.txt
  timeout 90 $K run $B $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
  echo "== $k $s $(grep -E '^ *v[0-9]+\*' $f | awk '{print "default", $1, $(NF-3)}') best $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3)}' | sort -k2 -n | head -3 | tr '\n' ' ')"
done | tee $W/sweep.txt
echo "sweep $(el)"; pack
timeout 300 python3 $D/torch_outer2.py $W/torch.json > $W/torch.txt 2>&1; tail -18 $W/torch.txt
echo "torch $(el)"; pack
B=$W/exp/bN
pass=0; fail=0
{
while read -r inputs k shapes; do
  for s in $shapes; do
    KILN_RUN_INPUTS=$inputs timeout 60 $K run $B $k --shape $s --variant all --reps 2 > $W/t.log 2>&1
    rc=$?
    if ((rc == 0)); then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL($rc) $inputs $k $s"; tail -3 $W/t.log; fi
  done
done <<'CHECKS'
random colsum_f32 M=1,N=1 M=1000,N=1024 M=100003,N=3 M=1000,N=33 M=4095,N=7 M=33,N=4097 M=1048577,N=64 M=65537,N=2048 M=200003,N=257 M=100001,N=200
random colsum_bf16 M=1,N=1 M=1000,N=1024 M=100003,N=3 M=1000,N=33 M=4095,N=7 M=33,N=4097 M=65537,N=2048 M=200003,N=257 M=100001,N=200
random ln_wgrad M=1,N=1 M=1000,N=33 M=4097,N=1024 M=1000003,N=3 M=65537,N=64 M=100003,N=257 M=20001,N=200
random mid_mean B=1,M=1,N=1 B=3,M=7,N=5 B=64,M=1024,N=512 B=2,M=100003,N=64 B=7,M=33,N=1001 B=64,M=1025,N=513
random mid_mean_bf16 B=3,M=7,N=5 B=7,M=33,N=1001 B=5,M=9,N=17 B=8,M=2049,N=4097
specials colsum_f32 M=1,N=1 M=1000,N=1024 M=100003,N=3 M=33,N=4097
specials colsum_bf16 M=1000,N=1024 M=100003,N=3 M=33,N=4097
specials mid_mean B=7,M=33,N=1001 B=64,M=1025,N=513
CHECKS
echo "gpu checks: $pass passed, $fail failed"
} > $W/checks.txt 2>&1
tail -4 $W/checks.txt; echo "checks $(el)"; pack
for c in "colsum_f32 M=33,N=4097" "ln_wgrad M=1000,N=33" "mid_mean B=7,M=33,N=1001" "mid_mean_bf16 B=3,M=1031,N=5"; do
  set -- $c
  timeout 100 compute-sanitizer --tool memcheck $K run $B $1 --shape $2 --variant all --reps 1 > $W/mc.txt 2>&1
  echo "memcheck $1 $2: rc=$? $(grep -E 'ERROR SUMMARY' $W/mc.txt | sort | uniq -c | tr '\n' ' ')"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
