#!/usr/bin/env bash
# Session 23, device call 7 (for the next session, nothing changed by it): few long rows, where
# the rule runs the split (call 6: 1.42-1.51x slower than one block of 1024 threads a row for
# 1 to 33 bf16 rows of 65536). Every variant of four steps of examples/reduction_suite.kiln
# (the submitted kiln, 272af69, carried as .carry/rs.tar.xz) at 1, 8 and 33 rows of 65536 to
# 1048576 elements, 50 launches each, the rule's pick starred.
set -uo pipefail
W=/tmp/w7
source bench/device_setup.sh
tar xJf .carry/rs.tar.xz -C $W
t0=$(date +%s)
for k in rowsum_bf16 logsumexp_bf16 softmax_f32 layernorm_f32; do
  for m in 1 8 33; do
    for n in 65536 131072 262144 1048576; do
      echo "== $k M=$m,N=$n"
      $K run $W/b $k --shape M=$m,N=$n --variant all --reps 50 --no-check
    done
  done
  echo "$k $(( $(date +%s) - t0 )) s" >&2
  tar czf $OUT/call7.tgz -C $W --exclude=b .
done > $W/long.txt 2>&1
awk '/^== /{c=$2" "$3} /^  v[0-9]/{t=$(NF-2)+0; if($1 ~ /\*/){pv[c]=$1; pt[c]=t} if(!(c in b) || t<bt[c]){b[c]=$1; bt[c]=t}} END{for(c in pt) printf "%s rule %s %.2f best %s %.2f rule/best %.2f\n", c, pv[c], pt[c], b[c], bt[c], pt[c]/bt[c]}' $W/long.txt | sort -V | tee $W/long_summary.txt
echo "total $(( $(date +%s) - t0 )) s"
tar czf $OUT/call7.tgz -C $W --exclude=b .
