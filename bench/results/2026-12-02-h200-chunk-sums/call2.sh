#!/usr/bin/env bash
# Session 49, device call 2: N (call 1's build, the one submitted) on the GPU: every variant of
# rows.kiln's and mb_rows.kiln's kernels against the interpreter at shapes that loop over their
# rows (vector, scalar, stepped, split, staged and shifted paths), random inputs then NaN and
# infinities; compute-sanitizer memcheck of every variant at 5 of them.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
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
random N_rows channel_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=2,C=3,H=5,W=33 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=2,C=1,H=300,W=300 N=33,C=2,H=17,W=17 N=65,C=2,H=17,W=17 N=64,C=3,H=7,W=7
random N_rows channel_var_bf16 N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=7 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=65,C=2,H=17,W=17
random N_rows channel_mean_bf16 N=1,C=1,L=1 N=3,C=5,L=49 N=9,C=3,L=4096 N=5,C=2,L=30001 N=2,C=1,L=100000 N=15,C=3,L=3001
random N_rows diag_sums N=1,C=1,H=1,W=1 N=3,C=5,H=7,W=8 N=9,C=2,H=33,W=64 N=5,C=3,H=130,W=33
specials N_rows channel_sums N=3,C=5,H=7,W=7 N=7,C=3,H=64,W=64 N=3,C=2,H=130,W=257 N=65,C=2,H=17,W=17
specials N_rows channel_var_bf16 N=7,C=3,H=64,W=64
specials N_rows channel_mean_bf16 N=5,C=2,L=30001 N=15,C=3,L=3001
random N_mb rowsum_f32 M=1,N=1 M=5,N=4097 M=3,N=100003 M=2,N=65536 M=7,N=20001
random N_mb rowmax_bf16 M=3,N=70001 M=2,N=65536
random N_mb softmax_f32 M=3,N=40001 M=2,N=32768
random N_mb softmax_bf16 M=2,N=65539 M=3,N=20000
random N_mb logsumexp_bf16 M=3,N=50001 M=2,N=65536
random N_mb total_f32 M=1,N=3000017
random N_mb layernorm_f32 M=3,N=33333 M=2,N=1023
random N_mb layernorm_bf16 M=2,N=20001
random N_mb rmsnorm_bf16 M=3,N=17001
random N_mb add_rmsnorm M=2,N=40001
specials N_mb rowsum_f32 M=3,N=100003 M=2,N=65536
specials N_mb softmax_f32 M=3,N=40001
specials N_mb logsumexp_bf16 M=3,N=50001
specials N_mb total_f32 M=1,N=3000017
specials N_mb layernorm_f32 M=3,N=33333
CHECKS
echo "gpu checks: $pass passed, $fail failed"
} > $W/checks.txt 2>&1
tail -4 $W/checks.txt; echo "checks $(el)"; pack
for c in "N_rows channel_sums N=3,C=2,H=130,W=257" "N_rows channel_mean_bf16 N=5,C=2,L=30001" "N_mb rowsum_f32 M=3,N=100003" "N_mb softmax_f32 M=3,N=40001" "N_mb layernorm_f32 M=3,N=33333"; do
  set -- $c
  timeout 100 compute-sanitizer --tool memcheck $K run $W/exp/$1 $2 --shape $3 --variant all --reps 1 > $W/mc.txt 2>&1
  echo "memcheck $1 $2 $3: rc=$? $(grep -E 'ERROR SUMMARY' $W/mc.txt | sort | uniq -c | tr '\n' ' ')"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
