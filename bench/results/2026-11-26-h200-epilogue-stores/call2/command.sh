#!/usr/bin/env bash
# Device call 2: the GEMM sweep with the old and the new kiln (16-byte epilogue stores), ncu of
# the short-K GEMM, interleaved old/new timings of the pointwise cases the divisor change
# moved, the remaining end-to-end cases, sanitizers, and the Python suite's contraction tests.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
mkdir -p build/tools build/lib /tmp/old
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2" && chmod +x "$2"; }
unxz .carry/kiln.xz build/tools/kiln; unxz .carry/kiln_old.xz /tmp/old/kiln
tar xf .carry/lib.tar -C build
W=/tmp/w; mkdir -p $W; t0=$(date +%s)
el() { echo "($(( $(date +%s) - t0 )) s)"; }
# 1. GEMM sweep, new then old.
for which in new old; do
  bin=build/tools/kiln; [[ $which == old ]] && bin=/tmp/old/kiln
  PYTHONPATH=python KILN_BIN=$bin KILN_CACHE_DIR=/tmp/pc_$which KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
    timeout 100 python3 bench/experiments/gemm_sweep/sweep.py $W/gemm_sweep_$which.json > $W/gemm_sweep_$which.txt 2>&1
  echo "sweep $which: exit $? $(el)"
done
# 2. Nsight Compute on the short-K GEMM's default variant (v7), new and old.
for which in new old; do
  bin=build/tools/kiln; [[ $which == old ]] && bin=/tmp/old/kiln
  $bin compile bench/contraction.kiln -o $W/cb_$which --arch sm_90 > /dev/null
  timeout 60 ncu --clock-control none -k regex:gemm_s0_v7 -c 1 --section SpeedOfLight --section WarpStateStats \
    --section MemoryWorkloadAnalysis --metrics smsp__inst_executed.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum \
    $bin run $W/cb_$which gemm --shape M=8192,N=4096,K=256 --variant 7 --reps 1 --no-check > $W/ncu_k256_$which.txt 2>&1
  echo "ncu $which: exit $? $(el)"
done
# 3. Pointwise cases the divisor change moved: old and new interleaved, 3 rounds.
for which in old new; do
  bin=build/tools/kiln; [[ $which == old ]] && bin=/tmp/old/kiln
  $bin compile bench/memory_bound.kiln -o $W/mb_$which --arch sm_90 > /dev/null &
done; wait
for r in 1 2 3; do for c in "bias_gelu_tanh M=16384,N=8192" "bias_gelu_erf M=16384,N=8192" "heads_first B=8,S=2048,H=32,D=128" "add_pos B=32,S=2048,D=1024"; do
  for which in old new; do
    bin=build/tools/kiln; [[ $which == old ]] && bin=/tmp/old/kiln
    k=${c%% *}; s=${c#* }
    echo "$r $which $k $($bin run $W/mb_$which $k --shape $s --variant default --no-check --reps 200 2>&1 | grep -E '^ +v[0-9]+' | awk '{for(i=1;i<=NF;i++) if($i ~ /^[0-9.]+$/ && $(i+1) ~ /%$/) print $i}')"
  done; done; done | tee $W/pointwise_interleaved.txt
echo "interleaved $(el)"
# 4. End-to-end: the remaining examples with pointwise steps, the multi-axis reductions and the
# contractions, every variant.
export KILN_REQUIRE_GPU=1
ex="matmul global_max_norm reduction_suite"
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="$ex" KILN_GPU_SHARD=$i/8 timeout 200 tests/gpu/run_gpu_tests.sh build/tools/kiln $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $OUT/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30
echo "e2e $(el)"
# 5. memcheck on the new paths.
build/tools/kiln compile examples/matmul.kiln -o $W/mm > /dev/null
for c in "mm linear_relu M=512,N=768,K=64" "mm linear_relu M=1000,N=1000,K=100" "mm matmul_nt M=512,N=1024,K=512" "mb_new heads_first B=2,S=33,H=3,D=64" "mb_new bias_gelu_tanh M=1000,N=7"; do
  set -- $c
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 build/tools/kiln run $W/$1 $2 --shape $3 --variant default --reps 1 > $W/san_$2_$3.txt 2>&1
  echo "memcheck $2 $3: exit $?"
done
echo "sanitizers $(el)"
# 6. The Python package's contraction tests (torch references).
PYTHONPATH=python KILN_BIN=build/tools/kiln KILN_CACHE_DIR=/tmp/pc_new KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so KILN_REQUIRE_GPU=1 \
  timeout 120 python3 -m pytest -q -p no:cacheprovider python/tests/test_gpu_kernels.py -k "matmul or linear or scores" > $W/pytest.txt 2>&1
echo "pytest: exit $? $(tail -1 $W/pytest.txt) $(el)"
cp $W/gemm_sweep_*.txt $W/gemm_sweep_*.json $W/pointwise_interleaved.txt $W/e2e.txt $OUT/
tar czf $OUT/ncu_san.tgz -C $W $(cd $W && ls ncu_*.txt san_*.txt pytest.txt)
paste $W/gemm_sweep_new.txt $W/gemm_sweep_old.txt | awk -F'\t' '{print substr($1,1,120) " || old " substr($2, 60, 60)}'
grep -E 'Duration|Compute \(SM\) Throughput|Memory Throughput|gmma|Elapsed' $W/ncu_k256_*.txt
