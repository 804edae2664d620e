#!/usr/bin/env bash
# Session 40, device call 4 (the second here): the build that accepts NaN for an infinity in
# kernels that fold a product of floats; cumprod_rows with NaN and infinities at every variant
# of the new special_cases.txt line (and the shape call 1 failed on), then random_shapes.py
# again with another seed.
set -uo pipefail
W=$OUT/w; source bench/device_setup.sh
export KILN_REQUIRE_GPU=1
$K compile examples/scan.kiln -o /tmp/bundles/scan > /dev/null
for s in M=7,N=1000 M=4993,N=1025 M=1000,N=33 M=3,N=100003; do
  timeout 60 $K run /tmp/bundles/scan cumprod_rows --shape $s --variant all --reps 2 --inputs specials
  echo "rc $?"
done > $W/cumprod_specials.txt 2>&1
grep -E "rc |MISMATCH|kiln run:" $W/cumprod_specials.txt
timeout 330 python3 tests/gpu/random_shapes.py $K /tmp/bundles $W/shapes --per-kernel 2 --seed 2 --timeout 60 \
  > $W/random_shapes.txt 2>&1
echo "rc $?"; grep -v "^ok" $W/random_shapes.txt | head -40; tail -1 $W/random_shapes.txt

