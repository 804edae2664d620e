#!/usr/bin/env bash
# Session 23, device call 5: short outer reductions beside torch in one run. Kiln: cs.kiln
# compiled by main's kiln at 296ab7f (main/) and by the submitted one, 272af69 (new/), the
# rule's default, 200 launches, checked against the interpreter (new/), two rounds; then
# torch_short.py (eager and torch.compile max-autotune-no-cudagraphs, checked first).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w5; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/cs.tar.xz -C $W
K=build/tools/kiln
D=bench/results/2026-11-28-h200-short-outer
t0=$(date +%s)
cases=$(python3 -c "import sys; sys.path.insert(0,'$D'); import torch_short as t; print(' '.join(k+':'+s for _,k,s in t.CASES))")
for round in 1 2; do
  for c in $cases; do
    k=${c%%:*} s=${c#*:}
    echo "kiln $k $s main $round $($K run $W/main $k --shape $s --variant default --reps 200 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-2)}')"
    echo "kiln $k $s new $round $($K run $W/new $k --shape $s --variant default --reps 200 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-4), $(NF-2)}')"
  done
done | tee $W/kiln.txt
echo "kiln $(( $(date +%s) - t0 )) s"
tar czf $OUT/call5.tgz -C $W --exclude=main --exclude=new .
timeout 400 python3 $D/torch_short.py $W/torch.json 2>&1 | grep -v Warning | tee $W/torch.txt
echo "torch $(( $(date +%s) - t0 )) s"
tar czf $OUT/call5.tgz -C $W --exclude=main --exclude=new .
