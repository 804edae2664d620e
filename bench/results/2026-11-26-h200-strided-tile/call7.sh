#!/usr/bin/env bash
# Device call 7: the committed build (call 6's, plus the scalar strided variant for rows of up to
# 256 elements, the first of the three). Every variant of examples/strided.kiln end to end, the
# Python package's strided tests, the sanitizers on the short rows' variant, those rows timed
# with the previous binary and this one, and more than 2^31 elements through the tile checked
# against torch (big_check.py). Logs in $OUT/call7.tgz.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w7; mkdir -p $W
R=bench/results/2026-11-26-h200-strided-tile
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools build/lib
for b in kiln kiln_old; do
  python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/$b.xz build/tools/$b && chmod +x build/tools/$b
done
tar xf .carry/lib.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call7.tgz -C $W --exclude='sb' --exclude='sb_old' --exclude='e2e' . ; }
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
{ for c in "layernorm_strided --shape M=1000,N=33" "layernorm_strided_f32 --shape M=37,N=256 --strides=x=1,40" \
           "layernorm_strided --shape M=24,N=2049" "layernorm_strided_f32 --shape M=8,N=2048 --strides=x=1,8"; do
    for tool in memcheck racecheck synccheck; do
      echo "== $tool $c"
      timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/sb $c --variant default --reps 1 2>&1 | tail -4
      echo "exit $?"
    done
  done
} > $W/sanitizers.txt 2>&1; grep -c "exit 0" $W/sanitizers.txt; grep -B3 "exit [1-9]" $W/sanitizers.txt | head; echo "sanitizers $(el)"; pack
for c in "layernorm_strided_f32 --shape M=65536,N=256" "layernorm_strided --shape M=65536,N=256" \
         "layernorm_strided --shape M=131072,N=128 --strides=x=1,131072" "layernorm_strided --shape M=32768,N=1000"; do
  for b in kiln_old kiln; do
    bundle=$W/sb; [[ $b == kiln_old ]] && bundle=$W/sb_old
    echo "== $b $c"
    timeout 60 build/tools/$b run $bundle $c --variant default --copy-baseline --reps 30 --no-check 2>&1 | tail -2
  done
done > $W/old_new.txt 2>&1; grep -E "==|v[0-9]" $W/old_new.txt | paste - - | awk '{print $2, $3, $4, $5, $6, $(NF-3)}'; echo "old/new $(el)"; pack
PYTHONPATH=python KILN_BIN=$K KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 200 python3 $R/big_check.py $W/sb > $W/big.txt 2>&1; echo "exit $?" >> $W/big.txt
tail -3 $W/big.txt; echo "big $(el)"; pack
