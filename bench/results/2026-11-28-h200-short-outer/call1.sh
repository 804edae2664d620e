#!/usr/bin/env bash
# Session 23, device call 1: outer reductions of short columns (the reduced extent below the
# split's threshold, and around it). Every variant of cs.kiln (beside this script, compiled for
# sm_90 by main's kiln at 296ab7f, carried as .carry/cs.tar.xz) at M from 1 to 4096 rows over
# few to many columns, 100 launches each; the rule's pick is starred.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w1; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/cs.tar.xz -C $W
K=build/tools/kiln
pack() { tar czf $OUT/call1.tgz -C $W --exclude=main . ; }
t0=$(date +%s)
for shape in colsum_bf16:N=16 colsum_bf16:N=64 colsum_bf16:N=192 colsum_bf16:N=512 \
             colsum_bf16:N=2048 colsum_bf16:N=100 colsum_f32:N=32 colsum_f32:N=96 \
             colsum_f32:N=1024 ln_wgrad:N=64 ln_wgrad:N=1024; do
  k=${shape%%:*} n=${shape#*:}
  for m in 1 8 64 256 512 1000 1536 2047 4096; do
    echo "== $k M=$m,$n"
    $K run $W/main $k --shape M=$m,$n --variant all --reps 100 --no-check
  done
  echo "$shape $(( $(date +%s) - t0 )) s"
  pack
done > $W/short.txt 2>&1
echo "short $(( $(date +%s) - t0 )) s"; pack
# The rule's pick and the fastest per case, for the log's tail.
awk '/^== /{c=$2" "$3} /^  v[0-9]/{t=$(NF-2)+0; if($1 ~ /\*/){p[c]=$1" "t} if(!(c in b) || t<bt[c]){b[c]=$1; bt[c]=t}} END{for(c in p) print c, "rule", p[c], "best", b[c], bt[c]}' $W/short.txt | sort -V
