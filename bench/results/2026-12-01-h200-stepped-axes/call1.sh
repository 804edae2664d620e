#!/usr/bin/env bash
# Session 47, device call 1: outer reductions over reduced indices apart (axes.kiln), each
# chunk's steps' coordinates and the inputs' offsets stepped by additions (N, the build to be
# committed) against dividing every step's flat index (O: the kernels of 039c1c6), both bundles
# compiled on the build machine (.carry/exp.tar.xz: bN, bO) and run by N's kiln: the default
# variant at 13 cases, 50 launches each, interleaved, two rounds; the GPU checks of every variant
# against the interpreter (random inputs, then NaN and infinities) and memcheck; every variant at
# 4 cases; Nsight Compute on the sum over b and h; torch eager and torch.compile.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
D=bench/results/2026-12-01-h200-stepped-axes
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
run1() { timeout 60 $K run $W/exp/$1 $2 --shape $3 --variant $4 --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
CASES="sum_bh:B=8,C=64,H=128,W=511 sum_bh:B=4,C=32,H=512,W=1001 sum_bh:B=16,C=64,H=256,W=256
sum_bh:B=32,C=3,H=224,W=224 sum_bh:B=64,C=256,H=7,W=7 sum_bh:B=2,C=128,H=1000,W=33
max_bh:B=8,C=64,H=128,W=511 dbias_bf16:B=4,H=16,Q=1024,K=1024 dbias_bf16:B=8,H=12,Q=512,K=513
dbias_bf16:B=2,H=32,Q=2048,K=128 sum3:A=4,P=16,B=8,Q=16,C=32,R=64 sum3:A=3,P=5,B=7,Q=9,C=11,R=129
mean_prod_bh:B=8,C=64,H=128,W=511"
{
for round in 1 2; do
  for c in $CASES; do
    k=${c%%:*}; s=${c#*:}
    echo "round $round | $k $s | new $(run1 bN $k $s default) | old $(run1 bO $k $s default)"
  done
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
B=$W/exp/bN
pass=0; fail=0
{
while read -r inputs bundle k shapes; do
  for s in $shapes; do
    KILN_RUN_INPUTS=$inputs timeout 90 $K run $W/exp/$bundle $k --shape $s --variant all --reps 2 > $W/t.log 2>&1
    rc=$?
    if ((rc == 0)); then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL($rc) $inputs $k $s"; tail -3 $W/t.log; fi
  done
done <<'CHECKS'
random bN sum_bh B=1,C=1,H=1,W=1 B=3,C=5,H=7,W=7 B=9,C=3,H=1,W=10 B=7,C=2,H=3,W=17 B=64,C=3,H=33,W=5 B=2,C=33,H=3,W=1000 B=5,C=7,H=130,W=257 B=3,C=1,H=41,W=3 B=16,C=64,H=256,W=256
random bN max_bh B=3,C=5,H=7,W=7 B=7,C=2,H=3,W=17 B=5,C=7,H=130,W=257
random bN dbias_bf16 B=1,H=1,Q=1,K=1 B=3,H=5,Q=7,K=8 B=2,H=3,Q=129,K=1000 B=4,H=2,Q=1000,K=64
random bN sum3 A=1,P=1,B=1,Q=1,C=1,R=1 A=3,P=5,B=7,Q=9,C=11,R=13 A=2,P=3,B=5,Q=2,C=33,R=64 A=5,P=1,B=3,Q=1,C=7,R=3
random bN mean_prod_bh B=3,C=5,H=7,W=7 B=5,C=7,H=130,W=257
specials bN sum_bh B=3,C=5,H=7,W=7 B=5,C=7,H=130,W=257 B=3,C=1,H=41,W=3
specials bN max_bh B=5,C=7,H=130,W=257
specials bN dbias_bf16 B=2,H=3,Q=129,K=1000
specials bN sum3 A=3,P=5,B=7,Q=9,C=11,R=13
random bS sum_bh B=1,C=1,H=1,W=1 B=3,C=5,H=7,W=7 B=64,C=3,H=33,W=5 B=2,C=33,H=3,W=1000 B=16,C=64,H=256,W=256
random bS token_max B=1,S=1,D=1 B=3,S=33,D=1000 B=7,S=1000,D=5 B=2,S=4097,D=64
random bS channel_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=2,C=3,H=257,W=255 N=5,C=64,H=14,W=14
CHECKS
echo "gpu checks: $pass passed, $fail failed"
} > $W/checks.txt 2>&1
tail -4 $W/checks.txt; echo "checks $(el)"; pack
for c in "sum_bh B=3,C=5,H=7,W=7" "sum_bh B=3,C=1,H=41,W=3" "sum3 A=3,P=5,B=7,Q=9,C=11,R=13" "dbias_bf16 B=2,H=3,Q=129,K=1000"; do
  set -- $c
  timeout 100 compute-sanitizer --tool memcheck $K run $B $1 --shape $2 --variant all --reps 1 > $W/mc.txt 2>&1
  echo "memcheck $1 $2: rc=$? $(grep -E 'ERROR SUMMARY' $W/mc.txt | sort | uniq -c | tr '\n' ' ')"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
for c in N:sum_bh:B=8,C=64,H=128,W=511 O:sum_bh:B=8,C=64,H=128,W=511 N:sum_bh:B=16,C=64,H=256,W=256 N:dbias_bf16:B=4,H=16,Q=1024,K=1024 N:sum3:A=4,P=16,B=8,Q=16,C=32,R=64; do
  b=${c%%:*}; c=${c#*:}; k=${c%%:*}; s=${c#*:}
  f=$W/all_${b}_${k}_${s//[=,]/_}.txt
  timeout 90 $K run $W/exp/b$b $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
  echo "== $b $k $s $(grep -E '^ *v[0-9]+\*' $f | awk '{print "default", $1, $(NF-3)}') best $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3)}' | sort -k2 -n | head -3 | tr '\n' ' ')"
done | tee $W/sweep.txt
echo "sweep $(el)"; pack
for b in N O; do
  timeout 120 ncu --metrics smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,gpu__time_duration.sum \
    -k regex:"sum_bh_s0_v32\$" -c 1 $K run $W/exp/b$b sum_bh --shape B=8,C=64,H=128,W=511 --variant 32 --reps 1 --no-check > $W/ncu_$b.txt 2>&1
  echo "ncu $b: $(grep -E 'inst_executed|dram__|sm__throughput|registers|duration' $W/ncu_$b.txt | awk '{print $1, $(NF)}' | tr '\n' ' ')"
done | tee $W/ncu.txt
echo "ncu $(el)"; pack
timeout 300 python3 $D/torch_axes.py $W/torch.json > $W/torch.txt 2>&1; tail -15 $W/torch.txt
echo "torch $(el)"; pack
