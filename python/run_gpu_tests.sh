#!/usr/bin/env bash
# The kiln Python package on a GPU machine, in one call:
#   0. the example bundles the GPU suite needs, compiled (cached in $KILN_CACHE_DIR);
#   1. the host suite (python/tests/test_host_launch.py, the fake driver of the build tree);
#   2. the GPU suite (python/tests/test_gpu_*.py: every example kernel against torch, torch
#      tensors, graph capture, bad input) under KILN_REQUIRE_GPU=1: a skip is a failure;
#   3. examples/python/rmsnorm_model.py (GPU name, check, times);
#   4. bench/python_launch_overhead.py (Python against the C API; exit 1 over 5 us).
#
#   python/run_gpu_tests.sh [BUILD_DIR]          (default: build)
#
# Needs python3 (or $PYTHON) with torch (CUDA), pytest and numpy, and from BUILD_DIR: tools/kiln,
# lib/libkiln_runtime.so, tests/libkiln_fake_cuda.so, bench/kiln_c_api_launch_overhead, and
# optionally tests/gpu_bundles/ (bundles compiled by ctest; otherwise the tests compile the
# examples, which needs the CUDA toolkit under /usr/local/cuda). Everything printed also goes
# to $OUT (default python-gpu-out/): one log per step, summary.txt, pytest's junit XML.
# STEPS picks some of the steps (default "compile host gpu example bench"; compile builds the
# example bundles the GPU suite needs into $KILN_CACHE_DIR, default /tmp/kiln-python-cache,
# which later calls on the same machine reuse): split the run over several calls when one
# would take too long. Exits 1 when any step failed, else 0.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd) || { echo "run_gpu_tests.sh: no build dir ${1:-build}" >&2; exit 1; }
out=${OUT:-$repo/python-gpu-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$repo"
export PATH=/usr/local/cuda/bin:$PATH
export PYTHONPATH=$repo/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
# The library itself or any of its version links (a carried tree may have lost the links).
for f in "$build"/lib/libkiln_runtime.so "$build"/lib/libkiln_runtime.so.*; do
  if [[ -f $f ]]; then export KILN_RUNTIME_LIB=$f; break; fi
done
[[ -n ${KILN_RUNTIME_LIB:-} ]] || { echo "run_gpu_tests.sh: no $build/lib/libkiln_runtime.so*" >&2; exit 1; }
export KILN_BIN=$build/tools/kiln
export KILN_CACHE_DIR=${KILN_CACHE_DIR:-/tmp/kiln-python-cache}
export KILN_TEST_BUNDLES=$build/tests/gpu_bundles
export KILN_REQUIRE_GPU=1
py=${PYTHON:-python3}  # a Python with torch, pytest and numpy
failed=()
note() { echo "$1" | tee -a "$out/summary.txt"; }
step() {  # step NAME LOG COMMAND...
  local name=$1 log=$2; shift 2
  local t0=$SECONDS
  "$@" 2>&1 | tee "$out/$log"
  local rc=${PIPESTATUS[0]}
  note "$name: exit $rc ($((SECONDS - t0)) s)"
  ((rc == 0)) || failed+=("$name")
}

touch "$out/summary.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$out/gpu.txt"
"$py" -c 'import sys, torch, pytest, numpy; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "pytest", pytest.__version__, "numpy", numpy.__version__)' 2>&1 | tee "$out/versions.txt"

wants() { [[ " ${STEPS:-compile host gpu example bench} " == *" $1 "* ]]; }
# compile: every example's bundle not in $KILN_TEST_BUNDLES into $KILN_CACHE_DIR (what the GPU
# suite would otherwise compile as it goes), timed on its own.
wants compile && step "compile the example bundles" compile.txt "$py" -c '
import os, sys, time, kiln
from pathlib import Path
have = Path(os.environ["KILN_TEST_BUNDLES"])
for spec in sorted(Path("examples").glob("*.kiln")):
    if (have / spec.stem / "manifest.json").is_file():
        print(f"{spec.stem}: {have / spec.stem} (carried)")
        continue
    t0 = time.time()
    print(f"{spec.stem}: {kiln.compile_bundle(spec)} ({time.time() - t0:.1f} s)", flush=True)
'
wants host && step "python host suite (fake driver)" pytest_host.txt \
  env KILN_FAKE_DRIVER="$build/tests/libkiln_fake_cuda.so" \
  "$py" -m pytest -rs -p no:cacheprovider --junitxml="$out/pytest_host.xml" python/tests/test_host_launch.py
wants gpu && step "python GPU suite (KILN_REQUIRE_GPU=1)" pytest_gpu.txt \
  "$py" -m pytest -rs -v -p no:cacheprovider --junitxml="$out/pytest_gpu.xml" \
  python/tests/test_gpu_kernels.py python/tests/test_gpu_torch.py
wants example && step "examples/python/rmsnorm_model.py" rmsnorm_model.txt \
  "$py" examples/python/rmsnorm_model.py
wants bench && step "bench/python_launch_overhead.py" launch_overhead.txt \
  "$py" bench/python_launch_overhead.py --build "$build"

if ((${#failed[@]})); then
  note "FAILED: ${failed[*]}"
  exit 1
fi
note "all passed"
