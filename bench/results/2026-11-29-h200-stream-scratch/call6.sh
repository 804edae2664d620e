#!/usr/bin/env bash
# Session 33, device call 6: Runtime::trim_scratch and set_keep_scratch(false) on the GPU: the
# runtime's GPU tests (among them trimming between launches still enqueued, and keeping off),
# the C API's, and memcheck on the runtime tests.
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/tests.tar.xz /tmp/tests.tar && tar xf /tmp/tests.tar -C build
pack() { mkdir -p $OUT/call6 && cp $W/*.txt $OUT/call6/ 2>/dev/null; }
for ex in add rowsum global_max_norm; do $K compile examples/$ex.kiln -o $W/$ex --arch sm_90 -j 8 > /dev/null || echo "FAIL compile $ex"; done
export KILN_REQUIRE_GPU=1
build/tests/kiln_gpu_runtime_tests $W/add $W/rowsum $W/global_max_norm > $W/runtime_tests.txt 2>&1
echo "runtime tests: exit $? $(grep -E 'passed|failed' $W/runtime_tests.txt | tail -1)" | tee -a $W/gpu.txt
build/tests/kiln_gpu_c_api_tests $W/add $W/rowsum > $W/c_api_tests.txt 2>&1
echo "c api tests: exit $? $(grep -E 'passed|failed' $W/c_api_tests.txt | tail -1)" | tee -a $W/gpu.txt
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests/kiln_gpu_runtime_tests $W/add $W/rowsum $W/global_max_norm > $W/san_runtime.txt 2>&1
echo "memcheck runtime tests: exit $? $(grep -E 'passed|failed' $W/san_runtime.txt | tail -1) $(grep -m1 'ERROR SUMMARY' $W/san_runtime.txt)" | tee -a $W/gpu.txt
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests/kiln_gpu_runtime_tests $W/add $W/rowsum $W/global_max_norm "kept scratch trimmed*" > $W/san_trim.txt 2>&1
echo "racecheck trim test: exit $? $(grep -E 'passed|failed' $W/san_trim.txt | tail -1) $(grep -m1 'RACECHECK SUMMARY' $W/san_trim.txt)" | tee -a $W/gpu.txt
pack
