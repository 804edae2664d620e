#!/usr/bin/env bash
# Session 14, device call 1: contraction variants in clusters of two blocks sharing B's tiles
# through TMA multicast (gemm v12, linear_bias_gelu v13) beside the same tiles alone (v7, v11):
# correctness first (kiln run's check at awkward shapes, every variant of examples/matmul.kiln
# end to end, the sanitizers), then interleaved timings and Nsight Compute.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w1; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools build/lib
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xf .carry/lib.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W --exclude='cb' --exclude='mm' --exclude='e2e' --exclude='*.cubin' --exclude='*.ptx' . ; }
K=build/tools/kiln
$K compile bench/contraction.kiln -o $W/cb --arch sm_90 > /dev/null &
$K compile examples/matmul.kiln -o $W/mm --arch sm_90 > /dev/null &
wait; echo "compiled $(el)"
export KILN_REQUIRE_GPU=1
for c in "gemm --shape M=300,N=520,K=200" "gemm --shape M=1,N=17,K=1000" "gemm --shape M=129,N=256,K=64" "gemm --shape M=1000,N=4096,K=333" "gemm --shape M=257,N=4100,K=4095"; do
  for v in 7 12; do
    echo "== v$v $c"; timeout 120 $K run $W/cb $c --variant $v --reps 3 2>&1 | tail -2
  done
done > $W/smoke.txt 2>&1; grep -E "==|v[0-9]+ " $W/smoke.txt; echo "smoke $(el)"; pack
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="matmul" KILN_GPU_SHARD=$i/8 timeout 300 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
for r in 1 2; do
  for c in "gemm M=8192,N=4096,K=4096" "gemm M=4096,N=4096,K=4096" "gemm M=8192,N=8192,K=8192" "gemm M=8192,N=4096,K=512" "gemm M=6144,N=4096,K=4096" "gemm M=4095,N=4096,K=4096" "bmm B=16,M=2048,N=2048,K=512" "linear_bias_gelu M=8192,N=4096,K=4096" "linear_bias_gelu M=2048,N=11008,K=4096" "rmsnorm_linear M=8192,N=4096,K=4096"; do
    set -- $c
    vs="7 12"; [[ $1 == linear_bias_gelu ]] && vs="11 13 7 12"
    for v in $vs; do
      echo "$r $1 $2 v$v $(timeout 100 $K run $W/cb $1 --shape $2 --variant $v --no-check --reps 100 2>&1 | grep -E "^ +v$v" | awk '{print $(NF-2)}')"
    done
  done
done > $W/timings.txt 2>&1; cat $W/timings.txt; echo "timings $(el)"; pack
for c in "gemm M=300,N=520,K=200 12" "gemm M=257,N=1000,K=4095 12" "linear_bias_gelu M=300,N=512,K=100 13"; do
  set -- $c
  for tool in memcheck racecheck synccheck; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/cb $1 --shape $2 --variant $3 --reps 1 > $W/san_${tool}_$1_$2.txt 2>&1
    echo "$tool $c: exit $?"
  done
done | tee $W/sanitizers.txt; echo "sanitizers $(el)"; pack
for v in 7 12; do
  timeout 120 ncu --clock-control none -k regex:gemm_s0_v$v -c 1 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_sectors_srcunit_tex.sum,lts__t_bytes.sum \
    $K run $W/cb gemm --shape M=8192,N=4096,K=4096 --variant $v --reps 1 --no-check > $W/ncu_v$v.txt 2>&1
  echo "ncu v$v exit $?"; grep -E "Duration|L2 Cache Throughput|DRAM Throughput|Compute \(SM\)|gmma_cycles|lts__t_bytes|SM Frequency" $W/ncu_v$v.txt
done; echo "ncu $(el)"; pack
