#!/usr/bin/env bash
# Session 51, device call 1 (data for the rule, main's build at 1657c1a): at 264-2112 rows
# (2-16 an SM) of 1500, 3000 and 6000 elements, the rule's tier (64, 128 or 256 threads a row
# with 32 elements a thread: v4, v5, v6) against its spread twin (twice the threads, 16 elements
# a thread, the same capacity: v9, v10, v11), interleaved twice, 50 launches each, no check.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
t() { timeout 60 $K run $W/exp/$1 $2 --shape $3 --variant $4 --reps 50 --no-check 2>&1 |
        grep -E '^ *v[0-9]+' | head -1 | awk '{print $1, $(NF-2)}'; }
shape() {  # kernel rows length -> --shape value
  case $1 in
    channel_mean_bf16) echo "N=$(( $3 / 375 )),C=$2,L=375" ;;
    *) echo "M=$2,N=$3" ;;
  esac
}
for k in rowsum_f32 softmax_bf16 softmax_f32 layernorm_bf16 logsumexp_bf16 rmsnorm_bf16 channel_mean_bf16; do
  b=N_mb; [ $k = channel_mean_bf16 ] && b=N_rows
  for n in 1500 3000 6000; do
    for m in 264 528 792 1056 1584 2112; do
      s=$(shape $k $m $n)
      read -r d td1 <<<"$(t $b $k $s default)"
      id=${d#v}; id=${id%\*}
      sp=$(( id + 5 ))
      read -r _ ts1 <<<"$(t $b $k $s $sp)"
      read -r _ td2 <<<"$(t $b $k $s default)"
      read -r _ ts2 <<<"$(t $b $k $s $sp)"
      echo "$k $s rows=$m R=$n tier=$d $td1 $td2 spread=v$sp $ts1 $ts2"
    done
  done
done | tee $W/sweep.txt
echo "sweep $(el)"; pack
