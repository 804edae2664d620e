#!/usr/bin/env bash
# Session 20, device call 7: where the narrow split should give way to the wide one. Column
# sums of 262144 rows over bf16 column counts between the narrow tile (64) and the wide one
# (256), and f32 counts between 32 and 128: the wide split (v22), the narrow one (v23), the
# 8-byte split (v25), interleaved, 100 launches, two rounds (bench/memory_bound.kiln of call 5).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
W=/tmp/w7; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/mb.tar.xz -C $W
K=build/tools/kiln
for round in 1 2; do
  for c in colsum_bf16:N=96 colsum_bf16:N=128 colsum_bf16:N=160 colsum_bf16:N=192 colsum_bf16:N=224 colsum_f32:N=48 colsum_f32:N=64 colsum_f32:N=96; do
    k=${c%%:*} s="M=262144,${c#*:}"
    for v in 22 23 25; do
      echo "$round v$v $k $s $($K run $W/mb $k --shape $s --variant $v --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $(NF-2)}')"
    done
  done
done | tee $W/interleaved.txt
tar czf $OUT/call7.tgz -C $W --exclude=mb .
