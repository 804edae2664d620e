#!/usr/bin/env bash
# CPU check of rand (Philox 4x32-10) in the pointwise kernels: every variant of
# examples/dropout.kiln's dropout_mask is lowered to the host (to_host.py), compiled with llc
# and run by driver.cpp (K=7) with one fiber per GPU thread, and its mask and 24-bit
# integers are compared bit for bit with a Philox written in the driver, at awkward shapes (the
# vector variants' lanes share Philox blocks and take their words without selects when a
# vector starts at a multiple of 4: compiler/lower_pointwise.cpp), and on the default variant's
# 64-bit index path; and rand compared with a launch scalar (tests/cpu_sim/rand.kiln), which
# the kernels compare in integers (compiler/emit.cpp's rand_compare). No GPU: this checks the
# numbers, not the speed.
#   tests/cpu_sim/dropout.sh DUMP LLC CXX OUT_DIR SPEC
source "$(dirname "$0")/common.sh"
sim_driver driver.cpp 7
sim_driver driver.cpp 8
# run K SPEC KERNEL VARIANT FORCE SHAPES...: the variant lowered to the host, linked with
# driver K, run at each shape.
run() {
  local k=$1 spec=$2 kernel=$3 v=$4 force=$5; shift 5
  local block epb tiled
  sim_build "$out/driver$k.o" "$spec" "$kernel" "$v" "$out/sim$k" $force
  read -r block epb tiled <<< "$sim_stats"
  for shape in "$@"; do
    if ! r=$("$out/sim$k" "$block" "$epb" 3 $shape); then
      echo "FAIL $kernel v$v $force [$shape]: $r"; fail=1
    fi
  done
}
n=$("$dump" "$spec" dropout_mask -1)
read -r _ default < <("$dump" "$spec" dropout_mask -2)
mask() { run 7 "$spec" dropout_mask "$@"; }
for ((v = 0; v < n; v++)); do mask $v "" "1 1" "3 1001" "65 63" "7 1000" "5 4099"; done
echo "dropout_mask: $n variants checked at 5 shapes"
mask "$default" --force64 "3 1001" "65 63"
echo "dropout_mask v$default: the 64-bit path checked at 2 shapes"
mask "$default" --general "3 1001" "65 63" "5 4099"
echo "dropout_mask v$default: its general entry's 32-bit path checked at 3 shapes"

# rand compared with a launch scalar in every order, at 26 values of p (tests/cpu_sim/rand.kiln):
# every variant, and the default's general entry.
rand_spec="$here/rand.kiln"
n=$("$dump" "$rand_spec" rand_orderings -1)
read -r _ default < <("$dump" "$rand_spec" rand_orderings -2)
orderings() { run 8 "$rand_spec" rand_orderings "$@"; }
for ((v = 0; v < n; v++)); do orderings $v "" "1 1" "3 67"; done
orderings "$default" --general "5 41"
echo "rand_orderings: $n variants checked at 2 shapes, the default's general entry at 1"
exit $fail
