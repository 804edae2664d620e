#!/usr/bin/env bash
# Session 45, device call 4: the build to be committed (N: the scalar path's partly valid thread
# walks whole chunks; the rule reads the innermost extent for an outer step's twins) beside the
# build before the session (O): every variant of outer.kiln's kernels at odd shapes; the rule's
# new picks for means over the middle axis (B x N a multiple of the vector, N not) against what
# it ran before, interleaved, two rounds, with torch.compile; the GPU tests of the outer
# kernels (every variant at every shape of tests/gpu/cases.txt, random, then special_cases.txt)
# and memcheck. Bundles: outer.kiln compiled by each build (.carry/exp.tar.xz); the examples
# compiled here by N.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call4.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
sweep() {  # bundle kernel shape...
  local b=$1 k=$2; shift 2
  for s in "$@"; do
    f=$W/all_${b}_${k}_${s//[=,]/_}.txt
    timeout 90 $K run $W/exp/b$b $k --shape $s --variant all --copy-baseline --reps 30 --no-check > $f 2>&1
    echo "== $b $k $s"; grep -E '^ *v[0-9]+' $f | awk '{print $1, $2, $3, $4, $5, $6, $(NF-3), "us", $NF "%"}' | sort -k7 -n | head -3
  done
}
for b in N O; do
  {
  sweep $b colsum_f32 M=4095,N=32769 M=6000,N=20001
  sweep $b colsum_bf16 M=6000,N=20001 M=10000,N=12345
  sweep $b mid_mean B=63,M=1024,N=513 B=64,M=1024,N=513
  sweep $b ln_wgrad M=4001,N=20001 M=8191,N=8191
  } | tee $W/sweep_$b.txt
  echo "sweep $b $(el)"; pack
done
B=$W/exp/bN
{
for c in "mid_mean B=64,M=1024,N=513" "mid_mean B=16,M=4096,N=1001" "mid_mean B=4,M=8192,N=1025" \
         "mid_mean_bf16 B=8,M=2048,N=4097" "mid_mean B=4,M=33,N=7" "colsum_f32 M=1001,N=2001"; do
  set -- $c
  for inputs in random specials; do
    timeout 120 $K run $B $1 --shape $2 --variant default --reps 3 --inputs $inputs 2>&1 | grep -E "^ *(v[0-9]|default)|error|FAIL" | head -3 | sed "s|^|$1 $2 $inputs: |"
  done
done
} > $W/checks.txt 2>&1
cat $W/checks.txt; echo "checks $(el)"; pack
run1() { timeout 60 $K run $B $1 --shape $2 --variant $3 --reps 50 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3)}' | head -1; }
{
for round in 1 2; do
  while read -r k s old; do
    echo "round $round | $k $s | new $(run1 $k $s default) | old $(run1 $k $s $old)"
  done <<'CASES'
mid_mean B=64,M=1024,N=513 17
mid_mean B=16,M=4096,N=1001 22
mid_mean B=4,M=8192,N=1025 22
mid_mean_bf16 B=8,M=2048,N=4097 22
CASES
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
timeout 240 python3 bench/results/2026-12-01-h200-column-windows/torch_mid.py $W/torch.json > $W/torch.txt 2>&1; tail -6 $W/torch.txt
echo "torch $(el)"; pack
# The GPU tests of the outer kernels: every variant at every shape, random inputs, then NaN and inf.
pat='^(colsum +colsum|rowsum_colsum|weighted_colsum|reduction_suite +(colsum_bf16|ln_wgrad_bf16|mid_mean|rowsum_colsum_bf16)|spatial_mean +(sum_bh|token_max|channel_sums|channel_mean_bf16)|scalars +colsum_scaled|strided +colsum_strided|gather_suite +colsum_gather) '
pass=0; fail=0
{
while read -r inputs example kernel shapes; do
  bundle=$W/gb/$example
  [[ -f $bundle/manifest.json ]] || timeout 300 $K compile examples/$example.kiln -o $bundle -j16 > /dev/null || { echo "FAIL compile $example"; fail=$((fail+1)); continue; }
  for s in $shapes; do
    KILN_RUN_INPUTS=$inputs timeout 300 $K run $bundle $kernel --shape $s --variant all --reps 3 > $W/t.log 2>&1
    rc=$?
    if ((rc == 0)); then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL($rc) $inputs $example $kernel $s"; tail -3 $W/t.log; fi
  done
done < <(grep -E "$pat" tests/gpu/cases.txt | sed 's/^/random /'; grep -E "^[a-z]+ +${pat#^}" tests/gpu/special_cases.txt)
echo "gpu tests: $pass passed, $fail failed"
} > $W/gpu_tests.txt 2>&1
tail -5 $W/gpu_tests.txt; echo "gpu tests $(el)"; pack
for c in "colsum M=33,N=4097 all" "colsum M=1000,N=33 all" "reduction_suite mid_mean B=7,M=33,N=1001 all" "reduction_suite ln_wgrad_bf16 M=1000,N=33 all"; do
  set -- $c
  if [[ $1 == colsum ]]; then k=colsum; s=$2; else k=$2; s=$3; fi
  timeout 240 compute-sanitizer --tool memcheck $K run $W/gb/$1 $k --shape $s --variant all --reps 1 > $W/mc.txt 2>&1
  echo "memcheck $1 $k $s: rc=$? $(grep -E 'ERROR SUMMARY' $W/mc.txt | sort | uniq -c | tr '\n' ' ')"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
