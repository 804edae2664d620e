#!/usr/bin/env bash
# The everyday kernels of issue 20 beside torch: cross-entropy forward (32K x 32K bf16 logits,
# int64 targets), an embedding lookup (128K tokens x 4096 bf16 from a 32000-row table), cumsum
# (4K x 32K f32 rows and one row of 64M), dropout forward (16K x 8K bf16); and beside them
# rotary embedding with position ids (16K tokens x 32 heads x 128 bf16), the mean over H and W
# of [64, 256, 56, 56] bf16 and the per-channel sum and sum of squares of the same in f32, and
# layernorm over a transposed view (16K x 4K bf16, rows of the view strided by M + 1: kiln
# run's first strided layout, torch's x.t() of a padded tensor; also 16K x 4K f32, 32K x 1000
# and 8K x 8K bf16, 16K x 4K bf16 rows padded to 4099: --strides x=4099,1, and the plain x.t()
# of a [4096, 16384] tensor: --strides x=1,16384). Each Kiln case is
# checked against the interpreter first (its default variant; a failed check is not timed),
# then every variant is timed through `kiln run` with the peak copy bandwidth measured in the
# same run (a copy of 1 GiB each way); then bench/torch_everyday.py times torch eager and
# torch.compile(mode="max-autotune-no-cudagraphs") on the same GPU, and
# bench/summarize_everyday.py prints one table (bytes: what each case must move at least, the
# same count for Kiln and torch).
#   bench/everyday.sh KILN_BINARY OUT_DIR
#   BENCH_REPS=N     timed launches per variant (default 100)
#   BENCH_KERNELS="k ..."  only these Kiln kernels; BENCH_TORCH="part ..." only the torch cases
#                    whose names contain one of these (e.g. BENCH_KERNELS="channel_sums"
#                    BENCH_TORCH="channel")
set -uo pipefail
kiln=$1 out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > "$out/gpu.txt"
failed=0
for ex in cross_entropy embedding scan dropout rotary spatial_mean strided; do
  "$kiln" compile "$root/examples/$ex.kiln" -o "$out/$ex" > /dev/null || exit 1
done
# bundle:kernel:shape[:extra kiln run arguments]
for spec in cross_entropy:cross_entropy:M=32768,V=32768 embedding:embedding:T=131072,V=32000,D=4096 \
    scan:cumsum_rows:M=4096,N=32768 scan:cumsum_row:N=67108864 \
    dropout:dropout_bf16:M=16384,N=8192:--scalar=p=0.1 rotary:rotary:T=16384,H=32,R=64,P=16384 \
    spatial_mean:spatial_mean_bf16:B=64,C=256,H=56,W=56 spatial_mean:channel_sums:N=64,C=256,H=56,W=56 \
    strided:layernorm_strided:M=16384,N=4096 strided:layernorm_strided_f32:M=16384,N=4096 \
    strided:layernorm_strided:M=32768,N=1000 strided:layernorm_strided:M=8192,N=8192 \
    strided:layernorm_strided:M=16384,N=4096:--strides=x=4099,1 \
    strided:layernorm_strided:M=16384,N=4096:--strides=x=1,16384; do
  IFS=: read -r bundle kernel shape extra <<< "$spec"
  [[ -z ${BENCH_KERNELS:-} || " $BENCH_KERNELS " == *" $kernel "* ]] || continue
  name="kiln_${kernel}_${shape//[=,]/_}${extra:+_${extra//[^a-z0-9]/_}}"
  args=(--shape "$shape")
  [[ -n $extra ]] && args+=("$extra")
  if ! "$kiln" run "$out/$bundle" "$kernel" "${args[@]}" --variant default --reps 1 \
      > "$out/$name.check.txt" 2>&1; then
    echo "$kernel $shape: the default variant's check failed (see $name.check.txt): not timed"
    failed=$((failed+1))
    continue
  fi
  "$kiln" run "$out/$bundle" "$kernel" "${args[@]}" --variant all --copy-baseline \
      --reps "${BENCH_REPS:-100}" --no-check --json "$out/$name.json" > "$out/$name.txt" ||
    { echo "$kernel $shape: exit $?"; failed=$((failed+1)); }
  echo "== $kernel $shape"; cat "$out/$name.txt"
done
read -ra torch_only <<< "${BENCH_TORCH:-}"
python3 "$root/bench/torch_everyday.py" "$out/torch.json" "${torch_only[@]}" > "$out/torch.txt" 2>&1 ||
  { echo "torch cases failed (see torch.txt)"; failed=$((failed+1)); }
cat "$out/torch.txt"
python3 "$root/bench/summarize_everyday.py" "$out" | tee "$out/summary.md"
exit $((failed > 0))
