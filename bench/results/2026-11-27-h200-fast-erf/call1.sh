#!/usr/bin/env bash
# Session 19, device call 1: erf as tanh.approx.f32 of a polynomial in 16-bit steps and
# contraction epilogues. (a) its error over every f32 input; (b) the bias + erf-GELU GEMM
# epilogue, every variant, this build (kiln) against the previous one (kiln_old), interleaved;
# (c) the memory-bound bias + erf-GELU, every variant, both builds; (d) end to end every
# variant of the changed examples; (e) memcheck on the changed defaults.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w1; mkdir -p $W/c $W/mb
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2" && chmod +x "$2"; }
mkdir -p build/tools; unxz .carry/kiln.xz build/tools/kiln; unxz .carry/kiln_old.xz build/tools/kiln_old
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call1.tgz gpu.txt *.txt c mb erf $(ls -d e2e/*/*.txt 2>/dev/null)); }
K=build/tools/kiln; KO=build/tools/kiln_old
for k in kiln kiln_old; do
  build/tools/$k compile bench/contraction.kiln -o $W/bc_$k --arch sm_90 > /dev/null &
  build/tools/$k compile bench/memory_bound.kiln -o $W/bmb_$k > /dev/null &
done
for ex in bias_gelu gelu_tanh erf matmul; do $K compile examples/$ex.kiln -o $W/pre/$ex > /dev/null & done
bench/experiments/erf_approx/run.sh $W/erf > $W/erf_run.txt 2>&1; echo "erf_approx: exit $? $(el)"; cat $W/erf/erf_approx.txt
wait; echo "compiled $(el)"; pack
# (b)
$K run $W/bc_kiln linear_bias_gelu --shape M=1000,N=1024,K=256 --variant default --reps 1 > $W/c/check.txt 2>&1; echo "check: exit $?"
for s in M=8192,N=4096,K=4096 M=2048,N=11008,K=4096; do
  for k in kiln kiln_old kiln kiln_old; do
    build/tools/$k run $W/bc_$k linear_bias_gelu --shape $s --variant all --reps 30 --no-check 2>&1 |
      grep -E '^ *v[0-9]+' | awk -v k=$k -v s=$s '{print k, s, $0}' >> $W/c/gelu_all.txt
  done
  build/tools/kiln run $W/bc_kiln gemm --shape $s --variant default --reps 30 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk -v s=$s '{print "gemm", s, $0}' >> $W/c/gelu_all.txt
done
echo "contraction $(el)"; pack
# (c)
$K run $W/bmb_kiln bias_gelu_erf --shape M=4096,N=4160 --variant default --reps 1 > $W/mb/check.txt 2>&1; echo "check mb: exit $?"
for k in kiln kiln_old kiln kiln_old; do
  build/tools/$k run $W/bmb_$k bias_gelu_erf --shape M=16384,N=8192 --variant all --reps 30 --no-check --copy-baseline 2>&1 |
    grep -E '^ *v[0-9]+|copy' | awk -v k=$k '{print k, $0}' >> $W/mb/mb_all.txt
done
echo "memory-bound $(el)"; pack
# (d)
export KILN_REQUIRE_GPU=1
EX="bias_gelu gelu_tanh erf matmul"
for i in 0 1 2 3 4 5 6 7; do
  mkdir -p $W/e2e/$i/bundles; cp -r $W/pre/* $W/e2e/$i/bundles/
  KILN_GPU_EXAMPLES="$EX" KILN_GPU_SHARD=$i/8 timeout 240 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt; rm -f $W/e2e_[0-7].txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"; pack
# (e)
for c in "erf erf_f16 N=1001 default" "bias_gelu bias_gelu M=4097,N=33 default" "matmul linear_gelu M=1000,N=17,K=4095 default" \
    "matmul linear_gelu M=1100,N=4100,K=200 7" "matmul linear_gelu M=1100,N=4100,K=200 default"; do
  set -- $c
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/pre/$1 $2 --shape $3 --variant $4 --reps 1 > $W/san_$2_$3_$4.txt 2>&1
  echo "memcheck $c: exit $?"
done | tee $W/sanitizers.txt; echo "sanitizers $(el)"; pack
