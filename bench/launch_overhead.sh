#!/usr/bin/env bash
# Launch overhead and start-up costs on a GPU machine (docs/architecture.md):
#   bench/launch_overhead.sh KILN_BINARY LAUNCH_OVERHEAD_BINARY OUT_DIR
# Compiles examples/add.kiln, tunes it at N=1 into a cache, then runs the benchmark with it.
set -euo pipefail
kiln=$1 bench=$2 out=$3
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
"$kiln" compile "$root/examples/add.kiln" -o "$out/add.bundle" > /dev/null
"$kiln" tune "$out/add.bundle" --shape N=1 -c "$out/cache.json" -q --no-descent > /dev/null
"$bench" "$out/add.bundle" "$out/cache.json"
