#!/usr/bin/env bash
# Session 35, device call 6: split-K's fold in finer parts (32 columns of a warp's rows, up to
# 32 blocks of a tile reading records instead of 8) with 8 records' loads issued at once (call
# 3's build: a warp's whole rows, 4 records). Correctness again, then the split variant and the
# rule's pick timed at call 3's shapes.
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call6 && cp $W/*.txt $OUT/call6/ 2>/dev/null; }
$K compile bench/contraction.kiln -o $W/bc --arch sm_90 -j 8 > /dev/null &
$K compile examples/matmul.kiln -o $W/mm80 --arch sm_80 -j 8 > /dev/null &
examples="matmul scalars"
mkdir -p $W/pre; for ex in $examples; do $K compile examples/$ex.kiln -o $W/pre/$ex --arch sm_90 -j 16 > /dev/null || echo "FAIL compile $ex"; done
wait; echo "compiled $(el)"
export KILN_REQUIRE_GPU=1
for i in $(seq 0 15); do
  mkdir -p $W/e2e/$i/bundles; for ex in $examples; do ln -s $W/pre/$ex $W/e2e/$i/bundles/$ex; done
  KILN_GPU_EXAMPLES="$examples" KILN_GPU_SHARD=$i/16 timeout 300 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.log 2>&1 &
done
for c in "matmul M=17,N=24,K=8191" "matmul M=300,N=136,K=3000" "matmul_nt M=17,N=24,K=8192" \
         "matmul_tn M=24,N=40,K=5000" "scores B=3,M=100,N=40,D=2048" "linear_gelu M=200,N=64,K=5000"; do
  set -- $c
  timeout 300 $K run $W/mm80 $1 --shape $2 --variant all --reps 2 > $W/sm80_$1.log 2>&1
  echo "sm_80 images $c: exit $? $(grep -c ' ok' $W/sm80_$1.log) ok-lines"
done > $W/sm80.txt &
wait
cat $W/e2e_[0-9]*.log > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5; n+=1} END {printf "e2e: %d passed, %d failed, %d skipped (%d of 16 shards finished)\n", p, f, s, n}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -20; cat $W/sm80.txt; echo "e2e $(el)"; pack
unset KILN_REQUIRE_GPU
for c in "matmul M=17,N=24,K=8191" "matmul M=300,N=136,K=3000" "scores B=3,M=100,N=40,D=2048"; do
  set -- $c
  for tool in memcheck racecheck synccheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/pre/matmul $1 --shape $2 --variant default --reps 2 > $W/san_${tool}_$1.log 2>&1
    echo "$tool $c: exit $? $(grep -c ' ok' $W/san_${tool}_$1.log) ok-lines $(grep -m1 'ERROR SUMMARY' $W/san_${tool}_$1.log)"
  done
done | tee $W/sanitizers.txt; echo "sanitizers $(el)"; pack
shapes="1024,1024,2048 1024,1024,4096 1024,1024,8192 1024,1024,16384 512,512,2048 512,512,4096 512,512,8192 768,768,8192 256,4096,4096 128,4096,16384 256,256,4096 256,256,16384 256,256,65536 128,128,2048 128,128,4096 128,128,8192 256,1024,8192 4096,256,16384 2048,1024,4096"
for s in $shapes; do IFS=, read m n k <<< "$s"; for v in default 15; do
  echo "gemm $m x $n x $k v$v $($K run $W/bc gemm --shape M=$m,N=$n,K=$k --variant $v --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')"
done; done | tee $W/variants.txt; echo "variants $(el)"; pack
for s in "8,256,256,8192" "4,512,512,4096" "2,128,4096,8192"; do IFS=, read b m n k <<< "$s"; for v in default 15; do
  echo "bmm $b x $m x $n x $k v$v $($K run $W/bc bmm --shape B=$b,M=$m,N=$n,K=$k --variant $v --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')"
done; done | tee -a $W/variants.txt; echo "bmm $(el)"; pack
