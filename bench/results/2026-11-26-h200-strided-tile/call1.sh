#!/usr/bin/env bash
# Device call 1 (thirteenth session): the strided variant's tile (compiler/lower/
# reduction_rows.cpp, step 4c). Every variant of examples/strided.kiln end to end, the Python
# package's strided-view tests, memcheck, racecheck and synccheck on the tiled variant
# (transposed, padded rows, rows that are not whole vectors, a tile that does not fit), the
# strided layernorms timed with the previous binary (kiln_old: session 12's) and this one in
# the same call, and Nsight Compute on the new 16K x 4K bf16 one. Logs in $OUT/call1.tgz.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w1; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools build/lib
for b in kiln kiln_old; do
  python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/$b.xz build/tools/$b && chmod +x build/tools/$b
done
tar xf .carry/lib.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W --exclude='sb' --exclude='sb_old' --exclude='e2e' . ; }
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
# Sanitizers on the tiled variant (the rule runs it for these strides; checked against the
# interpreter as well).
{ for c in "layernorm_strided --shape M=37,N=1001" "layernorm_strided --shape M=9,N=4096 --strides=x=4099,1" \
           "layernorm_strided_f32 --shape M=13,N=24" "layernorm_strided --shape M=3,N=100003" "layernorm_strided_f32 --shape M=17,N=4096 --strides=x=1,0"; do
    for tool in memcheck racecheck synccheck; do
      echo "== $tool $c"
      timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/sb $c --variant default --reps 1 2>&1 | tail -4
      echo "exit $?"
    done
  done
} > $W/sanitizers.txt 2>&1; grep -c "exit 0" $W/sanitizers.txt; grep -B3 "exit [1-9]" $W/sanitizers.txt | head; echo "sanitizers $(el)"; pack
# Old against new, same call: the default the rule runs (the strided variant), 30 launches.
for c in "layernorm_strided --shape M=16384,N=4096" "layernorm_strided --shape M=16384,N=4096 --strides=x=4099,1" \
         "layernorm_strided_f32 --shape M=16384,N=4096" "layernorm_strided --shape M=32768,N=1000" \
         "layernorm_strided --shape M=8192,N=8192" "layernorm_strided --shape M=4096,N=16384" \
         "layernorm_strided --shape M=16384,N=4096 --strides=x=contiguous"; do
  for b in kiln_old kiln; do
    bundle=$W/sb; [[ $b == kiln_old ]] && bundle=$W/sb_old
    echo "== $b $c"
    timeout 120 build/tools/$b run $bundle $c --variant default --copy-baseline --reps 30 --no-check 2>&1 | tail -3
  done
done > $W/old_new.txt 2>&1; cat $W/old_new.txt | grep -E "==|v[0-9]|copy"; echo "old/new $(el)"; pack
timeout 150 ncu --kernel-name regex:layernorm_strided_s0 --launch-count 1 --section SpeedOfLight \
  --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
  $K run $W/sb layernorm_strided --shape M=16384,N=4096 --variant default --reps 1 --no-check > $W/ncu.txt 2>&1
grep -E "Throughput|Bank|Achieved Occupancy|Registers|Stall|Duration|Shared Memory" $W/ncu.txt | head -40; echo "ncu $(el)"; pack
