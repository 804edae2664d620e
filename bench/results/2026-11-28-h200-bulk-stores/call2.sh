#!/usr/bin/env bash
# Session 27, device call 2: the epilogue through the bulk-copy engine (kiln: an experiment
# build, cp.async.bulk of each 256-byte row from a shared-memory buffer; not kept) against main before it
# (kiln_old, the experiment build of call 1 without KILN_HACK_EPI): (a) the default variant of
# each GEMM-like kernel at 18 shapes, both builds interleaved, two rounds of 100 launches;
# (b) every variant of the contraction examples end to end against the interpreter; (c)
# memcheck, racecheck and synccheck on the new default at shapes with interior and edge tiles.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
KO=build/tools/kiln_old
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
for b in new old; do
  k=$K; [ $b = old ] && k=$KO
  $k compile bench/contraction.kiln -o $W/bc_$b --arch sm_90 -j 8 > /dev/null &
  $k compile examples/matmul.kiln -o $W/mm_$b --arch sm_90 -j 8 > /dev/null &
done
$K compile examples/scalars.kiln -o $W/pre/scalars > /dev/null &
wait; cp -r $W/mm_new $W/pre/matmul; echo "compiled $(el)"
# (a)
cases=("bc gemm M=8192,N=4096,K=512" "bc gemm M=8192,N=4096,K=1024" "bc gemm M=8192,N=4096,K=4096"
  "bc gemm M=4096,N=4096,K=4096" "bc gemm M=8192,N=8192,K=8192" "bc gemm M=6144,N=4096,K=4096"
  "bc gemm M=4095,N=4096,K=4096" "bc gemm M=3000,N=5000,K=2048" "bc gemm M=2048,N=11008,K=4096"
  "bc gemm M=1024,N=1024,K=1024" "bc gemm M=128,N=4096,K=4096" "bc bmm B=16,M=2048,N=2048,K=512"
  "bc bmm B=4,M=2048,N=2048,K=512" "bc bmm B=64,M=512,N=512,K=128" "bc rmsnorm_linear M=8192,N=4096,K=4096"
  "mm matmul_nt M=4096,N=4096,K=4096" "mm linear_relu M=8192,N=4096,K=4096" "mm scores B=32,M=1024,N=1024,D=128")
for round in 1 2; do
  for c in "${cases[@]}"; do
    set -- $c
    for b in new old; do
      k=$K; [ $b = old ] && k=$KO
      t=$($k run $W/${1}_$b $2 --shape $3 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-2)}')
      echo "round $round $2 $3 $b $t"
    done
  done
done | tee $W/ab.txt; echo "ab $(el)"
# (b)
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  mkdir -p $W/e2e/$i/bundles; cp -r $W/pre/* $W/e2e/$i/bundles/
  KILN_GPU_EXAMPLES="matmul scalars" KILN_GPU_SHARD=$i/4 timeout 240 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-3].txt > $W/e2e.txt; rm -f $W/e2e_[0-3].txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"
unset KILN_REQUIRE_GPU
# (c)
for c in "matmul M=300,N=520,K=200" "linear_relu M=257,N=1000,K=4095" "matmul_nt M=256,N=4096,K=256" "scores B=4,M=512,N=512,D=64"; do
  set -- $c
  for tool in memcheck racecheck synccheck; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/pre/matmul $1 --shape $2 --variant default --reps 1 > $W/san_${tool}_$1_$2.txt 2>&1
    echo "$tool $c: exit $? $(grep -c 'ok\b' $W/san_${tool}_$1_$2.txt) ok-lines"
  done
done | tee $W/sanitizers.txt; echo "sanitizers $(el)"
mkdir -p $OUT/call2 && cp $W/*.txt $OUT/call2/
