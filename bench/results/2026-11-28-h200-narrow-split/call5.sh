#!/usr/bin/env bash
# Session 22, device call 5: the submitted build's narrow split (v23, 8 steps in flight) against
# its deep split (v29, 16 steps) on an H200 at the lengths around the rule's threshold (65536
# reduced rows), two rounds, interleaved, 200 launches each (csd: cs.kiln compiled by the
# submitted kiln for sm_90, as in call 4).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader
W=/tmp/w5; mkdir -p $W build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/csd.tar.xz -C $W
K=build/tools/kiln
for round in 1 2; do
  for c in colsum_bf16:N=16 colsum_bf16:N=64 colsum_f32:N=32 ln_wgrad:N=64; do
    k=${c%%:*} n=${c#*:}
    for m in 32768 65536 262144; do
      for v in 23 29; do
        echo "$round v$v $k M=$m,$n $($K run $W/csd $k --shape M=$m,$n --variant $v --reps 200 --no-check | awk '/^ *v[0-9]/ {print $(NF-2)}')"
      done
    done
  done
done
