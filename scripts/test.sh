#!/usr/bin/env bash
# Runs every test, twice (docs/testing.md):
#   1. the suite of the Release build in build/ (scripts/setup.sh builds it);
#   2. the same suite built with AddressSanitizer and UndefinedBehaviorSanitizer in build-asan/
#      (configured here the first time, rebuilt incrementally after), where a leak, an
#      out-of-bounds access, a use after free or undefined behaviour fails the test that ran
#      into it.
# Under the sanitizers every test runs but the GPU tests (label gpu: they skip without a driver,
# and the GPU machine runs build/'s) and the bundles only they need (label bundle: every
# variant of every example, compiled by build/'s run; the bundles the host tests load are
# their fixtures and still compile here). Those bundles were most of build-asan/'s time: 28
# of its 45 minutes on 2 cores, bench/results/2026-11-26-h200-epilogue-stores/ci_times.txt.
# Exits non-zero if either run fails.
#   scripts/test.sh            both
#   KILN_TEST_JOBS=N           parallel jobs of the build-asan build (default: the number of CPUs)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
CUDA_ROOT="${KILN_CUDA_ROOT:-/usr/local/cuda}"
jobs=${KILN_TEST_JOBS:-$(nproc)}

step() { echo "==> $*"; }

step "tests of build/"
rc=0
ctest --test-dir build --output-on-failure -j2 || rc=1

# -O1: fast enough to run the suite, and still reports every frame; -g1: line numbers only.
step "configuring and building build-asan/ (address,undefined)"
if [[ ! -f build-asan/CMakeCache.txt ]]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DKILN_SANITIZE=address,undefined \
    -DKILN_CUDA_ROOT="$CUDA_ROOT" > /dev/null
fi
cmake --build build-asan -j"$jobs" -- --quiet

step "tests of build-asan/"
# detect_leaks: a leak fails the process; abort_on_error and halt_on_error: the first finding
# stops it with a report on stderr (CTest prints it).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j2 -LE 'gpu|bundle' || rc=1

if ((rc == 0)); then step "all tests passed (build/ and build-asan/)"; else step "FAILED"; fi
exit $rc
