#!/usr/bin/env bash
# Session 20, device call 4: outer reductions of few columns, split over the reduced extent.
# A build with three more split variants for the tuner (v28: the narrow split, 256 threads, 8
# steps in flight instead of 4; v29: 512 threads, 64 along the reduced index; v30: 128 threads,
# 8 steps), bench/memory_bound.kiln compiled for sm_90 beforehand (.carry/mb.tar.xz). Every
# variant at each shape (30 launches), then the rule's narrow split (v23) against v28 and v30,
# interleaved, 200 launches, three rounds; each new variant checked against the interpreter.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w4; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/mb.tar.xz -C $W
K=build/tools/kiln
cases="colsum_bf16:M=1048576,N=64 colsum_bf16:M=524288,N=128 colsum_bf16:M=262144,N=200 colsum_bf16:M=4194304,N=16 colsum_bf16:M=65536,N=2048 ln_wgrad:M=1048576,N=64 colsum_f32:M=1048576,N=32 colsum_f32:M=262144,N=128"
for c in $cases; do
  k=${c%%:*} s=${c#*:}
  for v in 28 29 30; do echo "check $k $s v$v: $($K run $W/mb $k --shape $s --variant $v --reps 1 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $3, $4}')"; done
  $K run $W/mb $k --shape $s --variant all --reps 30 --no-check --copy-baseline > $W/all_${k}_${s//[=,]/_}.txt 2>&1
  echo "== $k $s"; grep -E '^ *v[0-9]+|copy' $W/all_${k}_${s//[=,]/_}.txt | sort -k$(( 1 )) | awk '{print $1, $2, $3, $4, $5, $(NF-3), $NF}' | grep -E "split|copy"
done 2>&1 | tee $W/all.txt
for round in 1 2 3; do
  for c in colsum_bf16:M=1048576,N=64 colsum_bf16:M=524288,N=128 ln_wgrad:M=1048576,N=64 colsum_f32:M=1048576,N=32; do
    k=${c%%:*} s=${c#*:}
    for v in 23 28 30; do
      echo "$round v$v $k $s $($K run $W/mb $k --shape $s --variant $v --reps 200 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $(NF-2)}')"
    done
  done
done | tee $W/interleaved.txt
tar czf $OUT/call4.tgz -C $W --exclude=mb .
