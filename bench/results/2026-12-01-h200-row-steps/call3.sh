#!/usr/bin/env bash
# Session 48, device call 3: bB (main at 42c9ae6), bS (call 2's bS: vector and scalar paths
# stepped group to group, the whole program where it fits twice the blocks) and bP (each point
# stepped from its neighbour too: the scalar loads of a shifted group, and of a tensor whose
# vectors do not run along the row). The default variant at call 1's 16 cases and 3 whose rows
# are odd (shifting variants), 50 launches, interleaved, two rounds; every variant at 5; the GPU
# checks of bP's every variant (random inputs, then NaN and infinities).
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
D=bench/results/2026-12-01-h200-row-steps
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call3.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
run1() { timeout 60 $K run $W/exp/$1 $2 --shape $3 --variant default --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
CASES="channel_sums:N=64,C=256,H=56,W=56 channel_sums:N=32,C=64,H=28,W=28 channel_sums:N=8,C=512,H=14,W=14
channel_sums:N=128,C=64,H=56,W=56 channel_sums:N=256,C=32,H=32,W=32 channel_sums:N=4,C=3,H=224,W=224
channel_sums:N=128,C=128,H=17,W=17 channel_sums:N=64,C=512,H=7,W=7
channel_var_bf16:N=64,C=256,H=56,W=56 channel_var_bf16:N=32,C=128,H=28,W=28
channel_var_bf16:N=128,C=64,H=56,W=56 channel_var_bf16:N=64,C=128,H=17,W=17
channel_mean_bf16:N=64,C=256,L=3136 channel_mean_bf16:N=512,C=64,L=256 channel_mean_bf16:N=16,C=512,L=3001
diag_sums:N=16,C=256,H=32,W=32
channel_sums:N=65,C=64,H=17,W=17 channel_var_bf16:N=63,C=64,H=17,W=17 channel_mean_bf16:N=15,C=512,L=3001"
{
for round in 1 2; do
  for c in $CASES; do
    k=${c%%:*}; s=${c#*:}
    echo "round $round | $k $s | B $(run1 bB $k $s) | S $(run1 bS $k $s) | P $(run1 bP $k $s)"
  done
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
{
for c in channel_sums:N=65,C=64,H=17,W=17 channel_var_bf16:N=63,C=64,H=17,W=17 channel_mean_bf16:N=15,C=512,L=3001 \
         channel_sums:N=128,C=128,H=17,W=17 diag_sums:N=16,C=256,H=32,W=32; do
  k=${c%%:*}; s=${c#*:}
  for b in bB bS bP; do
    echo "== $b $k $s"
    timeout 120 $K run $W/exp/$b $k --shape $s --variant all --reps 20 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-2)}' | tr '\n' ' '; echo
  done
done
} > $W/sweep.txt 2>&1
echo "sweep $(el)"; pack
pass=0; fail=0
{
for b in bP; do
while read -r inputs k shapes; do
  for s in $shapes; do
    KILN_RUN_INPUTS=$inputs timeout 120 $K run $W/exp/$b $k --shape $s --variant all --reps 2 > $W/t.log 2>&1
    rc=$?
    if ((rc == 0)); then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL($rc) $b $inputs $k $s"; tail -3 $W/t.log; fi
  done
done <<'CHECKS'
random channel_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=2,C=3,H=5,W=33 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=2,C=1,H=300,W=300 N=5,C=7,H=16,W=16 N=33,C=2,H=17,W=17
random channel_var_bf16 N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=2,C=1,H=300,W=304 N=65,C=2,H=17,W=17
random channel_mean_bf16 N=1,C=1,L=1 N=3,C=5,L=49 N=9,C=3,L=4096 N=5,C=2,L=30001 N=2,C=1,L=100000
random channel_mean_bf16 N=15,C=3,L=3001
random diag_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=8 N=9,C=2,H=33,W=64 N=5,C=3,H=130,W=33
specials channel_sums N=3,C=5,H=7,W=7 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257
specials channel_var_bf16 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257
specials channel_mean_bf16 N=5,C=2,L=30001
specials diag_sums N=9,C=2,H=33,W=64
CHECKS
done
echo "gpu checks: $pass passed, $fail failed"
} > $W/checks.txt 2>&1
tail -4 $W/checks.txt; echo "checks $(el)"; pack
for c in "channel_sums N=3,C=2,H=130,W=257" "channel_sums N=7,C=3,H=64,W=64" "channel_var_bf16 N=3,C=2,H=130,W=257" "diag_sums N=5,C=3,H=130,W=33"; do
  set -- $c
  for b in bP; do
  timeout 100 compute-sanitizer --tool memcheck $K run $W/exp/$b $1 --shape $2 --variant all --reps 1 > $W/mc.txt 2>&1
  echo "memcheck $b $1 $2: rc=$? $(grep -E 'ERROR SUMMARY' $W/mc.txt | sort | uniq -c | tr '\n' ' ')"
  done
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
