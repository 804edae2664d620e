#!/usr/bin/env bash
# Session 23, device call 6 (for the next session, nothing changed by it): row reductions of few
# rows, the other side of "small problems". Every variant of four steps of
# examples/reduction_suite.kiln (compiled for sm_90 by the submitted kiln, 272af69, carried as
# .carry/rs.tar.xz) at 1 to 132 rows of 1000 to 65536 elements, 100 launches each, the rule's
# pick starred.
set -uo pipefail
W=/tmp/w6
source bench/device_setup.sh
tar xJf .carry/rs.tar.xz -C $W
t0=$(date +%s)
for k in rowsum_bf16 softmax_f32 layernorm_f32 logsumexp_bf16; do
  for m in 1 8 33 132; do
    for n in 1000 4096 16384 65536; do
      echo "== $k M=$m,N=$n"
      $K run $W/b $k --shape M=$m,N=$n --variant all --reps 100 --no-check
    done
  done
  echo "$k $(( $(date +%s) - t0 )) s" >&2
  tar czf $OUT/call6.tgz -C $W --exclude=b .
done > $W/rows.txt 2>&1
awk '/^== /{c=$2" "$3} /^  v[0-9]/{t=$(NF-2)+0; if($1 ~ /\*/){pv[c]=$1; pt[c]=t} if(!(c in b) || t<bt[c]){b[c]=$1; bt[c]=t}} END{for(c in pt) printf "%s rule %s %.2f best %s %.2f rule/best %.2f\n", c, pv[c], pt[c], b[c], bt[c], pt[c]/bt[c]}' $W/rows.txt | sort -V | tee $W/rows_summary.txt
echo "total $(( $(date +%s) - t0 )) s"
tar czf $OUT/call6.tgz -C $W --exclude=b .
