#!/usr/bin/env bash
# Session 50, device call 3: the build submitted. As call 2, N now walking whole chunks
# unmasked only in passes that store no elements and only in scalar walks or where the kernel
# steps its offsets (call 2's build raised the registers of a bf16 softmax's held tier and of
# the split row sum's, and their times). Round 1 of the defaults interleaved, every variant of
# N against the interpreter (random inputs, then NaN and infinities), memcheck, Nsight Compute
# on batchnorm's sums over 7 x 7 runs (B and N), round 2.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call3.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
run1() { timeout 60 $K run $W/exp/$1 $2 --shape $3 --variant default --reps 50 --no-check --copy-baseline 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3), $NF "%"}' | head -1; }
CASES="rows:channel_sums:N=64,C=512,H=7,W=7 rows:channel_sums:N=32,C=1024,H=7,W=7 rows:channel_sums:N=128,C=128,H=17,W=17
rows:channel_sums:N=16,C=64,H=35,W=35 rows:channel_mean_bf16:N=32,C=768,L=49 rows:channel_mean_bf16:N=8,C=256,L=1001
rows:channel_var_bf16:N=64,C=512,H=7,W=7 rows:channel_sums:N=64,C=256,H=56,W=56 rows:channel_sums:N=32,C=64,H=28,W=28
rows:channel_sums:N=128,C=64,H=56,W=56 rows:channel_sums:N=4,C=3,H=224,W=224 rows:channel_var_bf16:N=64,C=256,H=56,W=56
rows:channel_var_bf16:N=128,C=64,H=56,W=56 rows:channel_var_bf16:N=64,C=128,H=17,W=17 rows:channel_mean_bf16:N=16,C=512,L=3001
rows:diag_sums:N=16,C=256,H=32,W=32 rows:channel_sums:N=65,C=64,H=17,W=17 rows:channel_mean_bf16:N=15,C=512,L=3001
mb:rowsum_f32:M=1024,N=65536 mb:rowsum_f32:M=4096,N=30001 mb:rowmax_bf16:M=1024,N=65537 mb:softmax_f32:M=4096,N=32768
mb:logsumexp_bf16:M=4096,N=32768 mb:total_f32:M=1,N=67108864 mb:softmax_bf16:M=16384,N=4095 mb:layernorm_f32:M=16383,N=1023
mb:rowsum_f32:M=8,N=1000003 mb:softmax_bf16:M=64,N=100000 mb:rowsum_f32:M=32768,N=4096
mb:rowmax_bf16:M=32768,N=4096 mb:softmax_bf16:M=32768,N=1024 mb:softmax_f32:M=32768,N=1001 mb:layernorm_bf16:M=32768,N=4096
mb:rmsnorm_bf16:M=32768,N=4096 mb:add_rmsnorm:M=32768,N=4096 mb:layernorm_f32:M=8,N=100003 mb:rmsnorm_bf16:M=8,N=100000"
ab() {
  for c in $CASES; do
    IFS=: read -r f k s <<< "$c"
    echo "round $1 | $k $s | B $(run1 B_$f $k $s) | N $(run1 N_$f $k $s)"
  done
}
ab 1 | tee $W/ab.txt; echo "ab1 $(el)"; pack
pass=0; fail=0
{
while read -r inputs b k shapes; do
  for s in $shapes; do
    (( $(date +%s) - t0 > 420 )) && { echo "SKIPPED (time) $b $inputs $k $s"; continue; }
    KILN_RUN_INPUTS=$inputs timeout 120 $K run $W/exp/$b $k --shape $s --variant all --reps 2 > $W/t.log 2>&1
    rc=$?
    if ((rc == 0)); then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL($rc) $b $inputs $k $s"; tail -3 $W/t.log; fi
  done
done <<'CHECKS'
random N_rows channel_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=65,C=2,H=17,W=17 N=64,C=3,H=7,W=7 N=5,C=2,H=1,W=999 N=21,C=2,H=7,W=7
random N_rows channel_var_bf16 N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=64,C=3,H=7,W=7 N=2,C=3,H=300,W=304
random N_rows channel_mean_bf16 N=1,C=1,L=1 N=3,C=5,L=49 N=5,C=2,L=30001 N=15,C=3,L=3001 N=4,C=2,L=1024
random N_rows diag_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=8 N=9,C=2,H=33,W=64
specials N_rows channel_sums N=3,C=5,H=7,W=7 N=3,C=2,H=130,W=257 N=65,C=2,H=17,W=17
specials N_rows channel_var_bf16 N=7,C=3,H=64,W=64 N=64,C=3,H=7,W=7
random N_mb rowsum_f32 M=1,N=1 M=3,N=70001 M=2,N=4096 M=5,N=65536
random N_mb softmax_f32 M=5,N=40001 M=3,N=32768 M=2,N=1
random N_mb softmax_bf16 M=3,N=100000 M=4,N=20003
random N_mb layernorm_f32 M=7,N=20001 M=3,N=16384
random N_mb logsumexp_bf16 M=3,N=65537 M=2,N=32768
random N_mb total_f32 M=1,N=3000017 M=1,N=1048576
random N_mb add_rmsnorm M=3,N=50001 M=2,N=40960
specials N_mb softmax_f32 M=5,N=40001
specials N_mb layernorm_f32 M=7,N=20001
random N_spatial channel_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=2,C=3,H=257,W=255 N=16,C=32,H=56,W=56
random N_spatial sum_bh B=3,C=5,H=7,W=7
CHECKS
echo "gpu checks: $pass passed, $fail failed"
} > $W/checks.txt 2>&1
tail -4 $W/checks.txt; echo "checks $(el)"; pack
for c in "N_rows channel_sums N=3,C=2,H=130,W=257" "N_mb softmax_f32 M=5,N=40001" "N_mb rowsum_f32 M=3,N=70001"; do
  set -- $c
  timeout 100 compute-sanitizer --tool memcheck $K run $W/exp/$1 $2 --shape $3 --variant all --reps 1 > $W/mc.txt 2>&1
  echo "memcheck $1 $2 $3: rc=$? $(grep -E 'ERROR SUMMARY' $W/mc.txt | sort | uniq -c | tr '\n' ' ')"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
for b in B N; do
  timeout 60 ncu --metrics smsp__inst_executed.sum,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread \
    -k regex:channel_sums $K run $W/exp/${b}_rows channel_sums --shape N=64,C=512,H=7,W=7 --variant default --reps 3 --no-check > $W/ncu_$b.txt 2>&1
  echo "ncu $b: $(grep -E 'inst_executed|duration|warps_active|registers' $W/ncu_$b.txt | tail -4 | awk '{print $1, $NF}' | tr '\n' ' ')"
done | tee $W/ncu.txt
echo "ncu $(el)"; pack
(( $(date +%s) - t0 < 470 )) && { ab 2 | tee -a $W/ab.txt; echo "ab2 $(el)"; pack; }
