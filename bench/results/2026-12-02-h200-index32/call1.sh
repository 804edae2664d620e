#!/usr/bin/env bash
# Session 52, device call 1: outer kernels whose own entry computes in 32-bit indices (N: this
# build) against main at 8b988e9 (O), both bundles of outer.kiln compiled on the build machine
# (.carry/exp.tar.xz: bN, bO): the default variant at 30 cases, 50 launches each, interleaved,
# two rounds; the GPU checks of N's every variant (random inputs, then NaN and infinities),
# own entries at awkward shapes; memcheck of every variant at 4 shapes.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
run1() { timeout 60 $K run $W/exp/$1 $2 --shape $3 --variant default --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
CASES="sum_bh:B=8,C=64,H=128,W=511 sum_bh:B=4,C=32,H=512,W=1001 sum_bh:B=16,C=64,H=256,W=256
sum_bh:B=32,C=3,H=224,W=224 sum_bh:B=64,C=256,H=7,W=7 sum_bh:B=2,C=128,H=1000,W=33
sum_bh:B=16,C=32,H=64,W=1023 sum_bh:B=4,C=16,H=1024,W=255 max_bh:B=8,C=64,H=128,W=511
max_bh:B=32,C=16,H=256,W=129 dbias_bf16:B=4,H=16,Q=1024,K=1024 dbias_bf16:B=8,H=12,Q=512,K=513
dbias_bf16:B=2,H=32,Q=2048,K=128 dbias_bf16:B=4,H=8,Q=512,K=1023
sum3:A=4,P=16,B=8,Q=16,C=32,R=64 sum3:A=3,P=5,B=7,Q=9,C=11,R=129 mean_prod_bh:B=8,C=64,H=128,W=511
colsum_f32:M=4096,N=32768 colsum_bf16:M=65536,N=2048 colsum_bf16:M=1048576,N=64
colsum_bf16:M=4194304,N=16 colsum_bf16:M=8191,N=8193 colsum_f32:M=1000,N=999
mid_mean:B=64,M=1024,N=512 mid_mean:B=6,M=8192,N=705 mid_mean:B=8,M=8192,N=999
mid_mean_bf16:B=4,M=8192,N=1057 mid_mean_bf16:B=24,M=2048,N=1001
ln_wgrad:M=32768,N=4096 ln_wgrad:M=1048576,N=64"
{
for round in 1 2; do
  for c in $CASES; do
    k=${c%%:*}; s=${c#*:}
    echo "round $round | $k $s | N $(run1 bN $k $s) | O $(run1 bO $k $s)"
  done
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
pass=0; fail=0
{
while read -r inputs bundle k shapes; do
  for s in $shapes; do
    KILN_RUN_INPUTS=$inputs timeout 90 $K run $W/exp/$bundle $k --shape $s --variant all --reps 2 > $W/t.log 2>&1
    rc=$?
    if ((rc == 0)); then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL($rc) $inputs $k $s"; tail -3 $W/t.log; fi
  done
done <<'CHECKS'
random bN sum_bh B=1,C=1,H=1,W=1 B=3,C=5,H=7,W=7 B=9,C=3,H=1,W=10 B=7,C=2,H=3,W=17 B=64,C=3,H=33,W=5 B=2,C=33,H=3,W=1000 B=5,C=7,H=130,W=257 B=3,C=1,H=41,W=3 B=8,C=64,H=128,W=511
random bN max_bh B=3,C=5,H=7,W=7 B=7,C=2,H=3,W=17 B=5,C=7,H=130,W=257 B=32,C=16,H=256,W=129
random bN dbias_bf16 B=1,H=1,Q=1,K=1 B=3,H=5,Q=7,K=8 B=2,H=3,Q=129,K=1000 B=4,H=2,Q=1000,K=64 B=4,H=8,Q=512,K=1023
random bN sum3 A=1,P=1,B=1,Q=1,C=1,R=1 A=3,P=5,B=7,Q=9,C=11,R=13 A=2,P=3,B=5,Q=2,C=33,R=64 A=5,P=1,B=3,Q=1,C=7,R=3
random bN mean_prod_bh B=3,C=5,H=7,W=7 B=5,C=7,H=130,W=257
random bN colsum_f32 M=1,N=1 M=7,N=1 M=1,N=9 M=1000,N=999 M=37,N=5 M=100003,N=3 M=4097,N=33
random bN colsum_bf16 M=1,N=1 M=1000,N=999 M=100003,N=3 M=4097,N=2050 M=3,N=8193
random bN mid_mean B=1,M=1,N=1 B=3,M=7,N=5 B=5,M=9,N=17 B=7,M=33,N=101 B=4,M=6,N=1030 B=6,M=8192,N=705
random bN mid_mean_bf16 B=3,M=7,N=5 B=4,M=1000,N=1057 B=2,M=3,N=8
random bN ln_wgrad M=1,N=1 M=37,N=3 M=130,N=200 M=41,N=523 M=100003,N=64
specials bN sum_bh B=3,C=5,H=7,W=7 B=5,C=7,H=130,W=257 B=3,C=1,H=41,W=3
specials bN max_bh B=5,C=7,H=130,W=257
specials bN dbias_bf16 B=2,H=3,Q=129,K=1000
specials bN sum3 A=3,P=5,B=7,Q=9,C=11,R=13
specials bN colsum_f32 M=1000,N=999 M=100003,N=3
specials bN colsum_bf16 M=4097,N=2050
specials bN mid_mean B=5,M=9,N=17
specials bN ln_wgrad M=41,N=523
CHECKS
echo "gpu checks: $pass passed, $fail failed"
} > $W/checks.txt 2>&1
tail -6 $W/checks.txt; echo "checks $(el)"; pack
for c in "sum_bh B=5,C=7,H=130,W=257" "dbias_bf16 B=2,H=3,Q=129,K=1000" "colsum_bf16 M=4097,N=2050" "ln_wgrad M=100003,N=64"; do
  set -- $c
  timeout 100 compute-sanitizer --tool memcheck $K run $W/exp/bN $1 --shape $2 --variant all --reps 1 > $W/mc.txt 2>&1
  echo "memcheck $1 $2: rc=$? $(grep -E 'ERROR SUMMARY' $W/mc.txt | sort | uniq -c | tr '\n' ' ')"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
