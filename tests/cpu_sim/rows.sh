#!/usr/bin/env bash
# CPU check of the row reduction kernels of tests/cpu_sim/rows.kiln (compiler/lower/
# reduction_rows.cpp, and reduction_split.cpp for the split variants checked first, below):
# the variants' LLVM IR is lowered to the host (to_host.py),
# compiled with llc and run by rows_driver.cpp with one fiber per GPU thread (a barrier
# per warp for the shuffles), then compared with an f64 reference at awkward row lengths:
# shorter than 2 vectors, odd (every row at another alignment: shifted rows, their head and
# tail), multiples of the vector, longer than every variant holds (looped rows). No GPU: this
# checks the kernel's logic (indices, bounds, masks, edges, combines), not its speed.
#   tests/cpu_sim/rows.sh DUMP LLC CXX OUT_DIR SPEC
source "$(dirname "$0")/common.sh"
# K kernel "variants" shapes ("M N")... Each variant's build (dump, to_host.py, llc, a link)
# takes about a second, so a sample of the variants runs: threads per row of 8 (16 rows per
# block), 32, 128 and 512, 8 rows of 32 per block, scalar (vec 1), fused copies (looped rows
# walked once for max+sum or mean+M2) of 8 and 256 threads per row, and the shifting twins
# (shift=1: what the rule runs for odd rows) of the tiers of 8, 32, 128 and 512 threads per
# row, and of softmax_f32's fused 512-thread tier (v51: its looped rows fuse, shifted).
check() {
  local K=$1 kernel=$2 variants=$3; shift 3
  sim_driver rows_driver.cpp "$K"
  for v in $variants; do
    local block epb phases
    sim_build "$out/rows_driver$K.o" "$spec" "$kernel" $v "$out/rows_sim"
    read -r block epb phases _ <<< "$sim_stats"
    for shape in "$@"; do
      if ! r=$("$out/rows_sim" "$block" "$epb" $shape); then
        echo "FAIL $kernel v$v [$shape]: $r"; fail=1
      fi
    done
  done
  echo "$kernel: variants $variants checked at $# shapes"
}
# Split variants (few long rows, each over S blocks, one launch per phase: reduction_split.cpp)
# at shapes "M N S": a slice per block and empty slices (S blocks over a row of fewer chunks),
# aligned rows, odd ones (shifted vectors, block 0 of the row taking the edges), scalars; those
# whose last phase only stores (split.lead_last) both as the runtime launches that phase, one
# block per row with S in the phase's high word, and on the full grid as an older runtime does.
check_split() {
  local K=$1 kernel=$2 variants=$3; shift 3
  sim_driver rows_driver.cpp "$K"
  for v in $variants; do
    local block epb phases slots lead leads m n S
    sim_build "$out/rows_driver$K.o" "$spec" "$kernel" $v "$out/rows_sim"
    read -r block epb phases slots lead <<< "$sim_stats"
    if ((phases == 0 || epb != 1)); then
      echo "FAIL $kernel v$v: not a split row variant ($sim_stats)"; fail=1; continue
    fi
    leads=0
    ((lead)) && leads="1 0"
    for shape in "$@"; do
      read -r m n S <<< "$shape"
      for l in $leads; do
        if ! r=$("$out/rows_sim" "$block" 1 "$m" "$n" c "$phases" "$slots" "$S" "$l"); then
          echo "FAIL $kernel v$v lead=$l [$shape]: $r"; fail=1
        fi
      done
    done
  done
  echo "$kernel: split variants $variants checked at $# shapes"
}
split_shapes=("1 1 3" "3 24 1" "3 5 2" "2 20001 3" "3 65536 4" "3 70001 7")
check_split 8 logsumexp_f32 "20 21 22" "${split_shapes[@]}"
check_split 1 softmax "20 22" "${split_shapes[@]}"
check_split 2 softmax_f32 "20" "${split_shapes[@]}"
shapes=("1 1" "5 3" "9 17" "3 24" "9 1001" "9 4095" "3 4097" "2 20001")
check 1 softmax "0 2 5 7 15 17 23 29 43 45 48 50" "${shapes[@]}"
check 2 softmax_f32 "0 2 5 7 15 17 23 29 43 48 50 51" "${shapes[@]}"
check 3 layernorm "0 2 5 7 15 17 23 29 43 45 48 50" "${shapes[@]}"
check 4 layernorm_f32 "0 2 7 15 23 29 43 48 50" "${shapes[@]}"
# rmsnorm: its v31 stages (the launch gives it no shared memory: it runs unstaged)
check 5 rmsnorm "0 2 7 15 17 31 23 28 30" "${shapes[@]}"
exit $fail
