#!/usr/bin/env bash
# Session 20, device call 6 (on the H100 that call 5 got): the new narrow split (v23) against
# the old one (v28), interleaved, 200 launches, two rounds, bench/memory_bound.kiln of call 5.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
W=/tmp/w6; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
[[ -x build/tools/kiln ]] || { mkdir -p build/tools; python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln; }
[[ -d /tmp/w5/mb ]] || { mkdir -p /tmp/w5; tar xJf .carry/mb.tar.xz -C /tmp/w5; }
K=build/tools/kiln
for round in 1 2; do
  for c in colsum_bf16:M=1048576,N=64 colsum_bf16:M=4194304,N=16 ln_wgrad:M=1048576,N=64 colsum_f32:M=1048576,N=32; do
    k=${c%%:*} s=${c#*:}
    for v in 28 23; do
      echo "$round v$v $k $s $($K run /tmp/w5/mb $k --shape $s --variant $v --reps 200 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $(NF-2)}')"
    done
  done
done | tee $W/interleaved.txt
tar czf $OUT/call6.tgz -C $W .
