#!/usr/bin/env bash
# CPU check of the pointwise kernels of examples/permute.kiln (the tiled transposes, lowered by
# compiler/lower_tiled.cpp, and the flat ones): every variant's LLVM IR is lowered to the host
# (to_host.py), compiled with llc and run by driver.cpp with one fiber per GPU thread,
# then compared bit for bit with a host reference at awkward shapes; some variants also run
# their 64-bit index path (the tiled variants). No GPU: this checks the kernel's logic (indices, bounds, tiles,
# barriers), not its speed or the NVPTX backend.
#   tests/cpu_sim/run.sh DUMP LLC CXX OUT_DIR SPEC
source "$(dirname "$0")/common.sh"
# K kernel shapes... (extents in the order driver.cpp reads them)
check() {
  local K=$1 kernel=$2 force=$3; shift 3
  sim_driver driver.cpp "$K"
  local n; n=$("$dump" "$spec" "$kernel" -1)
  for ((v = 0; v < n; v++)); do
    local block epb tiled
    sim_build "$out/driver$K.o" "$spec" "$kernel" $v "$out/sim" $force
    read -r block epb tiled <<< "$sim_stats"
    [[ -n $force && $tiled == 0 ]] && continue  # the flat kernel's 64-bit path: not the point
    # A flat variant's own entry serves only rows a multiple of its vector, and these shapes
    # are in the kernel's symbol order: its general entry, which serves every shape, runs
    # them (compiler/lower_pointwise.cpp, step 6; the own entries run end to end on the GPU).
    local how=$force
    if [[ $tiled == 0 ]]; then
      how=--general
      sim_build "$out/driver$K.o" "$spec" "$kernel" $v "$out/sim" $how
    fi
    for shape in "$@"; do
      if ! r=$("$out/sim" "$block" "$epb" 3 $shape); then
        echo "FAIL $kernel v$v $how [$shape]: $r"; fail=1
      fi
    done
  done
  echo "$kernel ${force:-(32-bit)}: variants checked at $# shapes"
}
check 1 transpose_add "" "1 1" "3 1000" "65 63" "132 100" "33 4097" "1000 1" "200 203"
check 1 transpose_add --force64 "65 63" "132 100"
# N odd and M a multiple of 8 (65 x 1000): aligned input rows, shifted output rows
check 2 transpose_bf16 "" "1 1" "65 63" "136 104" "33 4097" "300 301" "65 1000" "1001 64"
check 4 transpose_cast "" "1 1" "136 104" "33 1001" "65 1000" "7 24"
# H and D are one dimension of the tiles (Tiling::joined): D odd with H * D a multiple of the
# vector (8 x 127, 3 x 64) runs the vector path where S is one too, the aligned-rows path where
# S is not (70, 33, 301, 17); 3 x 5 and 2 x 133 the shifted one.
check 5 heads_keys "" "1 1 1 1" "2 33 3 64" "1 5 1 7" "2 72 3 136" "1 300 2 133" "2 70 8 127" \
  "1 9 3 5" "1 301 8 127" "3 17 1 8"
check 5 heads_keys --force64 "2 33 3 64" "2 72 3 136" "2 70 8 127" "1 301 8 127"
check 3 heads_keys_f32 "" "1 1 1 1" "2 33 3 64" "1 100 2 12" "2 72 3 132" "1 37 2 12"
# A and B one dimension of the tiles' output rows (A * B: 12, 15, 2112, 1)
check 9 rotate3 "" "1 1 1" "3 4 1000" "3 5 7" "2 1056 65" "1 1 300" "3 5 8"
check 9 rotate3 --force64 "3 4 1000" "3 5 7"
exit $fail
