# Sourced first by every cpu_sim script, which takes the arguments DUMP LLC CXX OUT_DIR SPEC:
# the strict mode, those arguments by name, the script's directory, OUT_DIR and `fail`.
set -euo pipefail
dump=$1 llc=$2 cxx=$3 out=$4 spec=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
fail=0
declare -A sim_drivers_built

# sim_driver SOURCE K: compiles the driver SOURCE (driver.cpp, scan_driver.cpp) with -DK=K into
# OUT_DIR/<name>K.o, once per run: an object an earlier run left may be of an older source.
sim_driver() {
  local obj="$out/${1%.cpp}$2.o"
  [[ -n ${sim_drivers_built[$obj]:-} ]] && return
  "$cxx" -O1 -std=c++20 -DK="$2" -c "$here/$1" -o "$obj"
  sim_drivers_built[$obj]=1
}

# sim_build DRIVER_OBJ SPEC KERNEL VARIANT EXE [--force64]: lowers the variant's LLVM IR to the
# host (to_host.py), compiles it with llc, links it with the driver into EXE, and sets
# sim_stats to the dump's line about the variant ("block elements_per_block tiled|phases").
# Called in the script's own shell, not in $(...), so that a failed step stops the script
# (set -e) instead of leaving the previous variant's EXE to run.
sim_build() {
  local driver=$1 spec=$2 kernel=$3 v=$4 exe=$5 force=${6:-}
  sim_stats=$("$dump" "$spec" "$kernel" "$v" 2>&1 > "$out/k.ll" | tail -1)
  python3 "$here/to_host.py" "$out/k.ll" "$out/k.host.ll" $force
  "$llc" -O2 -filetype=obj -relocation-model=pic "$out/k.host.ll" -o "$out/k.o"
  "$cxx" "$driver" "$out/k.o" -o "$exe"
}
