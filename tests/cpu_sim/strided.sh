#!/usr/bin/env bash
# CPU check of the strided pointwise kernel of examples/strided.kiln (add_strided): its
# strided variant's LLVM IR is lowered to the host (to_host.py), compiled with llc and run by
# driver.cpp (K=6) with one host thread per GPU thread, on a transposed input beside a row
# expanded over M (stride 0), on padded rows beside a column expanded over N, and on
# contiguous ones, compared bit for bit with a host reference at awkward shapes; the default
# (vector) variant runs the contiguous view. No GPU: this checks the strided offsets (the
# strides as the entry's last arguments, 64-bit products), not speed.
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
exit $fail
