#!/usr/bin/env bash
# Session 30, device call 1: programmatic dependent launches (steps after a launch's first
# start while the kernel before them ends; griddepcontrol in every sm_90 kernel).
# (a) A/B, default variants, 100 launches each, two rounds interleaved: this build with
#     dependent launches (new), the same binary with KILN_DEPENDENT_LAUNCH=0 (off), and main
#     before it (old: no griddepcontrol at all), on multi-launch kernels and single-launch
#     controls; (b) the runtime's GPU tests (graph capture of a split kernel) and the C API's;
#     (c) every variant of the examples with several launches end to end; (d) memcheck,
#     racecheck and synccheck on multi-launch defaults.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2"; }
unxz .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
tar xf .carry/lib.tar -C build; tar xf .carry/tests.tar -C build
KO=build/tools/kiln_old
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call1 && cp $W/*.txt $OUT/call1/ 2>/dev/null; }
for b in new old; do
  k=$K; [ $b = old ] && k=$KO
  $k compile bench/contraction.kiln -o $W/bc_$b --arch sm_90 --default-only -j 8 > /dev/null &
  $k compile bench/memory_bound.kiln -o $W/mb_$b --arch sm_90 --default-only -j 8 > /dev/null &
  $k compile examples/global_max_norm.kiln -o $W/gm_$b --arch sm_90 --default-only > /dev/null &
done
wait; echo "compiled $(el)"
cases=("bc rmsnorm_linear M=8192,N=4096,K=4096" "bc rmsnorm_linear M=2048,N=4096,K=4096"
  "bc rmsnorm_linear M=1024,N=1024,K=1024" "bc gemm M=8192,N=4096,K=4096"
  "mb total_f32 M=1,N=67108864" "mb total_f32 M=1,N=1048576" "mb colsum_bf16 M=4194304,N=16"
  "mb colsum_bf16 M=1048576,N=64" "mb softmax_f32 M=4,N=1048576" "mb layernorm_f32 M=4,N=1048576"
  "gm global_max_norm M=8192,N=8192" "gm global_max_norm M=1000,N=1000"
  "mb rmsnorm_bf16 M=2,N=1000000" "mb logsumexp_bf16 M=8,N=262144"
  "mb add_f32 M=8192,N=8192" "mb rowsum_f32 M=32768,N=4096" "mb softmax_bf16 M=32768,N=1024"
  "mb transpose_f32 M=8192,N=8192")
ab() {
  for c in "${cases[@]}"; do
    set -- $c
    for b in new off old; do
      k=$K dir=$W/${1}_new; [ $b = old ] && k=$KO dir=$W/${1}_old
      t=$( ([ $b = off ] && export KILN_DEPENDENT_LAUNCH=0; $k run $dir $2 --shape $3 --variant default --reps 100 --no-check 2>&1) | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')
      echo "round $2 $3 $b $t"
    done
  done
}
ab | sed "s/^round/round 1/" | tee $W/ab.txt; echo "ab1 $(el)"; pack
# (b)
export KILN_REQUIRE_GPU=1
for ex in add rowsum global_max_norm; do $K compile examples/$ex.kiln -o $W/$ex.bundle > /dev/null; done
build/tests/kiln_gpu_runtime_tests $W/add.bundle $W/rowsum.bundle $W/global_max_norm.bundle > $W/runtime_tests.txt 2>&1
echo "runtime tests: exit $? $(grep -E 'passed|failed' $W/runtime_tests.txt | tail -1)" | tee -a $W/gpu.txt
build/tests/kiln_gpu_c_api_tests $W/add.bundle $W/rowsum.bundle > $W/c_api_tests.txt 2>&1
echo "C API tests: exit $? $(grep -E 'passed|failed' $W/c_api_tests.txt | tail -1)" | tee -a $W/gpu.txt
pack
# (c)
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="global_max_norm rowsum_colsum rowsum colsum softmax layernorm rmsnorm add_rmsnorm scan spatial_mean mean_var logsumexp cross_entropy weighted_colsum" \
    KILN_GPU_SHARD=$i/8 timeout 230 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.log 2>&1 &
done; wait
cat $W/e2e_[0-7].log > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
unset KILN_REQUIRE_GPU
# (d)
for c in "gm global_max_norm M=1000003,N=3" "mb total_f32 M=1,N=3000001" "bc rmsnorm_linear M=300,N=520,K=200" "mb layernorm_f32 M=3,N=200001"; do
  set -- $c
  for tool in memcheck racecheck synccheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/${1}_new $2 --shape $3 --variant default --reps 1 > $W/san_${tool}_$2.log 2>&1
    echo "$tool $c: exit $? $(grep -c ' ok ' $W/san_${tool}_$2.log) ok-lines $(grep -m1 'ERROR SUMMARY' $W/san_${tool}_$2.log)"
  done
done | tee $W/sanitizers.txt; echo "sanitizers $(el)"; pack
ab | sed "s/^round/round 2/" | tee -a $W/ab.txt; echo "ab2 $(el)"; pack
