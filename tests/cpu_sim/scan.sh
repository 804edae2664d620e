#!/usr/bin/env bash
# CPU check of the scan kernels of examples/scan.kiln (compiler/lower_scan.cpp): every
# variant's LLVM IR is lowered to the host (to_host.py), compiled with llc and run by
# scan_driver.cpp with one fiber per GPU thread (a barrier per warp for the shuffles),
# then compared with a sequential f64 scan at awkward shapes: rows shorter than a warp's
# chunk, not a multiple of the vector, several chunks, more rows than the grid. No GPU: this
# checks the kernel's logic (prefixes, carries, tails, barriers, split phases), not its speed.
#   tests/cpu_sim/scan.sh DUMP LLC CXX OUT_DIR SPEC
source "$(dirname "$0")/common.sh"
# K kernel shapes ("M N")...
# With split_only set, only the split variants, and a shape may name S ("M N S"): rows of more
# than 32 tiles, so that the look-back folds whole groups, or (S = 1) of more tiles than the
# records hold. Groups of 1024 tiles are left to the GPU tests (one row of 64M: 8192 tiles).
check() {
  local K=$1 kernel=$2; shift 2
  sim_driver scan_driver.cpp "$K"
  local n; n=$("$dump" "$spec" "$kernel" -1)
  for ((v = 0; v < n; v++)); do
    local block epb phases slots
    sim_build "$out/scan_driver$K.o" "$spec" "$kernel" $v "$out/scan_sim"
    read -r block epb phases slots <<< "$sim_stats"
    [[ -n ${split_only:-} ]] && ((phases == 0)) && continue
    for shape in "$@"; do
      if ! r=$("$out/scan_sim" "$block" "$epb" "$phases" "$slots" 3 $shape); then
        echo "FAIL $kernel v$v [$shape]: $r"; fail=1
      fi
    done
  done
  echo "$kernel: $n variants checked at $# shapes"
}
check 1 cumsum_rows "1 1" "3 5" "2 127" "5 300" "1 4099" "17 2050" "2 9000"
check 2 cumsum_cols "1 1" "5 3" "300 7" "9 1000" "1030 2"
check 3 cummax_rows "1 1" "2 127" "3 4099"
check 4 cumsum_fused "1 1" "3 129" "2 5000"
# 37 to 74 tiles (4096 or 8192 elements); 269 to 538 tiles (scalars) for the 253 of S = 1.
split_only=1 check 1 cumsum_rows "1 300000 64" "1 2200001 1"
exit $fail
