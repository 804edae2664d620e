#!/usr/bin/env bash
# The install test (tests/CMakeLists.txt, test install/app): install the build tree into a
# fresh prefix and use it the way an application does.
#   1. cmake --install; the package, libraries, headers and kiln are where docs say
#   2. the installed headers include nothing that is not installed (no fmt, no nlohmann) and
#      compile on their own; kiln_runtime.h compiles as C
#   3. examples/app configures and builds against the prefix (find_package(Kiln),
#      kiln_add_kernels compiles its spec with the installed kiln)
#   4. neither the app nor libkiln_runtime contains or needs LLVM or libcuda
#   5. a C program links libkiln_runtime.so and opens the runtime through the C API
#   6. the app runs: exit 0 (checked on a GPU) or 77 (no GPU here: it says why)
# Usage: install_and_build_app.sh BUILD_DIR SOURCE_DIR WORK_DIR CUDA_ROOT CXX
# A sanitizer build (KILN_SANITIZE) installs instrumented libraries; CTest then passes
# KILN_SANITIZE_FLAGS (e.g. -fsanitize=address,undefined), which the app and the C program
# are compiled and linked with too.
set -euo pipefail
build=$1 src=$2 work=$3 cuda=$4 cxx=$5
cc=${CC:-cc}
san=${KILN_SANITIZE_FLAGS:-}
prefix=$work/prefix
step() { echo "--- $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work"

step "install into $prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
for f in bin/kiln lib/libkiln_runtime.a lib/libkiln_runtime.so lib/cmake/Kiln/KilnConfig.cmake \
         lib/cmake/Kiln/KilnConfigVersion.cmake lib/cmake/Kiln/KilnTargets.cmake \
         lib/cmake/Kiln/KilnKernels.cmake include/kiln/kiln_runtime.h \
         include/kiln/runtime/runtime.h; do
  [[ -e $prefix/$f ]] || fail "$f not installed"
done

step "installed headers are complete"
inc=$prefix/include/kiln
while IFS= read -r header; do
  while IFS= read -r dep; do
    [[ -e $inc/$dep ]] || fail "${header#$inc/} includes \"$dep\", which is not installed"
  done < <(sed -n 's/^#include "\(.*\)".*/\1/p' "$header")
  if grep -Eq '^#include <(fmt|nlohmann|llvm)/' "$header"; then
    fail "${header#$inc/} includes a header of a dependency the package does not provide"
  fi
  echo "#include \"${header#$inc/}\"" >> "$work/all_headers.cpp"
done < <(find "$inc" -name '*.h' | sort)
"$cxx" -std=c++20 -fsyntax-only -Wall -Wextra -I "$inc" -isystem "$cuda/include" "$work/all_headers.cpp"
"$cc" -std=c11 -fsyntax-only -Wall -Wextra -pedantic -x c -I "$inc" -isystem "$cuda/include" \
  "$inc/kiln_runtime.h"

step "configure and build examples/app against the prefix"
cmake -S "$src/examples/app" -B "$work/app-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF > "$work/configure.log" ||
  { cat "$work/configure.log"; fail "configuring examples/app"; }
cmake --build "$work/app-build" || fail "building examples/app"
app=$work/app-build/app
[[ -f $work/app-build/kiln_kernels/swiglu.bundle/manifest.json ]] || fail "no bundle"

step "no LLVM, no libcuda in the app or the runtime"
for bin in "$app" "$prefix/lib/libkiln_runtime.so"; do
  if ldd "$bin" | grep -E 'libLLVM|libclang|libcuda'; then fail "$bin links LLVM or libcuda"; fi
done
for bin in "$app" "$prefix/lib/libkiln_runtime.a" "$prefix/lib/libkiln_runtime.so"; do
  if nm -C "$bin" 2> /dev/null | grep -q ' llvm::'; then fail "$bin contains LLVM code"; fi
done
grep -q 'libLLVM' "$work/app-build/build.ninja" && fail "the app's build links LLVM"

step "a C program on libkiln_runtime.so"
"$cc" -std=c11 -Wall -Wextra $san -o "$work/c_smoke" "$src/tests/install/c_smoke.c" -I "$inc" \
  -isystem "$cuda/include" -L "$prefix/lib" -lkiln_runtime
rc=0
LD_LIBRARY_PATH=$prefix/lib "$work/c_smoke" || rc=$?
[[ $rc == 0 || $rc == 77 ]] || fail "c_smoke exited $rc"

step "run the app"
rc=0
"$app" || rc=$?
case $rc in
  0) echo "PASS: installed, built, ran on the GPU" ;;
  77) echo "PASS: installed and built; no GPU here, so the app only reported that" ;;
  *) fail "app exited $rc" ;;
esac
