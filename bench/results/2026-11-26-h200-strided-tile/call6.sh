#!/usr/bin/env bash
# Device call 6: the build to commit (call 3's, with two strided variants: 256 threads for rows
# of up to 2048 elements, 512 with at most 64 registers for longer ones). Every variant of
# examples/strided.kiln end to end, the Python package's strided tests, memcheck, racecheck and
# synccheck on the tiled variant, the strided layernorms beside torch eager and torch.compile
# (bench/everyday.sh), the previous binary (kiln_old, session 12's) on the same cases, and
# Nsight Compute on two of them. Logs in $OUT/call6.tgz.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w6; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools build/lib
for b in kiln kiln_old; do
  python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/$b.xz build/tools/$b && chmod +x build/tools/$b
done
tar xf .carry/lib.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call6.tgz -C $W --exclude='sb' --exclude='sb_old' --exclude='e2e' --exclude='everyday/strided' --exclude='*.cubin' --exclude='*.ptx' . ; }
K=build/tools/kiln; KO=build/tools/kiln_old
$K compile examples/strided.kiln -o $W/sb > /dev/null; $KO compile examples/strided.kiln -o $W/sb_old > /dev/null
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="strided" KILN_GPU_SHARD=$i/8 timeout 150 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done
PYTHONPATH=python KILN_BIN=$K KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so KILN_CACHE_DIR=/tmp/pc \
  timeout 150 python3 -m pytest -q python/tests/test_gpu_kernels.py -k "strided" > $W/python.txt 2>&1 &
wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -20; tail -3 $W/python.txt; echo "e2e, python $(el)"; pack
{ for c in "layernorm_strided --shape M=37,N=1001" "layernorm_strided --shape M=9,N=4096 --strides=x=4099,1" \
           "layernorm_strided_f32 --shape M=13,N=24" "layernorm_strided --shape M=3,N=100003" \
           "layernorm_strided --shape M=64,N=1000 --strides=x=1,64" "layernorm_strided_f32 --shape M=16,N=4097 --strides=x=1,16" \
           "layernorm_strided_f32 --shape M=17,N=4096 --strides=x=1,0" "layernorm_strided --shape M=24,N=4096" \
           "layernorm_strided --shape M=32,N=4096 --strides=x=1,32" "layernorm_strided_f32 --shape M=9,N=2049 --strides=x=2051,1"; do
    for tool in memcheck racecheck synccheck; do
      echo "== $tool $c"
      timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/sb $c --variant default --reps 1 2>&1 | tail -4
      echo "exit $?"
    done
  done
} > $W/sanitizers.txt 2>&1; grep -c "exit 0" $W/sanitizers.txt; grep -B3 "exit [1-9]" $W/sanitizers.txt | head; echo "sanitizers $(el)"; pack
BENCH_REPS=30 BENCH_KERNELS="layernorm_strided layernorm_strided_f32" BENCH_TORCH="layernorm" \
  timeout 420 bench/everyday.sh $K $W/everyday > $W/everyday.txt 2>&1; echo "everyday exit $?"
grep -E "^\|" $W/everyday.txt; echo "everyday $(el)"; pack
for c in "layernorm_strided --shape M=16384,N=4096" "layernorm_strided --shape M=16384,N=4096 --strides=x=4099,1" \
         "layernorm_strided --shape M=16384,N=4096 --strides=x=1,16384" "layernorm_strided_f32 --shape M=16384,N=4096" \
         "layernorm_strided --shape M=32768,N=1000" "layernorm_strided --shape M=8192,N=8192" \
         "layernorm_strided --shape M=4096,N=16384" "layernorm_strided_f32 --shape M=65536,N=256"; do
  for b in kiln_old kiln; do
    bundle=$W/sb; [[ $b == kiln_old ]] && bundle=$W/sb_old
    echo "== $b $c"
    timeout 60 build/tools/$b run $bundle $c --variant default --copy-baseline --reps 30 --no-check 2>&1 | tail -2
  done
done > $W/old_new.txt 2>&1; grep -E "==|v[0-9]" $W/old_new.txt | paste - - | awk '{print $2, $3, $4, $5, $6, $(NF-3)}'; echo "old/new $(el)"; pack
# The two strided variants on both sides of their limit (2048), forced.
for n in 1024 2048 3072; do
  for v in 54 55; do
    for k in layernorm_strided layernorm_strided_f32; do
      r=$(timeout 60 $K run $W/sb $k --shape M=$((67108864 / n)),N=$n --variant $v --reps 30 --no-check 2>&1 | grep "v$v" | awk '{print $(NF-2)}')
      echo "$k M=$((67108864 / n)) N=$n v$v: $r us"
    done
  done
done > $W/limit.txt 2>&1; cat $W/limit.txt; echo "limit $(el)"; pack
# More than 2^31 elements: 262152 x 8200 bf16 over a transposed view, checked.
timeout 240 $K run $W/sb layernorm_strided --shape M=262152,N=8200 --variant default --reps 1 > $W/big.txt 2>&1; echo "exit $?" >> $W/big.txt
tail -4 $W/big.txt; echo "big $(el)"; pack
for c in "layernorm_strided --shape M=16384,N=4096" "layernorm_strided --shape M=16384,N=4096 --strides=x=1,16384"; do
  echo "== ncu $c"
  timeout 100 ncu --kernel-name regex:layernorm_strided_s0 --launch-count 1 --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
    $K run $W/sb $c --variant default --reps 1 --no-check 2>&1
done > $W/ncu.txt 2>&1
grep -E "==|DRAM Throughput|L2 Cache Throughput|Compute \(SM\)|Achieved Occupancy|Duration|Hit Rate" $W/ncu.txt; echo "ncu $(el)"; pack
