#!/usr/bin/env bash
# Before/after a change that must not move speed: the variant a plain launch runs (the
# heuristic's, `kiln run --variant default`) for each reduction case, built and timed with two
# kiln binaries in one call, interleaved round by round so that clocks and neighbours affect
# both alike. Each case's result is checked against the interpreter once per binary before
# anything is timed (a failed check is reported and the case is not timed).
#   bench/before_after.sh OLD_KILN NEW_KILN OUT_DIR       (ROUNDS=3, REPS=200)
set -uo pipefail
old=$1 new=$2 out=$3
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${ROUNDS:-3} reps=${REPS:-200}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
cases=(
  "rowsum M=32768,N=4096" "softmax M=32768,N=4096" "softmax M=4096,N=1001"
  "softmax M=1024,N=65536" "softmax M=4,N=1048576" "layernorm M=32768,N=4096"
  "rmsnorm M=32768,N=4096" "mean_var M=1024,N=65536" "logsumexp M=1024,N=65536"
  "colsum M=8192,N=8192" "colsum M=65536,N=64" "global_max_norm M=8192,N=8192"
  "rowsum_colsum M=8192,N=8192"
)
examples=$(for c in "${cases[@]}"; do echo "${c%% *}"; done | sort -u)
for which in old new; do
  bin=${!which}
  for e in $examples; do
    [[ -f "$out/$which/$e/manifest.json" ]] ||
      "$bin" compile "$root/examples/$e.kiln" -o "$out/$which/$e" --arch sm_90 > /dev/null &
  done
done
wait
status=0
declare -A ok pid
# The checks (the interpreter on the CPU) run side by side, each judged by its exit status; the
# timing after them, one launch sequence at a time.
for c in "${cases[@]}"; do
  k=${c%% *} shape=${c#* }
  for which in old new; do
    bin=${!which}
    "$bin" run "$out/$which/$k" "$k" --shape "$shape" --variant default --reps 1 \
      > "$out/check_${which}_${k}_${shape//[=,]/_}.txt" 2>&1 &
    pid["$which $c"]=$!
  done
done
for c in "${cases[@]}"; do
  for which in old new; do
    if wait "${pid["$which $c"]}"; then
      ok["$which $c"]=1
    else
      echo "check failed: $which $c" | tee -a "$out/failures.txt"
      status=1
    fi
  done
done
for ((r = 0; r < rounds; ++r)); do
  for c in "${cases[@]}"; do
    k=${c%% *} shape=${c#* }
    for which in old new; do
      [[ -n ${ok["$which $c"]:-} ]] || continue
      bin=${!which}
      "$bin" run "$out/$which/$k" "$k" --shape "$shape" --variant default --no-check \
        --reps "$reps" --json "$out/t_${which}_${k}_${shape//[=,]/_}_$r.json" > /dev/null 2>&1 ||
        { echo "timing failed: $which $c" | tee -a "$out/failures.txt"; status=1; }
    done
  done
done
python3 - "$out" "$rounds" "${cases[@]}" <<'PY' | tee "$out/table.md"
import json, statistics, sys
out, rounds, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
gpu = open(f"{out}/gpu.txt").read().strip()
print(f"GPU: {gpu}\n")
print("| case | variant (old/new) | old us | new us | new/old |")
print("|---|---|---:|---:|---:|")
for c in cases:
    k, shape = c.split(" ", 1)
    tag = shape.replace("=", "_").replace(",", "_")
    med, var = {}, {}
    for which in ("old", "new"):
        ts = []
        for r in range(rounds):
            try:
                j = json.load(open(f"{out}/t_{which}_{k}_{tag}_{r}.json"))
            except OSError:
                continue
            v = j["variants"][0]
            ts.append(v["median_us"])
            var[which] = v.get("variants")
        if ts:
            med[which] = statistics.median(ts)
    if len(med) < 2:
        print(f"| {k} {shape} | - | - | - | not timed |")
        continue
    print(f"| {k} {shape} | {var['old']} / {var['new']} | {med['old']:.2f} | {med['new']:.2f} "
          f"| {med['new'] / med['old']:.3f} |")
PY
exit $status
