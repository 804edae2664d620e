#!/usr/bin/env bash
# Builds rms_rows.cubin (sm_90) next to this script; run.py times it on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")"
/usr/local/cuda/bin/nvcc -cubin -arch=sm_90 -O3 -Xptxas -v rms_rows.cu -o rms_rows.cubin 2>&1 |
  grep -E "Compiling entry|Used" | paste - - | sed -E 's/.*rmsILi([0-9]+)ELi([0-9]+)ELi([0-9]+)ELi([0-9]+)ELi([0-9]+).*Used ([0-9]+) registers.*/\1 \2 \3 \4 \5 \6/' > variants.txt
cat variants.txt
