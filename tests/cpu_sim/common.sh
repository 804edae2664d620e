# Sourced by the cpu_sim scripts, which set dump, llc, cxx, out and here.
# sim_build DRIVER_OBJ SPEC KERNEL VARIANT EXE [--force64]: lowers the variant's LLVM IR to the
# host (to_host.py), compiles it with llc, links it with the driver into EXE, and prints the
# dump's line about the variant ("block elements_per_block tiled|phases").
sim_build() {
  local driver=$1 spec=$2 kernel=$3 v=$4 exe=$5 force=${6:-}
  local stats
  stats=$("$dump" "$spec" "$kernel" "$v" 2>&1 > "$out/k.ll" | tail -1)
  python3 "$here/to_host.py" "$out/k.ll" "$out/k.host.ll" $force
  "$llc" -O2 -filetype=obj -relocation-model=pic "$out/k.host.ll" -o "$out/k.o"
  "$cxx" "$driver" "$out/k.o" -o "$exe" -lpthread
  echo "$stats"
}
