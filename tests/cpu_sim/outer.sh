#!/usr/bin/env bash
# CPU check of the outer reduction kernels (compiler/lower/reduction_outer.cpp and the split
# ones, reduction_split.cpp): every variant of examples/colsum.kiln's colsum and of
# examples/reduction_suite.kiln's ln_wgrad_bf16 is lowered to the host (to_host.py), compiled
# with llc and run by outer_driver.cpp with one fiber per GPU thread (a barrier per warp
# for the shuffles), then compared with f64 column sums at awkward shapes: one column, columns
# not a multiple of the vector or of a tile, extents not a multiple of a chunk, more tiles than
# the grid (the block loop), split over 1 and 5 blocks per tile, and over 37 on few columns
# (the last phase's column fold: more records than a warp's lanes), odd columns of 1 and 2 rows
# (the partly valid last thread's whole chunks); examples/reduction_suite.kiln's mid_mean too,
# whose columns are two row dimensions (a thread's may run from one row into the next, and
# both extents are odd, even or below the vector); examples/spatial_mean.kiln's sum_bh too, over
# two reduced indices apart (b and h of [B, C, H, W]), whose chunks step each step's coordinates
# from the first's: H of 1, below the threads along the reduction (several carries in one step)
# and above it. Each variant's own entry computes in 32 bits (lower_reduction.cpp
# has_index32_entry) and runs at every shape; its general entry, in 64 bits, the one that serves
# launches past 2^31 - 1 elements, runs at the first two and the last. No GPU: this checks the
# kernels' logic (unmasked chunks and masked tails, combines, workspace records, phases), not
# their speed.
#   tests/cpu_sim/outer.sh DUMP LLC CXX OUT_DIR SUITE_SPEC
source "$(dirname "$0")/common.sh"
colsum_spec="$here/../../examples/colsum.kiln"
spatial_spec="$here/../../examples/spatial_mean.kiln"
# K spec kernel shapes ("M N")...
check() {
  local K=$1 s=$2 kernel=$3; shift 3
  sim_driver outer_driver.cpp "$K"
  local n; n=$("$dump" "$s" "$kernel" -1)
  for ((v = 0; v < n; v++)); do
    local block epb phases
    sim_build "$out/outer_driver$K.o" "$s" "$kernel" $v "$out/outer_sim"
    read -r block epb phases _ <<< "$sim_stats"
    local splits=1
    ((phases > 0)) && splits="1 5"
    # run LABEL SHAPES...: the built entry at each shape, split over each of $splits.
    run() {
      local label=$1 shape S; shift
      for shape in "$@"; do
        for S in $splits; do
          if ! r=$("$out/outer_sim" "$block" "$epb" "$phases" 2 "$S" $shape); then
            echo "FAIL $kernel v$v$label S=$S [$shape]: $r"; fail=1
          fi
        done
      done
    }
    run "" "$@"
    # More records than a warp has lanes for the last phase's column fold.
    local few="1500 3"
    ((K == 3)) && few="2 1500 3"
    ((K == 4)) && few="37 1 41 3"
    if ((phases > 0)) && ! r=$("$out/outer_sim" "$block" "$epb" "$phases" 2 37 $few); then
      echo "FAIL $kernel v$v S=37 [$few]: $r"; fail=1
    fi
    # The general entry (64-bit indices) at the first two shapes and the last.
    sim_build "$out/outer_driver$K.o" "$s" "$kernel" $v "$out/outer_sim" --general
    run " (general entry)" "$1" "$2" "${!#}"
  done
  echo "$kernel: $n variants checked at $# shapes, their general entries at 3"
}
check 1 "$colsum_spec" colsum "1 1" "9 1" "37 5" "130 257" "75 1024" "1 9" "2 1001" "33 8"
check 2 "$spec" ln_wgrad_bf16 "1 1" "37 3" "130 200" "41 520" "41 523" "2 17" "1 1001"
check 3 "$spec" mid_mean "1 1 1" "3 7 5" "5 9 17" "7 33 101" "4 6 1030" "3 2 16"
check 4 "$spatial_spec" sum_bh "1 1 1 1" "3 5 7 7" "9 3 1 10" "7 2 3 17" "3 2 37 33" "2 3 130 5" \
  "5 1 3 1030"
exit $fail
