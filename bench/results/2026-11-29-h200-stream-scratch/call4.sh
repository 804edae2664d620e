#!/usr/bin/env bash
# Session 33, device call 4: the kept scratch after review. Each lease of a stream's kept
# scratch now records an event on the stream when given back, so that a slot whose stream may
# be gone can be taken by a new stream (least recently given back first) and freed on the
# runtime's own stream after that event, and the runtime closes without a context-wide
# synchronize. (a) What the event costs: this build (kiln) against call 2's (kiln_kept: kept
# scratch, no event) and main before the session (kiln_base: the pool at every launch), default
# variants, 100 launches, L2 flushed, two rounds; (b) the runtime's GPU tests (their threads
# create and destroy more than 8 streams: slots taken over with real events), the C API's,
# memcheck on the runtime tests, and the examples with split steps or buffers end to end.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2"; }
unxz .carry/kiln_base.xz build/tools/kiln_base; unxz .carry/kiln_kept.xz build/tools/kiln_kept
chmod +x build/tools/kiln_base build/tools/kiln_kept
unxz .carry/tests.tar.xz /tmp/tests.tar && tar xf /tmp/tests.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call4 && cp $W/*.txt $OUT/call4/ 2>/dev/null; }
tool() { case $1 in new) echo $K;; kept) echo build/tools/kiln_kept;; base) echo build/tools/kiln_base;; esac; }
for b in new kept base; do
  $(tool $b) compile bench/memory_bound.kiln -o $W/mb_$b --arch sm_90 -j 4 > /dev/null &
  $(tool $b) compile examples/global_max_norm.kiln -o $W/gm_$b --arch sm_90 > /dev/null &
done
examples="global_max_norm rowsum_colsum rowsum softmax logsumexp cross_entropy"
mkdir -p $W/pre; for ex in $examples add; do $K compile examples/$ex.kiln -o $W/pre/$ex --arch sm_90 -j 8 > /dev/null || echo "FAIL compile $ex"; done
wait; echo "compiled $(el)"
cases=("mb total_f32 M=1,N=1048576" "mb total_f32 M=1,N=4194304" "mb logsumexp_bf16 M=8,N=262144"
  "mb rmsnorm_bf16 M=2,N=1000000" "gm global_max_norm M=1000,N=1000")
for r in 1 2; do for c in "${cases[@]}"; do set -- $c; for b in new kept base; do
  echo "round $r $2 $3 $b $($(tool $b) run $W/${1}_$b $2 --shape $3 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/ab.txt
done; done; done; echo "ab $(el)"; pack
export KILN_REQUIRE_GPU=1
build/tests/kiln_gpu_runtime_tests $W/pre/add $W/pre/rowsum $W/pre/global_max_norm > $W/runtime_tests.txt 2>&1
echo "runtime tests: exit $? $(grep -E 'passed|failed' $W/runtime_tests.txt | tail -1)" | tee -a $W/gpu.txt
build/tests/kiln_gpu_c_api_tests $W/pre/add $W/pre/rowsum > $W/c_api_tests.txt 2>&1
echo "c api tests: exit $? $(grep -E 'passed|failed' $W/c_api_tests.txt | tail -1)" | tee -a $W/gpu.txt
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests/kiln_gpu_runtime_tests $W/pre/add $W/pre/rowsum $W/pre/global_max_norm > $W/san_runtime.txt 2>&1
echo "memcheck runtime tests: exit $? $(grep -E 'passed|failed' $W/san_runtime.txt | tail -1) $(grep -m1 'ERROR SUMMARY' $W/san_runtime.txt)" | tee -a $W/gpu.txt
pack
for i in $(seq 0 15); do
  mkdir -p $W/e2e/$i/bundles; for ex in $examples; do ln -s $W/pre/$ex $W/e2e/$i/bundles/$ex; done
  KILN_GPU_EXAMPLES="$examples" KILN_GPU_SHARD=$i/16 timeout 200 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.log 2>&1 &
done; wait
cat $W/e2e_[0-9]*.log > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5; n+=1} END {printf "e2e: %d passed, %d failed, %d skipped (%d of 16 shards finished)\n", p, f, s, n}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -20; echo "e2e $(el)"; pack
