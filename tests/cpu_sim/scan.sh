#!/usr/bin/env bash
# CPU check of the scan kernels of examples/scan.kiln (compiler/lower_scan.cpp): every
# variant's LLVM IR is lowered to the host (to_host.py), compiled with llc and run by
# scan_driver.cpp with one host thread per GPU thread (a barrier per warp for the shuffles),
# then compared with a sequential f64 scan at awkward shapes: rows shorter than a warp's
# chunk, not a multiple of the vector, several chunks, more rows than the grid. No GPU: this
# checks the kernel's logic (prefixes, carries, tails, barriers, split phases), not its speed.
#   tests/cpu_sim/scan.sh DUMP LLC CXX OUT_DIR SPEC
source "$(dirname "$0")/common.sh"
# K kernel shapes ("M N")...
check() {
  local K=$1 kernel=$2; shift 2
  sim_driver scan_driver.cpp "$K"
  local n; n=$("$dump" "$spec" "$kernel" -1)
  for ((v = 0; v < n; v++)); do
    local block epb phases
    sim_build "$out/scan_driver$K.o" "$spec" "$kernel" $v "$out/scan_sim"
    read -r block epb phases <<< "$sim_stats"
    for shape in "$@"; do
      if ! r=$("$out/scan_sim" "$block" "$epb" "$phases" 3 $shape); then
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
exit $fail
