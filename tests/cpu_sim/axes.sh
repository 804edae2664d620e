#!/usr/bin/env bash
# CPU check of the row reductions over reduced indices apart (compiler/lower/reduction_rows.cpp
# row_groups, and reduction_split.cpp): per-channel sums and sums of squares of [N, C, H, W],
# a product with a tensor whose reads do not run along the row (diag_sums), and bf16 means of
# [N, C, L]. A looped or split row's first point divides its flat index into coordinates and
# every other point steps them, and the inputs' offsets, from the point before: each variant's
# LLVM IR is lowered to the host (to_host.py), compiled with llc and run by axes_driver.cpp with
# one fiber per GPU thread, then compared with an f64 reference at shapes whose rows are held,
# looped and split, whose trailing run (H x W, L) is a multiple of the vector or odd (scalars,
# shifted vectors), of one element (every step carries into the leading index) and longer than
# a walk's step (no carry in some steps). No GPU: this checks the kernels' logic, not their
# speed.
#   tests/cpu_sim/axes.sh DUMP LLC CXX OUT_DIR SUITE_SPEC
source "$(dirname "$0")/common.sh"
spatial_spec="$here/../../examples/spatial_mean.kiln"
# A sample of the variants (each build takes about a second): 8, 64, 512 and 1024 threads a
# row, scalar (vec 1), split (and 1024-thread split), and the shifting twins of 8, 128 and 512.
variants="0 3 7 12 17 20 22 23 28 30"
# check K spec kernel shapes... (N C H W, or N C L)
check() {
  local K=$1 s=$2 kernel=$3; shift 3
  sim_driver axes_driver.cpp "$K"
  for v in $variants; do
    local block epb phases slots lead Ss leads S l
    sim_build "$out/axes_driver$K.o" "$s" "$kernel" $v "$out/axes_sim"
    read -r block epb phases slots lead <<< "$sim_stats"
    Ss=1 leads=0
    ((phases > 0)) && Ss="1 3 7"
    ((lead)) && leads="1 0"
    for shape in "$@"; do
      for S in $Ss; do
        for l in $leads; do
          if ! r=$("$out/axes_sim" "$block" "$epb" "$phases" "$slots" "$S" "$l" $shape); then
            echo "FAIL $kernel v$v S=$S lead=$l [$shape]: $r"; fail=1
          fi
        done
      done
    done
  done
  echo "$kernel: variants $variants checked at $# shapes"
}
check 1 "$spatial_spec" channel_sums "1 1 1 1" "3 2 5 7" "2 3 16 16" "7 2 60 61" "5 2 67 67" \
  "33 2 17 17" "3000 2 1 7" "2 3 1 9000"
check 2 "$spec" diag_sums "1 1 1 1" "3 2 5 8" "9 2 33 64" "5 3 130 33" "700 2 3 9"
check 3 "$spatial_spec" channel_mean_bf16 "1 1 1" "3 5 49" "9 3 4096" "5 2 30001" "4000 2 7"
exit $fail
