#!/usr/bin/env bash
# Session 23, device call 3: the short-columns rule against main's, on shapes calls 1 and 2 did
# not measure. cs.kiln (beside this script) compiled for sm_90 by main's kiln at 296ab7f (main/:
# no variant marked short, so the rule runs what it ran before) and by the change's (new/); the
# change's kiln runs both, the rule's default pick, 200 launches, two rounds interleaved.
# Then compute-sanitizer on the new picks (memcheck on 8, racecheck and synccheck on 3), each
# checked against the interpreter.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w3; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/cs.tar.xz -C $W
K=build/tools/kiln
pack() { tar czf $OUT/call3.tgz -C $W --exclude=main --exclude=new . ; }
cases=()
for n in 8 40 136 1000 3000 6000 12000; do
  for m in 100 130 300 777 1023 1024 3000 10000 30000 40000; do cases+=(colsum_bf16:M=$m,N=$n); done
done
for n in 24 72 2000 5000; do for m in 130 300 777 1023 3000 20000; do cases+=(colsum_f32:M=$m,N=$n); done; done
for n in 48 3000; do for m in 130 300 777 1023 3000 20000; do cases+=(ln_wgrad:M=$m,N=$n); done; done
cases+=(mid_mean:B=3,M=150,N=100 mid_mean:B=3,M=500,N=100 mid_mean:B=3,M=900,N=100 mid_mean:B=16,M=600,N=256)
cases+=(token_max:B=3,S=60,D=64 token_max:B=3,S=333,D=64 token_max:B=2,S=5000,D=200)
t0=$(date +%s)
for round in 1 2; do
  for c in "${cases[@]}"; do
    k=${c%%:*} s=${c#*:}
    for b in main new; do
      echo "$k $s $b $round $($K run $W/$b $k --shape $s --variant default --reps 200 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-2)}')"
    done
  done
  echo "round $round $(( $(date +%s) - t0 )) s" >&2
done > $W/rule.txt
pack
# Best of the two rounds per build; new over main.
awk '{key=$1" "$2; t=$6+0; if(!((key,$3) in b) || t<b[key,$3]){b[key,$3]=t; v[key,$3]=$5} keys[key]=1} END{for(k in keys) printf "%s main %s %.2f new %s %.2f ratio %.3f\n", k, v[k,"main"], b[k,"main"], v[k,"new"], b[k,"new"], b[k,"new"]/b[k,"main"]}' $W/rule.txt | sort -V > $W/rule_summary.txt
cat $W/rule_summary.txt
echo "timing $(( $(date +%s) - t0 )) s"
san() { # tool kernel shape
  local f=$W/san_$1_$2_${3//[=,]/_}.txt
  timeout 120 compute-sanitizer --tool $1 --error-exitcode 9 $K run $W/new $2 --shape $3 --variant default --reps 1 > $f 2>&1
  echo "$1 $2 $3 exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | head -1) $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-4)}')"
}
{
for c in colsum_bf16:M=1023,N=100 colsum_bf16:M=777,N=8200 colsum_f32:M=130,N=4225 colsum_bf16:M=30001,N=72 \
         ln_wgrad:M=1000,N=64 ln_wgrad:M=20000,N=136 mid_mean:B=3,M=500,N=100 token_max:B=3,S=333,D=64; do
  san memcheck ${c%%:*} ${c#*:}
done
for tool in racecheck synccheck; do
  for c in colsum_bf16:M=1023,N=100 colsum_bf16:M=777,N=8200 colsum_bf16:M=30001,N=72; do san $tool ${c%%:*} ${c#*:}; done
done
} > $W/sanitizer.txt 2>&1
cat $W/sanitizer.txt
echo "total $(( $(date +%s) - t0 )) s"; pack
