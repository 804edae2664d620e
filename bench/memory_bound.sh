#!/usr/bin/env bash
# The memory-bound suite of issue 19, in one call on the GPU machine: the 39 cases of
# bench/memory_bound_cases.py (kernels in bench/memory_bound.kiln). Per case, Kiln's heuristic
# default is checked against the interpreter at that very shape (a failed check is not timed),
# then every variant is timed through `kiln run` with the peak copy bandwidth (1 GiB each
# way) measured in the same run: the default and the best variant (the space `kiln tune`
# searches; its winner is the fastest median) are reported. Then bench/torch_memory_bound.py
# times torch eager and torch.compile(mode="max-autotune-no-cudagraphs"), and
# bench/summarize_memory_bound.py writes the table (summary.md) and, where matplotlib is
# installed, the plot (memory_bound.png).
#   bench/memory_bound.sh KILN_BINARY OUT_DIR [ID_PART ...]
#   BENCH_REPS=N     timed launches per variant (default 50)
#   BENCH_TORCH=0    leaves out the torch side; BENCH_TORCH=K/N runs its K-th shard of N
#                    (bench/torch_memory_bound.py: all of it takes longer than one call)
#   BENCH_ARCH=sm_90 compiles the bundle for that architecture only (faster)
set -uo pipefail
kiln=$1 out=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$out/gpu.txt" || true
# The bundle compiles once (BENCH_BUNDLE names one compiled beforehand: 680 variants take
# minutes to compile).
bundle=${BENCH_BUNDLE:-$out/bundle}
[[ -f $bundle/manifest.json ]] || "$kiln" compile "$root/bench/memory_bound.kiln" -o "$bundle" \
  ${BENCH_ARCH:+--arch "$BENCH_ARCH"} > /dev/null || exit 1
failed=0
while read -r id kernel shape; do
  if [[ $# -gt 0 ]]; then
    keep=0
    for part in "$@"; do [[ $id == *"$part"* ]] && keep=1; done
    [[ $keep == 1 ]] || continue
  fi
  if ! "$kiln" run "$bundle" "$kernel" --shape "$shape" --variant default --reps 1 \
      > "$out/kiln_$id.check.txt" 2>&1; then
    echo "$id ($kernel $shape): the default variant's check failed (see kiln_$id.check.txt)"
    failed=$((failed+1))
    continue
  fi
  "$kiln" run "$bundle" "$kernel" --shape "$shape" --variant all --copy-baseline \
      --reps "${BENCH_REPS:-50}" --no-check --json "$out/kiln_$id.json" > "$out/kiln_$id.txt" ||
    { echo "$id: exit $? (see kiln_$id.txt)"; failed=$((failed+1)); }
  echo "[$(date +%T)] $id $kernel $shape"
done < <(python3 "$root/bench/memory_bound_cases.py" --list)
torch=${BENCH_TORCH:-1}
if [[ $torch != 0 ]]; then
  shard=() name=torch
  [[ $torch == */* ]] && shard=("$torch") name="torch_${torch%/*}"
  (cd "$root/bench" && python3 torch_memory_bound.py "$out/$name.json" "$@" "${shard[@]}") \
    > "$out/$name.txt" 2>&1 || { echo "torch cases failed (see $name.txt)"; failed=$((failed+1)); }
  cat "$out/$name.txt"
fi
python3 "$root/bench/summarize_memory_bound.py" "$out" | tee "$out/summary.md"
exit $((failed > 0))
