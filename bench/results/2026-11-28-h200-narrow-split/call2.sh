#!/usr/bin/env bash
# Session 22, device call 2: a weight read along a shifted row (w[j] of a layernorm or rmsnorm
# whose rows are not a multiple of the vector) as two aligned vectors picked by the shift
# (ReductionLowering::load_shifted), where each lane loaded one element. norms.kiln (beside
# this script) compiled for sm_90 by the kiln before the change (old: main at 4148fe0's row
# code) and after (new); the kiln carried is the new one.
#  1. Every variant of both bundles at odd shapes, interleaved by shape, 30 launches each
#     (only the shifting twins, shift=1, differ).
#  2. Every variant of the new bundle checked against the interpreter at small awkward shapes.
#  3. compute-sanitizer memcheck on the new shifting twins the rule runs.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w2; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xJf .carry/norms.tar.xz -C $W
K=build/tools/kiln
pack() { tar czf $OUT/call2.tgz -C $W --exclude=old --exclude=new . ; }
t0=$(date +%s)
for c in layernorm_f32:M=16383,N=1023 layernorm_f32:M=4095,N=4097 layernorm_f32:M=65535,N=255 \
         layernorm_bf16:M=16383,N=4095 layernorm_bf16:M=8191,N=1025 rmsnorm_bf16:M=16383,N=4095 \
         rmsnorm_bf16:M=65535,N=511 add_rmsnorm:M=16383,N=4095; do
  k=${c%%:*} s=${c#*:}
  for b in old new; do
    echo "== $b $k $s"
    $K run $W/$b $k --shape $s --variant all --reps 30 --no-check --copy-baseline
  done
done > $W/timing.txt 2>&1
echo "timing $(( $(date +%s) - t0 )) s"; pack
fails=0
for k in layernorm_f32 layernorm_bf16 rmsnorm_bf16 add_rmsnorm; do
  for s in M=1,N=9 M=5,N=17 M=7,N=31 M=3,N=1023 M=9,N=4097 M=2,N=20001; do
    $K run $W/new $k --shape $s --variant all --reps 1 > $W/check_${k}_${s//[=,]/_}.txt 2>&1 || { echo "FAIL $k $s"; fails=$((fails+1)); }
  done
done > $W/check.txt
echo "checked: $fails failed" | tee -a $W/check.txt
echo "check $(( $(date +%s) - t0 )) s"; pack
for c in layernorm_f32:M=4099,N=1023 layernorm_bf16:M=1001,N=4095 rmsnorm_bf16:M=3001,N=511 add_rmsnorm:M=1001,N=4097 layernorm_f32:M=333,N=20001; do
  k=${c%%:*} s=${c#*:}
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/new $k --shape $s --reps 1 > $W/san_${k}_${s//[=,]/_}.txt 2>&1
  echo "memcheck $k $s exit $? $(grep -E 'ERROR SUMMARY' $W/san_${k}_${s//[=,]/_}.txt | head -1) $(grep -E '^ *v[0-9]+' $W/san_${k}_${s//[=,]/_}.txt | awk '{print $1, $(NF-4)}')"
done | tee $W/sanitizer.txt
echo "sanitizer $(( $(date +%s) - t0 )) s"; pack
