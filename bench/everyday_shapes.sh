#!/usr/bin/env bash
# Issue 20's kernels at shapes besides bench/everyday.sh's, every variant timed: what the
# heuristics of scans (rows, one long row), gathers (embedding, rotary) and rand (dropout)
# are chosen from. Each case's default variant is checked against the interpreter first (a
# failed check is not timed), then every variant is timed through `kiln run` with the peak
# copy bandwidth (1 GiB each way) measured in the same run. bench/summarize_shapes.py prints a
# table: the default, the best variant, and each variant's time relative to the best.
#   bench/everyday_shapes.sh KILN_BINARY OUT_DIR [CASE_REGEX]   (only the cases it matches)
#   BENCH_REPS=N     timed launches per variant (default 50)
set -uo pipefail
kiln=$1 out=$2 filter=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$out/gpu.txt"
failed=0
for ex in embedding scan dropout rotary; do
  "$kiln" compile "$root/examples/$ex.kiln" -o "$out/$ex" > /dev/null || exit 1
done
# bundle:kernel:shape[:extra kiln run arguments]
cases=(
  scan:cumsum_rows:M=4096,N=32768 scan:cumsum_rows:M=32768,N=4096 scan:cumsum_rows:M=16384,N=8192
  scan:cumsum_rows:M=1024,N=131072 scan:cumsum_rows:M=131072,N=1024 scan:cumsum_rows:M=264,N=262144
  scan:cumsum_rows:M=8192,N=3001 scan:cumsum_rows:M=100,N=1000000
  scan:cumsum_bf16:M=4096,N=32768 scan:cumsum_bf16:M=32768,N=2048 scan:cummax_rows:M=16384,N=8192
  scan:cumsum_row:N=67108864:--variant=default scan:cumsum_row:N=16777216:--variant=default
  scan:cumsum_row:N=1048576
  embedding:embedding:T=131072,V=32000,D=4096 embedding:embedding:T=16384,V=50257,D=768
  embedding:embedding:T=524288,V=32000,D=1024 embedding:embedding:T=8192,V=128256,D=4096
  rotary:rotary:T=16384,H=32,R=64,P=16384 rotary:rotary:T=4096,H=8,R=64,P=8192
  dropout:dropout_bf16:M=16384,N=8192:--scalar=p=0.1 dropout:dropout:M=8192,N=8192:--scalar=p=0.1
  dropout:dropout_bf16:M=4097,N=1000:--scalar=p=0.5
)
for spec in "${cases[@]}"; do
  [[ -n $filter && ! $spec =~ $filter ]] && continue
  IFS=: read -r bundle kernel shape extra <<< "$spec"
  name="kiln_${kernel}_${shape//[=,]/_}"
  args=(--shape "$shape") check=(--shape "$shape")
  [[ -n $extra ]] && args+=("$extra")
  [[ -n $extra && $extra != --variant* ]] && check+=("$extra")
  if ! "$kiln" run "$out/$bundle" "$kernel" "${check[@]}" --variant default --reps 1 \
      > "$out/$name.check.txt" 2>&1; then
    echo "$kernel $shape: the default variant's check failed (see $name.check.txt): not timed"
    failed=$((failed+1))
    continue
  fi
  # A case whose extra arguments name a variant times that one (the others of one long row
  # take seconds each); the others time every variant.
  [[ $extra == *--variant* ]] || args+=(--variant all)
  "$kiln" run "$out/$bundle" "$kernel" "${args[@]}" --copy-baseline \
      --reps "${BENCH_REPS:-50}" --no-check --json "$out/$name.json" > "$out/$name.txt" ||
    { echo "$kernel $shape: exit $?"; failed=$((failed+1)); }
  echo "== $kernel $shape"; cat "$out/$name.txt"
done
exit $((failed > 0))
