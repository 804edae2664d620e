#!/usr/bin/env bash
# Session 46, device call 4: build P (scalar outer configs prefetch a chunk ahead, chunk_loop)
# against A (HEAD), outer.kiln compiled here by each (.carry/exp.tar.xz), every variant at call
# 2's 11 shapes, A and P in turn at each; then P checked on the GPU: outer.kiln's kernels at the
# shapes tests/gpu/cases.txt gives those (as session 45's call 8), every variant against the
# interpreter, random inputs, then NaN and infinities; memcheck of every variant at three.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call4.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
for c in "colsum_f32 M=4096,N=32768" "colsum_f32 M=6000,N=20001" "colsum_bf16 M=8192,N=32768" \
         "colsum_bf16 M=8192,N=20001" "colsum_bf16 M=8191,N=8193" "mid_mean B=64,M=1024,N=513" \
         "mid_mean B=16,M=4096,N=1001" "mid_mean_bf16 B=8,M=2048,N=4097" "mid_mean_bf16 B=8,M=2048,N=4096" \
         "ln_wgrad M=4096,N=32768" "ln_wgrad M=4001,N=20001"; do
  set -- $c
  for b in A P; do
    f=$W/all_${b}_$1_${2//[=,]/_}.txt
    timeout 90 $K run $W/exp/b$b $1 --shape $2 --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
    echo "== $b $1 $2 $(grep -E '^ *v[0-9]+\*' $f | awk '{print "default", $1, $(NF-3)}') best $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3)}' | sort -k2 -n | head -1)"
  done
done | tee $W/sweep.txt
echo "sweep $(el)"; pack
B=$W/exp/bP
pass=0; fail=0
{
while read -r inputs k shapes; do
  for s in $shapes; do
    KILN_RUN_INPUTS=$inputs timeout 60 $K run $B $k --shape $s --variant all --reps 2 > $W/t.log 2>&1
    rc=$?
    if ((rc == 0)); then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL($rc) $inputs $k $s"; tail -3 $W/t.log; fi
  done
done <<'CASES'
random colsum_f32 M=1,N=1 M=1000,N=1024 M=100003,N=3 M=1000,N=33 M=4095,N=7 M=33,N=4097 M=1048577,N=64 M=65537,N=2048 M=200003,N=257 M=100001,N=200
random colsum_bf16 M=1,N=1 M=1000,N=1024 M=100003,N=3 M=1000,N=33 M=4095,N=7 M=33,N=4097 M=65537,N=2048 M=200003,N=257 M=100001,N=200
random ln_wgrad M=1,N=1 M=1000,N=33 M=4097,N=1024 M=1000003,N=3 M=65537,N=64 M=100003,N=257 M=20001,N=200
random mid_mean B=1,M=1,N=1 B=3,M=7,N=5 B=64,M=1024,N=512 B=2,M=100003,N=64 B=7,M=33,N=1001
random mid_mean_bf16 B=3,M=7,N=5 B=7,M=33,N=1001 B=5,M=9,N=17
specials colsum_f32 M=1,N=1 M=1000,N=1024 M=100003,N=3 M=33,N=4097
specials colsum_bf16 M=1000,N=1024 M=100003,N=3 M=33,N=4097
specials mid_mean B=7,M=33,N=1001
CASES
echo "gpu checks: $pass passed, $fail failed"
} > $W/checks.txt 2>&1
tail -4 $W/checks.txt; echo "checks $(el)"; pack
for c in "colsum_f32 M=33,N=4097" "ln_wgrad M=1000,N=33" "mid_mean B=7,M=33,N=1001"; do
  set -- $c
  timeout 100 compute-sanitizer --tool memcheck $K run $B $1 --shape $2 --variant all --reps 1 > $W/mc.txt 2>&1
  echo "memcheck $1 $2: rc=$? $(grep -E 'ERROR SUMMARY' $W/mc.txt | sort | uniq -c | tr '\n' ' ')"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
