#!/usr/bin/env bash
# Session 27, device call 4: an experiment build (not kept) whose default tiles keep 3 stages
# (144 KiB) to hold a whole 128 x 256 tile's output for the producer's spare warps to store
# (kStoreRowBytes 512, so the MMA warps never wait for a chunk within a tile), against main
# (kiln_old). Two checked runs first, then the A/B of call 3 on a subset of its shapes.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
KO=build/tools/kiln_old
for b in new old; do
  k=$K; [ $b = old ] && k=$KO
  $k compile bench/contraction.kiln -o $W/bc_$b --arch sm_90 -j 8 > /dev/null &
  $k compile examples/matmul.kiln -o $W/mm_$b --arch sm_90 -j 8 > /dev/null &
done; wait
$K run $W/mm_new matmul --shape M=1024,N=2048,K=256 --variant default 2>&1 | tail -2
$K run $W/mm_new linear_relu --shape M=2048,N=4096,K=128 --variant default 2>&1 | tail -2
cases=("bc gemm M=8192,N=4096,K=512" "bc gemm M=8192,N=4096,K=1024" "bc gemm M=8192,N=4096,K=4096"
  "bc gemm M=4096,N=4096,K=4096" "bc gemm M=8192,N=8192,K=8192" "bc gemm M=3000,N=5000,K=2048"
  "bc bmm B=16,M=2048,N=2048,K=512" "bc rmsnorm_linear M=8192,N=4096,K=4096"
  "mm linear_relu M=8192,N=4096,K=4096" "mm scores B=32,M=1024,N=1024,D=128")
for round in 1 2; do
  for c in "${cases[@]}"; do
    set -- $c
    for b in new old; do
      k=$K; [ $b = old ] && k=$KO
      t=$($k run $W/${1}_$b $2 --shape $3 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-2)}')
      echo "round $round $2 $3 $b $t"
    done
  done
done | tee $W/ab.txt
mkdir -p $OUT/call4 && cp $W/*.txt $OUT/call4/
