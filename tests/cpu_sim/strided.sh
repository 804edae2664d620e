#!/usr/bin/env bash
# CPU check of the strided pointwise kernel of examples/strided.kiln (add_strided): its
# strided variant's LLVM IR is lowered to the host (to_host.py), compiled with llc and run by
# driver.cpp (K=6) with one fiber per GPU thread, on a transposed input beside a row
# expanded over M (stride 0), on padded rows beside a column expanded over N, and on
# contiguous ones, compared bit for bit with a host reference at awkward shapes; the default
# (vector) variant runs the contiguous view. Then the strided variants of layernorm_strided
# (bf16) and layernorm_strided_f32 (row reductions whose tile holds a block's rows of x:
# compiler/lower/reduction_rows.cpp, step 4c) run on rows_driver.cpp (K=6, 7) over a
# transposed view (padded, whose columns are read element by element, and not, whose
# block's rows of a column are read as one vector when they are whole), padded rows and
# contiguous strides, with the shared memory for the tile,
# with too little (the rows then loop through the strides) and with none, at row lengths that
# are and are not multiples of the vector. No GPU: this checks the strided offsets (the
# strides as the entry's last arguments, 64-bit products) and the tile's copy, swizzle and
# reads, not speed.
#   tests/cpu_sim/strided.sh DUMP LLC CXX OUT_DIR SPEC
source "$(dirname "$0")/common.sh"
sim_driver driver.cpp 6
read -r strided default < <("$dump" "$spec" add_strided -2)
run() {
  local v=$1; shift
  local block epb tiled
  sim_build "$out/driver6.o" "$spec" add_strided "$v" "$out/sim"
  read -r block epb tiled <<< "$sim_stats"
  for shape in "$@"; do
    if ! r=$("$out/sim" "$block" "$epb" 3 $shape); then
      echo "FAIL add_strided v$v [$shape]: $r"; fail=1
    fi
  done
  echo "add_strided v$v: checked at $# shapes"
}
run "$strided" "1 1 1" "3 1000 1" "65 63 1" "1000 7 1" "33 4097 1" "1 1 2" "65 63 2" "1000 7 2" \
  "7 1000 0" "65 63 0"
run "$default" "1 1 0" "65 63 0" "1000 8 0"

# K kernel SMEM "M N LAYOUT"...: both strided variants (256 threads for rows of up to 2048, 512
# for any: the last) with SMEM bytes of dynamic shared memory.
check_rows() {
  local K=$1 kernel=$2 smem=$3; shift 3
  sim_driver rows_driver.cpp "$K"
  local last v block epb phases
  read -r last _ < <("$dump" "$spec" "$kernel" -2)
  for v in $((last - 1)) "$last"; do
    sim_build "$out/rows_driver$K.o" "$spec" "$kernel" "$v" "$out/rows_sim" "--smem=$smem"
    read -r block epb phases _ <<< "$sim_stats"
    for shape in "$@"; do
      if ! r=$("$out/rows_sim" "$block" "$epb" $shape); then
        echo "FAIL $kernel v$v smem=$smem [$shape]: $r"; fail=1
      fi
    done
    echo "$kernel v$v (smem $smem): checked at $# shapes"
  done
}
rows_shapes=("1 1 t" "5 3 t" "9 17 t" "13 24 t" "17 1000 t" "9 1001 t" "3 4096 t" "9 17 p"
  "13 24 p" "9 1001 p" "13 24 c" "5 3 c" "16 24 T" "24 3 T" "64 1000 T" "8 4097 T" "9 17 T")
check_rows 6 layernorm_strided 131072 "${rows_shapes[@]}"
check_rows 7 layernorm_strided_f32 131072 "${rows_shapes[@]}"
# Too little for rows of 1000 (8 x 2048 bytes): those loop through the strides.
check_rows 6 layernorm_strided 8192 "9 17 t" "17 1000 t" "9 1001 p"
check_rows 7 layernorm_strided_f32 0 "13 24 t" "9 1001 t"
exit $fail
