#!/usr/bin/env bash
# Session 19, device call 6: an experiment build whose contraction space has TMA-fed 128 x 64
# tiles (v14, 8 stages) beside the others; the rule unchanged. (a) v14 checked against the
# interpreter at awkward shapes and under memcheck; (b) every variant of gemm (and bmm) at
# problems of few tiles, 200 launches each.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w6; mkdir -p $W/v
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call6.tgz -C $W --exclude='bc' --exclude='mm' . ; }
K=build/tools/kiln
$K compile bench/contraction.kiln -o $W/bc --arch sm_90 > /dev/null &
$K compile examples/matmul.kiln -o $W/mm --arch sm_90 > /dev/null &
wait
# (a)
for c in "matmul M=1000,N=17,K=4095" "matmul M=1100,N=4100,K=200" "matmul_nt M=333,N=257,K=4096" "matmul_tn M=4095,N=64,K=1000" \
    "scores B=3,M=17,N=1000,D=64" "linear_gelu M=1100,N=4100,K=200" "linear_relu M=300,N=1028,K=33" "matmul M=1,N=1,K=1"; do
  set -- $c
  $K run $W/mm $1 --shape $2 --variant 14 --reps 1 > $W/check_$1_$2.txt 2>&1; echo "check v14 $c: exit $? $(grep -E '^ *v14' $W/check_$1_$2.txt | awk '{print $(NF-5), $(NF-4)}')"
done | tee $W/checks.txt
for c in "matmul M=1100,N=4100,K=200" "matmul_nt M=333,N=257,K=4096"; do
  set -- $c
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/mm $1 --shape $2 --variant 14 --reps 1 > $W/san_$1_$2.txt 2>&1
  echo "memcheck v14 $c: exit $?"
done | tee -a $W/checks.txt; echo "checks $(el)"; pack
# (b)
for ks in "gemm M=512,N=512,K=512" "gemm M=1024,N=1024,K=1024" "gemm M=1024,N=1024,K=4096" "gemm M=2048,N=1024,K=1024" \
    "gemm M=128,N=4096,K=4096" "gemm M=256,N=4096,K=4096" "gemm M=4096,N=512,K=4096" "gemm M=1536,N=1024,K=2048" \
    "gemm M=2048,N=2048,K=1024" "bmm B=4,M=512,N=512,K=1024"; do
  set -- $ks
  timeout 100 $K run $W/bc $1 --shape $2 --variant all --reps 200 --no-check > $W/v/$1_$2.txt 2>&1
  echo "== $ks"; grep -E '^ *v[0-9]+' $W/v/$1_$2.txt | awk '{print $1, $(NF-2)}' | tr '\n' ' '; echo
done | tee $W/variants.txt; echo "variants $(el)"; pack
