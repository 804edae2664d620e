#!/usr/bin/env bash
# Session 20, device call 2: where the split row scan's thread 0 takes its next ticket, and the
# look-back's pause between polls. Bundles of examples/scan.kiln for sm_90 compiled beforehand
# by four builds (.carry/bundles.tar.xz): old (the committed build: the ticket once the carry is
# known), t1 (the ticket before the look-back, its round trip under the polls), t2 (the ticket
# at the start of the round, before B's loads), p (t1 with 32 ns between polls instead of 100).
# Each default at each shape, 200 launches, the four builds in turn, three rounds.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w2; mkdir -p $W/b
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/bundles.tar.xz -C $W/b
K=build/tools/kiln
cases="cumsum_row:N=67108864 cumsum_row:N=16777216 cumsum_row:N=67108863 cumsum_rows:M=8,N=8388608 cumsum_rows:M=64,N=1048576 cumsum_bf16:M=4,N=16777216 cumsum_fused:M=8,N=8388608"
for round in 1 2 3; do
  for c in $cases; do
    k=${c%%:*} s=${c#*:}
    for b in old t1 t2 p; do
      t=$($K run $W/b/$b $k --shape $s --variant default --reps 200 --no-check 2>&1 | grep -E '^ *v[0-9]+' | head -1 | awk '{print $(NF-2)}')
      echo "$round $b $k $s $t" | tee -a $W/interleaved.txt
    done
  done
done
# Every build's default checked against the interpreter once at two shapes.
for b in old t1 t2 p; do
  for s in N=67108864 N=100003; do
    echo "$b $s $($K run $W/b/$b cumsum_row --shape $s --variant default --reps 1 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $3, $4}')"
  done
done | tee $W/checks.txt
tar czf $OUT/call2.tgz -C $W --exclude=b .
