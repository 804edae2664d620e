#!/usr/bin/env bash
# Scan benchmark (issue 20): every variant of each case through `kiln run` (the heuristic's
# choice marked `*`, the copy bandwidth measured in the same run), the heuristic's variant
# checked against the interpreter first; then torch.cumsum / cummax eager and
# torch.compile(mode="max-autotune-no-cudagraphs") on the same GPU (bench/torch_scans.py).
#   bench/scans.sh KILN_BINARY OUT_DIR
#   BENCH_REPS=N     timed launches per variant (default 100)
set -uo pipefail
kiln=$1 out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$out/gpu.txt"
"$kiln" compile "$root/examples/scan.kiln" -o "$out/scan" > /dev/null || exit 1
failed=0
for spec in cumsum_rows:M=4096,N=32768 cumsum_row:N=67108864 cumsum_cols:M=4096,N=32768 \
    cummax_rows:M=4096,N=32768 cumsum_bf16:M=4096,N=32768 cumsum_fused:M=4096,N=32768; do
  kernel=${spec%%:*} shape=${spec#*:} name="kiln_${spec//[=,:]/_}"
  if ! "$kiln" run "$out/scan" "$kernel" --shape "$shape" --variant default --reps 1 \
      > "$out/$name.check.txt" 2>&1; then
    echo "$kernel $shape: the default variant's check failed (see $name.check.txt): not timed"
    failed=$((failed+1))
    continue
  fi
  "$kiln" run "$out/scan" "$kernel" --shape "$shape" --variant all --copy-baseline \
      --reps "${BENCH_REPS:-100}" --no-check --json "$out/$name.json" > "$out/$name.txt" ||
    { echo "$kernel $shape: exit $?"; failed=$((failed+1)); }
  echo "== $kernel $shape"; cat "$out/$name.txt"
done
python3 "$root/bench/torch_scans.py" "$out/torch.json" > "$out/torch.txt" 2>&1 ||
  { echo "torch scans failed (see torch.txt)"; failed=$((failed+1)); }
cat "$out/torch.txt"
exit $((failed > 0))
