#!/usr/bin/env bash
# The autotuner end to end on a GPU machine (docs/autotune.md):
#   tests/gpu/tune_demo.sh KILN_BINARY OUT_DIR
# Tunes each pointwise example at two shapes into OUT_DIR/cache.json (wall time per kernel),
# shows the cache, re-runs the tune on the warm cache (nothing is benchmarked), and launches
# through the runtime with the cache (KILN_LOG=1 says which config it used and why).
set -uo pipefail
kiln=$1 out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out/bundles"
cache="$out/cache.json"
rm -f "$cache"
cases=(add:N=67108864:N=1000003 swiglu:M=8192,N=8192:M=4097,N=33 bias_gelu:M=8192,N=8192:M=4097,N=33
       mixed:M=8192,N=8191:M=1000,N=7 causal_mask:T=8192:T=1000 transpose:M=8191,N=8193:M=1000,N=3)
for c in "${cases[@]}"; do
  IFS=: read -r ex s1 s2 <<< "$c"
  "$kiln" compile "$root/examples/$ex.kiln" -o "$out/bundles/$ex" > /dev/null || exit 1
  t0=$(date +%s%N)
  "$kiln" tune "$out/bundles/$ex" --shape "$s1" --shape "$s2" -c "$cache" -q || echo "TUNE FAILED: $ex"
  t1=$(date +%s%N)
  echo "tuning wall time $ex: $(( (t1 - t0) / 1000000 )) ms"
done
echo "== kiln cache show"
"$kiln" cache show "$cache"
echo "== second tune on the warm cache"
t0=$(date +%s%N)
"$kiln" tune "$out/bundles/add" --shape N=67108864 --shape N=1000003 -c "$cache" -q
t1=$(date +%s%N)
echo "warm tune wall time: $(( (t1 - t0) / 1000000 )) ms"
echo "== runtime launches with the cache (exact shape, bucket, none)"
for shape in N=67108864 N=1000000 N=4000; do
  KILN_LOG=1 "$kiln" run "$out/bundles/add" add --shape $shape -c "$cache" 2>&1 | grep -vE '^  (variant|copy)'
done
KILN_LOG=1 "$kiln" run "$out/bundles/swiglu" swiglu --shape M=8192,N=8192 -c "$cache" 2>&1 | grep -vE '^  variant'
