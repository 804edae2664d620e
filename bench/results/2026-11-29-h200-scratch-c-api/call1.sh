#!/usr/bin/env bash
# Session 34, device call 7: main with the C API's and the Python package's kept-scratch
# controls (kiln_runtime_trim_scratch, kiln_runtime_set_keep_scratch, kiln_runtime_cached_scratch;
# kiln.trim_scratch, kiln.set_keep_scratch, kiln.cached_scratch). The runtime's and the C API's
# GPU tests, then the Python package's GPU suite (test_gpu_torch.py: torch tensors, streams,
# graphs, threads, the kept scratch trimmed between enqueued launches and turned off) and its
# host suite against the fake driver.
set -uo pipefail
W=/tmp/w8; source bench/device_setup.sh
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2"; }
unxz .carry/tests.tar.xz /tmp/tests.tar && tar xf /tmp/tests.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call1 && cp $W/*.txt $OUT/call1/ 2>/dev/null; }
$K compile examples/add.kiln -o $W/add > /dev/null; $K compile examples/rowsum.kiln -o $W/rowsum > /dev/null
$K compile examples/global_max_norm.kiln -o $W/global_max_norm > /dev/null
export KILN_REQUIRE_GPU=1
build/tests/kiln_gpu_runtime_tests $W/add $W/rowsum $W/global_max_norm > $W/runtime_tests.txt 2>&1
echo "runtime tests: exit $? $(grep -E 'passed|failed' $W/runtime_tests.txt | tail -1)" | tee -a $W/gpu.txt
build/tests/kiln_gpu_c_api_tests $W/add $W/rowsum > $W/c_api_tests.txt 2>&1
echo "c api tests: exit $? $(grep -E 'passed|failed' $W/c_api_tests.txt | tail -1)" | tee -a $W/gpu.txt
echo "tests $(el)"; pack
export KILN_BIN=$PWD/build/tools/kiln KILN_RUNTIME_LIB=$PWD/build/lib/libkiln_runtime.so KILN_CACHE_DIR=$W/kc PYTHONPATH=$PWD/python PYTHONDONTWRITEBYTECODE=1
timeout 400 python3 -m pytest -q -rs -p no:cacheprovider python/tests/test_gpu_torch.py > $W/python_gpu.txt 2>&1
echo "python gpu (test_gpu_torch.py): exit $? $(tail -1 $W/python_gpu.txt)" | tee -a $W/gpu.txt
unset KILN_REQUIRE_GPU
KILN_FAKE_DRIVER=$PWD/build/tests/libkiln_fake_cuda.so timeout 200 python3 -m pytest -q -rs -p no:cacheprovider python/tests/test_host_launch.py > $W/python_host.txt 2>&1
echo "python host (fake driver): exit $? $(tail -1 $W/python_host.txt)" | tee -a $W/gpu.txt
echo "python $(el)"; pack
