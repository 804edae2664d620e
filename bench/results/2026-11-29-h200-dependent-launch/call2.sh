#!/usr/bin/env bash
# Session 30, device call 2. Call 1's A/B compiled --default-only bundles, in which the
# heuristic's pick is often missing (a reduction then ran its first tier, e.g. a 2^26 row in
# 11 ms): its multi-launch timings measure the wrong variants. Here:
# (a) A/B on bundles of every variant (sm_90; the memory-bound kernels with several launches
#     extracted from bench/memory_bound.kiln), the heuristic's pick, 100 launches, two rounds
#     interleaved: dependent launches (new) against the same binary with
#     KILN_DEPENDENT_LAUNCH=0 (off) -- call 1 showed single-launch kernels level across new,
#     off and the build before (old);
# (b) bench/contraction.py --only rmsnorm and the GEMM of the same shape: Kiln (dependent
#     launches on) beside cuBLAS and torch.compile(mode="max-autotune-no-cudagraphs").
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
tar xf .carry/lib.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call2 && cp $W/*.txt $OUT/call2/ 2>/dev/null; }
python3 - bench/memory_bound.kiln $W/multi.kiln total_f32 colsum_bf16 softmax_f32 layernorm_f32 rmsnorm_bf16 logsumexp_bf16 <<'PY'
import re, sys
src, dst, names = sys.argv[1], sys.argv[2], sys.argv[3:]
text = open(src).read()
blocks = re.findall(r"^kernel (\w+)\(.*?^}\n", text, flags=re.S | re.M)
out = [m.group(0) for m in re.finditer(r"^kernel (\w+)\(.*?^}\n", text, flags=re.S | re.M) if m.group(1) in names]
assert len(out) == len(names), (len(out), names)
open(dst, "w").write("\n".join(out))
PY
$K compile $W/multi.kiln -o $W/mb --arch sm_90 -j 16 > /dev/null &
$K compile bench/contraction.kiln -o $W/bc --arch sm_90 -j 16 > /dev/null &
$K compile examples/global_max_norm.kiln -o $W/gm --arch sm_90 -j 16 > /dev/null &
wait; echo "compiled $(el)"
cases=("bc rmsnorm_linear M=8192,N=4096,K=4096" "bc rmsnorm_linear M=2048,N=4096,K=4096"
  "bc rmsnorm_linear M=1024,N=1024,K=1024" "bc rmsnorm_linear M=4096,N=11008,K=4096"
  "mb total_f32 M=1,N=67108864" "mb total_f32 M=1,N=1048576" "mb colsum_bf16 M=4194304,N=16"
  "mb colsum_bf16 M=1048576,N=64" "mb softmax_f32 M=4,N=1048576" "mb layernorm_f32 M=4,N=1048576"
  "mb rmsnorm_bf16 M=2,N=1000000" "mb logsumexp_bf16 M=8,N=262144"
  "gm global_max_norm M=8192,N=8192" "gm global_max_norm M=1000,N=1000")
ab() {
  for c in "${cases[@]}"; do
    set -- $c
    for b in new off; do
      t=$( ([ $b = off ] && export KILN_DEPENDENT_LAUNCH=0; $K run $W/$1 $2 --shape $3 --variant default --reps 100 --no-check 2>&1) | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')
      echo "round $2 $3 $b $t"
    done
  done
}
ab | sed "s/^round/round 1/" | tee $W/ab.txt; echo "ab1 $(el)"; pack
ab | sed "s/^round/round 2/" | tee -a $W/ab.txt; echo "ab2 $(el)"; pack
# (b)
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 330 python3 bench/contraction.py $W/contraction --only rmsnorm "gemm 8192x4096x4096" > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $? $(el)"
grep -E '^(gemm|rmsnorm)' $W/contraction_bench.txt
cp $W/contraction/contraction.json $W/contraction.json.txt 2>/dev/null; pack
