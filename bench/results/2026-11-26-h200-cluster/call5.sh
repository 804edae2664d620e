#!/usr/bin/env bash
# Session 14, device call 5: the looped register epilogue (experiment build: v14 in clusters of two,
# v15 alone): correctness (kiln run's check, every variant of examples/matmul.kiln end to end),
# memcheck, then under sustained load beside cuBLAS (gemm_power/run.py, KILN_EXP_REMAP).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w5; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p /tmp/exp
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_exp.xz /tmp/exp/kiln && chmod +x /tmp/exp/kiln
cp .carry/libexp.so /tmp/exp/libkiln_runtime.so
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call5.tgz -C $W --exclude='cb' --exclude='e2e' --exclude='*.cubin' --exclude='*.ptx' . ; }
K=/tmp/exp/kiln
$K compile bench/contraction.kiln -o $W/cb --arch sm_90 > /dev/null; echo "compiled $(el)"
export KILN_REQUIRE_GPU=1
for c in "gemm --shape M=300,N=520,K=200" "gemm --shape M=257,N=4100,K=4095" "linear_bias_gelu --shape M=1000,N=1024,K=300" "linear_bias_gelu --shape M=129,N=512,K=64"; do
  for v in 14 15; do echo "== v$v $c"; timeout 120 $K run $W/cb $c --variant $v --reps 3 2>&1 | tail -1; done
done > $W/smoke.txt 2>&1; grep -c " ok " $W/smoke.txt; grep -v " ok " $W/smoke.txt | grep -v "^==" | head; echo "smoke $(el)"; pack
for i in 0 1 2 3 4 5 6 7; do
  KILN_GPU_EXAMPLES="matmul" KILN_GPU_SHARD=$i/8 timeout 280 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
for c in "linear_bias_gelu M=1000,N=1024,K=300" "linear_bias_gelu M=129,N=520,K=64" "gemm M=257,N=1000,K=333"; do set -- $c; for v in 14 15; do timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/cb $1 --shape $2 --variant $v --reps 1 > $W/san_$1_$2_$v.txt 2>&1; echo "memcheck $c v$v: exit $?"; done; done | tee $W/sanitizers.txt
PYTHONPATH=python KILN_BIN=$K KILN_RUNTIME_LIB=/tmp/exp/libkiln_runtime.so KILN_CACHE_DIR=/tmp/pc \
  timeout 400 python3 bench/experiments/gemm_power/run.py $W/power "; 11:13; 7:14,11:14; 7:15,11:15; 7:12" > $W/power.txt 2>&1
echo "power exit $? $(el)"; sed -n '/^case/,$p' $W/power.txt; pack
