#!/usr/bin/env bash
# Session 20, device call 3: issue 20's four cases and the one-row cumsum on the committed build
# (be452d3), beside torch eager and torch.compile(mode="max-autotune-no-cudagraphs") in one
# run (bench/everyday.sh: each Kiln default checked against the interpreter before it is timed,
# the copy bandwidth measured in the same run).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w3; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
K=build/tools/kiln
BENCH_REPS=100 BENCH_KERNELS="cross_entropy embedding cumsum_rows cumsum_row dropout_bf16" \
  BENCH_TORCH="cross_entropy embedding cumsum dropout" bench/everyday.sh $K $W/everyday > $W/everyday.txt 2>&1
echo "everyday exit $?"; grep -E "check failed|exit|FAILED" $W/everyday.txt; cat $W/everyday/summary.md
tar czf $OUT/call3.tgz -C $W --exclude='everyday/scan' --exclude='everyday/cross_entropy' --exclude='everyday/embedding' --exclude='everyday/dropout' --exclude='everyday/rotary' --exclude='everyday/spatial_mean' --exclude='everyday/strided' .
