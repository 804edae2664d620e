#!/usr/bin/env bash
# Session 40, device call 3 (the third of this session; the first here): every kernel of
# tests/gpu/cases.txt at 3 shapes drawn by tests/gpu/random_shapes.py (seed 1), the runtime's
# pick checked against the interpreter, a quarter with NaN and infinities.
set -uo pipefail
W=$OUT/w; source bench/device_setup.sh
export KILN_REQUIRE_GPU=1
timeout 420 python3 tests/gpu/random_shapes.py $K /tmp/bundles $W/shapes --per-kernel 3 --seed 1 --timeout 60 \
  > $W/random_shapes.txt 2>&1
echo "rc $?"; grep -v "^ok" $W/random_shapes.txt | head -40; tail -1 $W/random_shapes.txt
