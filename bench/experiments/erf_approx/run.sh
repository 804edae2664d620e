#!/usr/bin/env bash
# Measures Kiln's approximate erf (and libdevice's erff) over every f32 input (erf_approx.cu);
# needs nvcc and a GPU. fit.py (no GPU) derives its polynomial.
#   bench/experiments/erf_approx/run.sh OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
nvcc -O3 -arch=sm_90 "$here/erf_approx.cu" -o "$1/erf_approx"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$1/erf_approx.txt"
"$1/erf_approx" | tee -a "$1/erf_approx.txt"
