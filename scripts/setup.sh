#!/usr/bin/env bash
# One-command set-up of a fresh Debian 12 (bookworm) machine: installs the build
# dependencies (skipped when they are already there), checks the CUDA toolkit, configures and
# builds Kiln in build/, and compiles examples/add.kiln into a bundle as a smoke test.
# Run from anywhere, as root or as a user with sudo. Safe to rerun; reruns are incremental.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
CUDA_ROOT="${KILN_CUDA_ROOT:-/usr/local/cuda}"
PACKAGES=(cmake ninja-build g++ llvm-19-dev llvm-19-tools libzstd-dev zlib1g-dev
          nlohmann-json3-dev libfmt-dev catch2 libcli11-dev lld python3
          python3-pytest python3-numpy python3-setuptools)

step() { echo "==> $*"; }
die() { echo "setup.sh: error: $*" >&2; exit 1; }

# 1. Packages: ask apt only for what dpkg does not already have.
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} > 0)); then
  step "installing ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    die "packages missing (${missing[*]}) and not root and no sudo: install them as root"
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq >/dev/null
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
else
  step "packages already installed"
fi

# 2. The CUDA toolkit (not packaged by Debian): headers, ptxas, libdevice, nvJitLink.
absent=()
for f in include/cuda.h bin/ptxas nvvm/libdevice/libdevice.10.bc; do
  [[ -e "$CUDA_ROOT/$f" ]] || absent+=("$CUDA_ROOT/$f")
done
compgen -G "$CUDA_ROOT/lib64/libnvJitLink.so*" >/dev/null || absent+=("$CUDA_ROOT/lib64/libnvJitLink.so*")
if ((${#absent[@]} > 0)); then
  die "CUDA toolkit incomplete; missing: ${absent[*]} (install the CUDA toolkit under $CUDA_ROOT or set KILN_CUDA_ROOT)"
fi
step "CUDA toolkit found at $CUDA_ROOT"

# 3. Configure and build.
step "configuring build/"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_CUDA_ROOT="$CUDA_ROOT" >/dev/null
step "building (this takes a few minutes the first time)"
cmake --build build -j"$(nproc)" -- --quiet

# 4. Smoke test: compile the first example into a bundle.
step "compiling examples/add.kiln"
mkdir -p build/examples
build/tools/kiln compile examples/add.kiln -o build/examples/add.bundle
step "done: kiln is build/tools/kiln; the example bundle is build/examples/add.bundle"
