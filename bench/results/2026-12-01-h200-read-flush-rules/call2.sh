#!/usr/bin/env bash
# Session 44, device call 2: the build with the new tiled and outer rules. The rule's pick
# checked against the interpreter at awkward shapes (random, then NaN and infinities), then
# timed against what the rule ran before, interleaved, two rounds; torch.compile beside it.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W $(cd $W && ls *.txt *.json 2>/dev/null) 2>/dev/null; }
tar xJf .carry/rb.tar.xz -C $W
B=$W/rb
{
for c in "colsum_f32 M=3001,N=20001" "colsum_f32 M=1001,N=2001" "colsum_bf16 M=3001,N=20001" \
         "colsum_bf16 M=100003,N=333" "mid_mean B=3,M=1001,N=7777" "ln_wgrad M=2001,N=20001" \
         "transpose_bf16 M=1000,N=3000" "transpose_bf16 M=8192,N=8191" "transpose_bf16 M=2048,N=2048" \
         "heads_keys B=2,S=1023,H=16,D=64" "heads_keys B=8,S=2047,H=32,D=127" "rotate3 A=1000,B=999,C=33"; do
  set -- $c
  for inputs in random specials; do
    timeout 120 $K run $B $1 --shape $2 --variant default --reps 3 --inputs $inputs 2>&1 | grep -E "^ *(v[0-9]|default)|error|FAIL" | head -3 | sed "s|^|$1 $2 $inputs: |"
  done
done
} > $W/checks.txt 2>&1
cat $W/checks.txt; echo "checks $(el)"; pack
# new pick (default) against the old one (explicit id), interleaved, two rounds
run1() { timeout 60 $K run $B $1 --shape $2 --variant $3 --reps 50 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-3)}' | head -1; }
{
for round in 1 2; do
  while read -r k s old; do
    n=$(run1 $k $s default); o=$(run1 $k $s $old)
    echo "round $round | $k $s | new $n | old $o"
  done <<'CASES'
transpose_bf16 M=8192,N=8191 5
transpose_bf16 M=16384,N=2047 5
transpose_bf16 M=4096,N=4095 5
transpose_bf16 M=6000,N=3001 5
heads_keys B=8,S=2047,H=32,D=127 5
heads_keys B=8,S=2047,H=32,D=128 5
heads_keys B=4,S=1001,H=32,D=128 5
heads_keys B=2,S=1023,H=16,D=64 5
transpose_bf16 M=1000,N=3000 0
transpose_bf16 M=3000,N=1000 0
transpose_bf16 M=2048,N=2048 0
transpose_bf16 M=1536,N=1536 0
transpose_bf16 M=2048,N=2176 0
transpose_bf16 M=1000,N=1999 5
colsum_f32 M=6000,N=20001 17
colsum_f32 M=4095,N=32769 17
colsum_f32 M=1000,N=50001 17
colsum_f32 M=20000,N=3001 22
colsum_bf16 M=6000,N=20001 22
colsum_bf16 M=3000,N=40001 17
colsum_bf16 M=20000,N=4001 22
mid_mean B=63,M=1024,N=513 17
ln_wgrad M=4001,N=20001 22
CASES
done
} | tee $W/ab.txt
echo "ab $(el)"; pack
timeout 300 python3 bench/results/2026-12-01-h200-read-flush-rules/torch_odd.py > $W/torch.txt 2>&1; tail -20 $W/torch.txt
echo "torch $(el)"; pack
timeout 120 compute-sanitizer --tool memcheck $K run $B colsum_bf16 --shape M=1001,N=2001 --variant default --reps 2 > $W/memcheck.txt 2>&1
echo "memcheck exit $?"; tail -3 $W/memcheck.txt; pack
