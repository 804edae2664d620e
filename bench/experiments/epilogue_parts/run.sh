#!/usr/bin/env bash
# Where a fused GELU's time goes: every variant of epilogues.kiln's three kernels at
# 8192 x 4096 x 4096 (the default variant checked first at 1000 x 1024 x 256: the interpreter
# would take hours at the timed shape), then Nsight Compute on the GELU kernel's default
# (staged) variant and on the bias kernel's default (register) variant.
#   bench/experiments/epilogue_parts/run.sh KILN OUT_DIR
set -uo pipefail
kiln=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
"$kiln" compile "$here/epilogues.kiln" -o "$out/bundle" --arch sm_90 > /dev/null || exit 1
shape=M=8192,N=4096,K=4096
for k in gemm linear_bias linear_bias_gelu; do
  "$kiln" run "$out/bundle" $k --shape M=1000,N=1024,K=256 --variant default --reps 1 > "$out/check_$k.txt" 2>&1 ||
    { echo "$k: check failed"; cat "$out/check_$k.txt"; }
  "$kiln" run "$out/bundle" $k --shape $shape --variant all --no-check --reps 30 > "$out/all_$k.txt" 2>&1
  echo "== $k"; grep -E '^ +v(7|11)\b|^ +v(7|11)\*' "$out/all_$k.txt"
done
for kv in linear_bias_gelu:11 linear_bias:7; do
  k=${kv%:*} v=${kv#*:}
  timeout 60 ncu --clock-control none -k regex:${k}_s0_v$v -c 1 --section SpeedOfLight \
    --section WarpStateStats --section ComputeWorkloadAnalysis --metrics smsp__inst_executed.sum \
    "$kiln" run "$out/bundle" $k --shape $shape --variant $v --reps 1 --no-check > "$out/ncu_${k}_v$v.txt" 2>&1
  echo "ncu $k v$v: exit $?"
  grep -E 'Duration|Issue Slots Busy|Executed Ipc Active|Compute \(SM\) Throughput|smsp__inst_executed.sum|No Eligible' "$out/ncu_${k}_v$v.txt"
done
