#!/usr/bin/env bash
# Session 19, device call 2, the build that picks the register epilogue for approximated
# tanh and erf: (a) bench/contraction.py, every case, Kiln beside cuBLAS and torch.compile;
# (b) the memory-bound suite's bias + erf-GELU beside torch; (c) the GELU GEMM's default
# against v11 (staged) and the plain GEMM, interleaved, at both shapes.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w2; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xf .carry/lib.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W --exclude='*.bundle' --exclude='bc' --exclude='bmb' --exclude='*.cubin' --exclude='*.ptx' . ; }
K=build/tools/kiln
# (a)
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 330 python3 bench/contraction.py $W/contraction > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $? $(el)"
grep -E '^(gemm|bmm|bias|rmsnorm)' $W/contraction_bench.txt; pack
# (c)
$K compile bench/contraction.kiln -o $W/bc --arch sm_90 > /dev/null
for s in M=8192,N=4096,K=4096 M=2048,N=11008,K=4096; do
  for rep in 1 2; do
    for kv in linear_bias_gelu:default linear_bias_gelu:11 gemm:default; do
      $K run $W/bc ${kv%:*} --shape $s --variant ${kv#*:} --reps 30 --no-check 2>&1 | grep -E '^ *v[0-9]+' |
        awk -v k=${kv%:*} -v s=$s '{print k, s, $1, $(NF-2)}'
    done
  done
done | tee $W/gelu_default.txt; echo "defaults $(el)"; pack
# (b)
$K compile bench/memory_bound.kiln -o $W/bmb > /dev/null
BENCH_BUNDLE=$W/bmb BENCH_REPS=30 timeout 150 bench/memory_bound.sh $K $W/mb bias_gelu_erf bias_gelu_tanh > $W/mb.txt 2>&1
echo "memory-bound: exit $? $(el)"; tail -6 $W/mb.txt; pack
