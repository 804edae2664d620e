#!/usr/bin/env bash
# Session 21, device call 4: the outer-reduction cases of the memory-bound suite (two added this
# session: bf16 column sums over 16 columns, the layernorm weight gradient over 64) on the
# submitted build, beside torch eager and torch.compile in one run: Kiln's side first
# (bench/memory_bound.sh, BENCH_TORCH=0; each default checked against the interpreter, every
# variant timed), then bench/torch_memory_bound.py, then the summary.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w4; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/mb.tar.xz -C $W
K=build/tools/kiln
pack() { tar czf $OUT/call4.tgz -C $W --exclude=mb . ; }
t0=$(date +%s)
BENCH_TORCH=0 BENCH_BUNDLE=$W/mb BENCH_REPS=30 bench/memory_bound.sh $K $W/suite colsum mid_mean ln_wgrad > $W/suite_kiln.txt 2>&1
echo "kiln $(( $(date +%s) - t0 )) s"; pack
(cd bench && python3 torch_memory_bound.py $W/suite/torch.json colsum mid_mean ln_wgrad) > $W/suite/torch.txt 2>&1
echo "torch $(( $(date +%s) - t0 )) s"; pack
python3 bench/summarize_memory_bound.py $W/suite > $W/suite/summary.md 2>&1
cat $W/suite/summary.md; pack
