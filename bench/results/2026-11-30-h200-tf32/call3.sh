#!/usr/bin/env bash
# Session 39, device call 3: every variant of the tf32 GEMMs of bench/contraction.kiln at the
# shapes of bench/contraction.py (`kiln run --variant all`, no check: call 1 checked every
# variant at awkward shapes), to see whether the bf16 rule's picks suit f32 tiles, and the peak
# copy bandwidth beside the [K, N] weight's transposing step.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call3.tgz *.txt 2>/dev/null); }
$K compile bench/contraction.kiln -o $W/cb --arch sm_90 > /dev/null
for s in M=4096,N=4096,K=4096 M=8192,N=4096,K=4096 M=2048,N=11008,K=4096 M=3000,N=5000,K=1000; do
  for k in linear_tf32 gemm_tf32; do
    echo "== $k $s"
    timeout 120 $K run $W/cb $k --shape $s --variant all --no-check 2>&1 | grep -vE "^\s*$"
  done
done > $W/variants.txt 2>&1
echo "variants $(el)"; pack
$K run $W/cb gemm_tf32 --shape M=4096,N=4096,K=4096 --variant default --no-check --copy-baseline > $W/copy.txt 2>&1
cat $W/copy.txt; echo "copy $(el)"; pack
