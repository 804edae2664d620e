#!/usr/bin/env bash
# Pointwise benchmark: every variant of the examples at 64M elements, each checked against the
# interpreter (every element, docs/testing.md) in the same `kiln run` that times it, with the
# copy bandwidth measured in the same run; then the same kernels through PyTorch eager and
# torch.compile, each checked against float64 before it is timed (bench/torch_common.py).
# A wrong result stops the script with a non-zero exit.
#   bench/pointwise.sh KILN_BINARY OUT_DIR
set -euo pipefail
kiln=$1 out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/bundles"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$out/gpu.txt"
# Transposes and permutations (examples/permute.kiln, examples/transpose.kiln): 64M-element
# 2-D transposes, one with odd extents (the scalar path), and the attention layout changes at
# B=8, S=2048, H=16, D=128 (bf16, 32M elements). bench/torch_pointwise.py runs the same cases.
for spec in add:add:N=67108864 bias_gelu:bias_gelu:M=8192,N=8192 swiglu:swiglu:M=8192,N=8192 \
    transpose:transpose_scale:M=8192,N=8192 permute:transpose_add:M=8192,N=8192 \
    permute:transpose_add:M=8191,N=8193 permute:transpose_bf16:M=8192,N=8192 \
    permute:transpose_cast:M=8192,N=8192 permute:heads_first:B=8,S=2048,H=16,D=128 \
    permute:heads_keys:B=8,S=2048,H=16,D=128; do
  IFS=: read -r example kernel shape <<< "$spec"
  name="${example}_${kernel}_${shape//[=,]/_}"
  [[ -f "$out/bundles/$example/manifest.json" ]] || "$kiln" compile "$root/examples/$example.kiln" -o "$out/bundles/$example" > /dev/null
  "$kiln" run "$out/bundles/$example" "$kernel" --shape "$shape" --variant all --copy-baseline \
      --json "$out/kiln_$name.json" | tee "$out/kiln_$name.txt"
done
python3 "$root/bench/torch_pointwise.py" "$out/torch.json" | tee "$out/torch.txt"
