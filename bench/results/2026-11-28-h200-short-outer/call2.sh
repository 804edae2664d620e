#!/usr/bin/env bash
# Session 23, device call 2: where the short outer reductions' variants stop winning. Every
# variant of cs.kiln (beside this script, now with mid_mean and token_max; compiled for sm_90 by
# main's kiln at 296ab7f, carried as .carry/cs.tar.xz), 200 launches each, the rule's pick
# starred:
#  A. the split of 32-row chunks (v25) against the narrow split (v23) from 6144 to 65536 rows;
#  B. short columns of many columns (4096 to 65536), where one block per column tile fills the GPU;
#  C. 96 to 192 rows, between the tiny sizes and 256;
#  D. a middle-axis mean and a max over two leading indices, short.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w2; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/cs.tar.xz -C $W
K=build/tools/kiln
pack() { tar czf $OUT/call2.tgz -C $W --exclude=main . ; }
t0=$(date +%s)
case_all() { echo "== $1 $2"; $K run $W/main $1 --shape $2 --variant all --reps 200 --no-check; }
{
for kn in colsum_bf16:N=16 colsum_bf16:N=64 colsum_bf16:N=192 colsum_f32:N=32 colsum_f32:N=96 ln_wgrad:N=64; do
  for m in 6144 8192 12288 16384 24576 32768 65536; do case_all ${kn%%:*} M=$m,${kn#*:}; done
done
echo "A $(( $(date +%s) - t0 )) s"; pack
for kn in colsum_bf16:N=4096 colsum_bf16:N=8192 colsum_bf16:N=16384 colsum_bf16:N=65536 \
          colsum_f32:N=4096 colsum_f32:N=16384 ln_wgrad:N=8192; do
  for m in 1 64 128 256 512 1000 1536 2047; do case_all ${kn%%:*} M=$m,${kn#*:}; done
done
echo "B $(( $(date +%s) - t0 )) s"; pack
for kn in colsum_bf16:N=64 colsum_bf16:N=2048 colsum_f32:N=32 ln_wgrad:N=64; do
  for m in 96 128 160 192; do case_all ${kn%%:*} M=$m,${kn#*:}; done
done
for s in B=4,M=64,N=64 B=4,M=256,N=64 B=4,M=700,N=64 B=4,M=2000,N=64 B=64,M=256,N=512 B=2,M=300,N=1000; do
  case_all mid_mean $s
done
for s in B=2,S=50,D=128 B=2,S=500,D=128 B=4,S=700,D=4096 B=2,S=3000,D=128; do case_all token_max $s; done
echo "CD $(( $(date +%s) - t0 )) s"; pack
} > $W/short2.txt 2>&1
awk '/^== /{c=$2" "$3} /^  v[0-9]/{t=$(NF-2)+0; if($1 ~ /\*/){p[c]=$1" "t} if(!(c in b) || t<bt[c]){b[c]=$1; bt[c]=t}} END{for(c in p) print c, "rule", p[c], "best", b[c], bt[c]}' $W/short2.txt | sort -V
