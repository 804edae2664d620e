#!/usr/bin/env bash
# Reduction benchmark (issue 4), in one call: every variant of each case, with the heuristic's
# choice marked `*` and the copy bandwidth measured in the same run; then the same reductions
# through PyTorch eager and torch.compile(mode="max-autotune-no-cudagraphs"); then looped rows
# (longer than the register tiers) through Kiln alone; last, the table of
# bench/summarize_reductions.py.
#   bench/reductions.sh KILN_BINARY OUT_DIR
#   BENCH_REPS=N     timed launches per variant (default 100)
#   BENCH_CHECK=1    also check every variant against the interpreter (slow at these sizes);
#                    the heuristic's variant is always checked first, and a case that fails
#                    its check is not timed (the script then exits 1)
#   BENCH_SPLIT=0    leaves out the few very long rows (split reductions)
#   BENCH_BUFFERS=0  leaves out the kernels of several steps that pass buffers
set -uo pipefail
kiln=$1 out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/bundles"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$out/gpu.txt"
stamp() { echo "[$(date +%T)] $*"; }

# Bundles compile in parallel (CPU only, before anything is timed).
for example in rowsum colsum softmax layernorm rmsnorm mean_var logsumexp global_max_norm \
    rowsum_colsum; do
  [[ -f "$out/bundles/$example/manifest.json" ]] ||
    "$kiln" compile "$root/examples/$example.kiln" -o "$out/bundles/$example" > /dev/null &
done
wait
stamp "bundles compiled"

run_case() {  # KERNEL SHAPE: the kernel of examples/KERNEL.kiln, every variant
  local kernel=$1 shape=$2 name="kiln_$1_${2//[=,]/_}"
  # First the heuristic's variant (the one a plain launch runs, marked * in the tables) is
  # checked against the interpreter at this very shape (every element, docs/testing.md); a
  # case whose check fails is not timed. Then every variant is timed without a check:
  # checking each here would take most of the call (about a second per variant at these
  # sizes); the GPU tests (tests/gpu) check every variant at awkward shapes, and
  # BENCH_CHECK=1 checks them here too.
  if ! "$kiln" run "$out/bundles/$kernel" "$kernel" --shape "$shape" --variant default --reps 1 \
      > "$out/$name.check.txt" 2>&1; then
    echo "kiln run $kernel $shape: the default variant's check failed (see $name.check.txt): not timed"
    failed=$((failed+1))
    return
  fi
  local check=(--no-check)
  [[ ${BENCH_CHECK:-0} == 1 ]] && check=()
  "$kiln" run "$out/bundles/$kernel" "$kernel" --shape "$shape" --variant all --copy-baseline \
      --reps "${BENCH_REPS:-100}" "${check[@]}" --json "$out/$name.json" > "$out/$name.txt" ||
    { echo "kiln run $kernel $shape: exit $? (see $name.txt)"; failed=$((failed+1)); }
  stamp "$kernel $shape (checked: default variant)"
}
failed=0

# The six cases of issue 4, then few very long rows (split; BENCH_SPLIT=0 leaves them out),
# then rows longer than the register tiers (looped: fused and staged variants), then torch.
cases="rowsum:M=32768,N=4096 colsum:M=4096,N=32768 softmax:M=32768,N=1024 softmax:M=8192,N=8192
       layernorm:M=32768,N=4096 rmsnorm:M=32768,N=4096"
torch_cases=("rowsum f32 32768x4096" "colsum f32 4096x32768" "softmax bf16 32768x1024" "softmax bf16 8192x8192" layernorm rmsnorm)
if [[ ${BENCH_SPLIT:-1} == 1 ]]; then
  cases+=" rowsum:M=1,N=67108864 softmax:M=4,N=4194304"
  torch_cases=()  # all of them
fi
cases+=" softmax:M=1024,N=65536 layernorm:M=1024,N=65536 mean_var:M=1024,N=65536"
cases+=" logsumexp:M=1024,N=65536"
if [[ ${BENCH_BUFFERS:-1} == 1 ]]; then
  cases+=" global_max_norm:M=8192,N=8192 rowsum_colsum:M=8192,N=8192"
  (( ${#torch_cases[@]} )) && torch_cases+=("global_max_norm f32" "rowsum_colsum f32")
fi
for spec in $cases; do run_case "${spec%%:*}" "${spec#*:}"; done
python3 "$root/bench/torch_reductions.py" "$out/torch.json" "${torch_cases[@]}" > "$out/torch.txt" 2>&1 ||
  { echo "torch reductions failed (see torch.txt)"; failed=$((failed+1)); }
stamp "torch"
python3 "$root/bench/summarize_reductions.py" "$out" | tee "$out/summary.md"
(( failed == 0 ))
