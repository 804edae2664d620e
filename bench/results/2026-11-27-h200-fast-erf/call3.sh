#!/usr/bin/env bash
# Session 19, device call 3: (a) the erf-GELU GEMM's epilogues under sustained load (2000
# launches each, interleaved twice: v7 registers in clusters, v11 staged, v13 staged in
# clusters, and the plain GEMM), with the SM clock and board power sampled every 100 ms;
# (b) issue 20's four cases beside torch in one run (bench/everyday.sh).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w3; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call3.tgz -C $W --exclude='bc' --exclude='every/*/' . ; }
K=build/tools/kiln
# (a)
$K compile bench/contraction.kiln -o $W/bc --arch sm_90 > /dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 > $W/power.csv &
smi=$!
for s in M=8192,N=4096,K=4096 M=2048,N=11008,K=4096; do
  for rep in 1 2; do
    for kv in linear_bias_gelu:7 linear_bias_gelu:11 linear_bias_gelu:13 gemm:default; do
      echo "start ${kv%:*} $s ${kv#*:} $(date +%H:%M:%S.%N)" >> $W/windows.txt
      $K run $W/bc ${kv%:*} --shape $s --variant ${kv#*:} --reps 2000 --no-check 2>&1 | grep -E '^ *v[0-9]+' |
        awk -v k=${kv%:*} -v s=$s '{print k, s, $1, $(NF-2)}'
      echo "end ${kv%:*} $s ${kv#*:} $(date +%H:%M:%S.%N)" >> $W/windows.txt
    done
  done
done | tee $W/sustained.txt; kill $smi; echo "sustained $(el)"; pack
# (b)
BENCH_REPS=30 BENCH_KERNELS="cross_entropy embedding cumsum_rows cumsum_row dropout_bf16" \
  BENCH_TORCH="cross_entropy embedding cumsum dropout" timeout 400 bench/everyday.sh $K $W/every > $W/every.txt 2>&1
echo "everyday: exit $? $(el)"; tail -9 $W/every.txt; pack
