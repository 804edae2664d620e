#!/usr/bin/env bash
# Session 34, device call 1, correctness: a split row reduction whose last phase only stores
# ends through tickets (split.ticket, one launch fewer). Every variant of the examples with
# split reductions or buffers end to end against the interpreter (scratch poisoned); the
# runtime's GPU tests (tickets across kernels sharing a stream's scratch, poisoned and not, and
# from the pool past the kept ones), the C API's and the hostile-bundle tests (default
# architectures); compute-sanitizer on ticket splits launched 3 times and on the ticket test.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2"; }
unxz .carry/tests.tar.xz /tmp/tests.tar && tar xf /tmp/tests.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call1 && cp $W/*.txt $OUT/call1/ 2>/dev/null; }
$K compile bench/memory_bound.kiln -o $W/mb --arch sm_90 -j 4 > /dev/null &
examples="global_max_norm rowsum_colsum rowsum softmax layernorm rmsnorm add_rmsnorm spatial_mean mean_var logsumexp cross_entropy reduction_suite"
mkdir -p $W/pre; for ex in $examples; do $K compile examples/$ex.kiln -o $W/pre/$ex --arch sm_90 -j 16 > /dev/null || echo "FAIL compile $ex"; done
$K compile examples/add.kiln -o $W/add > /dev/null; $K compile examples/swiglu.kiln -o $W/swiglu > /dev/null
wait; echo "compiled $(el)"
export KILN_REQUIRE_GPU=1
for i in $(seq 0 15); do
  mkdir -p $W/e2e/$i/bundles; for ex in $examples; do ln -s $W/pre/$ex $W/e2e/$i/bundles/$ex; done
  KILN_GPU_EXAMPLES="$examples" KILN_GPU_SHARD=$i/16 timeout 300 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.log 2>&1 &
done; wait
cat $W/e2e_[0-9]*.log > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5; n+=1} END {printf "e2e: %d passed, %d failed, %d skipped (%d of 16 shards finished)\n", p, f, s, n}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -20; echo "e2e $(el)"; pack
build/tests/kiln_gpu_runtime_tests $W/add $W/pre/rowsum $W/pre/global_max_norm > $W/runtime_tests.txt 2>&1
echo "runtime tests: exit $? $(grep -E 'passed|failed' $W/runtime_tests.txt | tail -1)" | tee -a $W/gpu.txt
build/tests/kiln_gpu_c_api_tests $W/add $W/pre/rowsum > $W/c_api_tests.txt 2>&1
echo "c api tests: exit $? $(grep -E 'passed|failed' $W/c_api_tests.txt | tail -1)" | tee -a $W/gpu.txt
build/tests/kiln_gpu_hostile_tests $W/add $W/swiglu > $W/hostile_tests.txt 2>&1
echo "hostile tests: exit $? $(grep -E 'passed|failed' $W/hostile_tests.txt | tail -1)" | tee -a $W/gpu.txt
unset KILN_REQUIRE_GPU
echo "tests $(el)"; pack
for c in "mb total_f32 M=1,N=3000001" "mb total_f32 M=5,N=1000003" "mb logsumexp_bf16 M=3,N=200001" "pre/global_max_norm global_max_norm M=1000003,N=3" "pre/mean_var mean_var M=2,N=2000001"; do
  set -- $c
  for tool in memcheck racecheck synccheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/$1 $2 --shape $3 --variant default --reps 3 > $W/san.log 2>&1
    echo "$tool $2 $3: exit $? $(grep -c ' ok ' $W/san.log) ok-lines $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' $W/san.log)"
  done
done | tee $W/sanitizers.txt
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests/kiln_gpu_runtime_tests $W/add $W/pre/rowsum $W/pre/global_max_norm "ticket splits*" > $W/san_ticket.log 2>&1
echo "memcheck runtime test 'ticket splits': exit $? $(grep -E 'passed|failed' $W/san_ticket.log | tail -1) $(grep -m1 'ERROR SUMMARY' $W/san_ticket.log)" | tee -a $W/sanitizers.txt
echo "sanitizers $(el)"; pack
