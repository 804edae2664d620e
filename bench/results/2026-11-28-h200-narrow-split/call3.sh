#!/usr/bin/env bash
# Session 22, device call 3: where 16 steps in flight start to beat 8 in the narrow split.
# The narrow split v23 of cs.kiln as compiled by main's kiln (cs8: 8 steps) and the branch
# next/narrow-split-16's (cs16: 16 steps), the same bundles as call 1, at M from 32768 to
# 4194304, three rounds, interleaved, 200 launches each.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w3; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/cs.tar.xz -C $W
K=build/tools/kiln
t0=$(date +%s)
for round in 1 2 3; do
  for c in colsum_bf16:N=16 colsum_bf16:N=64 colsum_bf16:N=128 colsum_f32:N=32 ln_wgrad:N=64; do
    k=${c%%:*} n=${c#*:}
    for m in 32768 65536 131072 262144 524288 1048576 4194304; do
      for b in cs8 cs16; do
        echo "$round $b $k M=$m,$n $($K run $W/$b $k --shape M=$m,$n --variant 23 --reps 200 --no-check | awk '/^ *v23/ {print $(NF-2)}')"
      done
    done
  done
done | tee $W/deep.txt
echo "deep $(( $(date +%s) - t0 )) s"
tar czf $OUT/call3.tgz -C $W --exclude=cs8 --exclude=cs16 .
