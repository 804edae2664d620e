#!/usr/bin/env bash
# Session 50, device call 4 (data for the next change, none made from it): every variant of the
# committed build's kernels at row reductions of few (256-1024) rows of 49 to 10000 elements,
# where the rule's tiers give a row 64-128 threads and the GPU a fraction of a wave: the
# default's time, then the five fastest variants with their configs.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call4.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
while read -r b k s; do
  timeout 90 $K run $W/exp/$b $k --shape $s --variant all --reps 30 --no-check > $W/t.log 2>&1
  def=$(grep -E '^ *v[0-9]+\*' $W/t.log | awk '{print $1, $(NF-2)}')
  best=$(grep -E '^ *v[0-9]+' $W/t.log | awk '{m=$(NF-2); $NF=""; $(NF-1)=""; $(NF-2)=""; $(NF-3)=""; $(NF-4)=""; print m, $0}' | sort -g | head -5 | tr '\n' ';')
  echo "== $k $s | default $def | best $best"
done <<'CASES' | tee $W/sweep.txt
N_rows channel_sums N=64,C=512,H=7,W=7
N_rows channel_sums N=16,C=1024,H=7,W=7
N_rows channel_sums N=32,C=256,H=14,W=14
N_rows channel_sums N=128,C=256,H=7,W=7
N_rows channel_var_bf16 N=64,C=512,H=7,W=7
N_rows channel_var_bf16 N=32,C=256,H=14,W=14
N_rows channel_mean_bf16 N=32,C=768,L=49
N_rows channel_mean_bf16 N=8,C=512,L=197
N_rows channel_mean_bf16 N=64,C=256,L=100
N_mb softmax_bf16 M=512,N=3000
N_mb softmax_bf16 M=256,N=8000
N_mb softmax_bf16 M=1024,N=2048
N_mb rowsum_f32 M=512,N=4096
N_mb rowsum_f32 M=256,N=10000
N_mb layernorm_bf16 M=512,N=4096
N_mb layernorm_bf16 M=256,N=8192
CASES
echo "sweep $(el)"; pack
