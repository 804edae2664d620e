#!/usr/bin/env bash
# Measures tanh.approx.f32's error over every f32 input (tanh_approx.cu); needs nvcc and a GPU.
#   bench/experiments/tanh_approx/run.sh OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
nvcc -O3 -arch=sm_90 "$here/tanh_approx.cu" -o "$1/tanh_approx"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$1/tanh_approx.txt"
"$1/tanh_approx" | tee -a "$1/tanh_approx.txt"
