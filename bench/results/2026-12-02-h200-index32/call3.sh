#!/usr/bin/env bash
# Session 52, device call 3: the occupancy hint of one block more than ptxas's choice
# (compiler/compile.cpp hinted_image) on the 32-bit entries. H: N's build without that try
# (only the 3/4-SM target), outer.kiln compiled by it (.carry/exp.tar.xz: bH beside bN, bO).
# Every variant of H, N and O at 6 shapes where call 1's pick (split v29 on scalar rows) lost,
# then the defaults of H and N at call 1's 30 cases, interleaved, one round.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call3.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
for c in "colsum_bf16 M=8191,N=8193" "sum_bh B=2,C=128,H=1000,W=33" "dbias_bf16 B=8,H=12,Q=512,K=513" \
         "mid_mean B=6,M=8192,N=705" "mid_mean_bf16 B=4,M=8192,N=1057" "ln_wgrad M=32768,N=4096"; do
  set -- $c
  for b in bH bN bO; do
    echo "== $b $1 $2 $(timeout 120 $K run $W/exp/$b $1 --shape $2 --variant all --reps 20 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-2)}' | sort -k2 -g | head -6 | tr '\n' ' ')"
  done
done | tee $W/sweep.txt
echo "sweep $(el)"; pack
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
for c in $CASES; do
  k=${c%%:*}; s=${c#*:}
  echo "$k $s | H $(run1 bH $k $s) | N $(run1 bN $k $s)"
done | tee $W/ab.txt
echo "ab $(el)"; pack
