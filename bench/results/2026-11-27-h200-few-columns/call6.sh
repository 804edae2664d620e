#!/usr/bin/env bash
# Session 21, device call 6 (an experiment, not submitted): the narrow split's shape now that its
# chunks sum plainly. Bundles of four outer kernels compiled beforehand with KILN_EXP_NARROW
# (a build that reads it; the variant stays v23): e1 128 threads, 16 along the reduced index, 8
# steps (the submitted config); e2 the same with 16 steps; e3 64 threads, 8 along, 16 steps; e4
# 256 threads, 32 along, 8 steps. Each checked against the interpreter at one shape, then v23
# timed interleaved (200 launches, two rounds).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w6; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/xb.tar.xz -C $W
K=build/tools/kiln
for b in e1 e2 e3 e4; do
  echo "check $b: $($K run $W/xb/$b colsum_bf16 --shape M=100003,N=64 --variant 23 --reps 1 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $(NF-4), $(NF-3)}') $($K run $W/xb/$b ln_wgrad --shape M=100003,N=40 --variant 23 --reps 1 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $(NF-4), $(NF-3)}')"
done | tee $W/checks.txt
for round in 1 2; do
  for c in colsum_bf16:M=1048576,N=64 colsum_bf16:M=4194304,N=16 colsum_bf16:M=524288,N=128 colsum_f32:M=1048576,N=32 ln_wgrad:M=1048576,N=64; do
    k=${c%%:*} s=${c#*:}
    for b in e1 e2 e3 e4; do
      echo "$round $b $k $s $($K run $W/xb/$b $k --shape $s --variant 23 --reps 200 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $(NF-2)}')"
    done
  done
done | tee $W/interleaved.txt
tar czf $OUT/call6.tgz -C $W --exclude=xb .
