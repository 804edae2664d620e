#!/usr/bin/env bash
# Reduction benchmark (issue 4): every variant of each case, with the heuristic's choice marked
# `*`, the copy bandwidth measured in the same run, then the same reductions through PyTorch
# eager and torch.compile(mode="max-autotune-no-cudagraphs").
#   bench/reductions.sh KILN_BINARY OUT_DIR
set -euo pipefail
kiln=$1 out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/bundles"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$out/gpu.txt"
for spec in rowsum:rowsum:M=32768,N=4096 colsum:colsum:M=4096,N=32768 \
            softmax:softmax:M=32768,N=1024 softmax:softmax:M=8192,N=8192 \
            layernorm:layernorm:M=32768,N=4096 rmsnorm:rmsnorm:M=32768,N=4096 \
            rowsum:rowsum:M=1,N=67108864 softmax:softmax:M=4,N=4194304; do
  IFS=: read -r example kernel shape <<< "$spec"
  [[ -f "$out/bundles/$example/manifest.json" ]] || "$kiln" compile "$root/examples/$example.kiln" -o "$out/bundles/$example" > /dev/null
  # A variant that mismatches is marked MISMATCH in the table (exit 2); the others still count.
  "$kiln" run "$out/bundles/$example" "$kernel" --shape "$shape" --variant all --copy-baseline \
      --json "$out/kiln_${kernel}_${shape//[=,]/_}.json" | tee "$out/kiln_${kernel}_${shape//[=,]/_}.txt" ||
    echo "kiln run $kernel $shape: exit $? (a variant failed its check, see above)"
done
python3 "$root/bench/torch_reductions.py" "$out/torch.json" | tee "$out/torch.txt"
