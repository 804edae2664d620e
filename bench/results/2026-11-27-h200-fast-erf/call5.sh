#!/usr/bin/env bash
# Session 19, device call 5: (a) the error experiments after their scan moved into
# bench/experiments/approx_error.cuh (erf_approx and tanh_approx must print what they printed
# before); (b) the plain GEMM in clusters of two (v7, the default) against alone (v12, same
# tiles) under sustained load, 2000 launches each, interleaved three times, at four shapes,
# with the SM clock and board power sampled every 100 ms.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w5; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call5.tgz -C $W --exclude='bc' --exclude='erf/erf_approx' --exclude='tanh/tanh_approx' . ; }
K=build/tools/kiln
# (a)
bench/experiments/erf_approx/run.sh $W/erf > /dev/null 2>&1; echo "erf_approx: exit $?"; cat $W/erf/erf_approx.txt
bench/experiments/tanh_approx/run.sh $W/tanh > /dev/null 2>&1; echo "tanh_approx: exit $?"; cat $W/tanh/tanh_approx.txt
echo "experiments $(el)"; pack
# (b)
$K compile bench/contraction.kiln -o $W/bc --arch sm_90 > /dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 > $W/power.csv &
smi=$!
for s in M=8192,N=4096,K=4096 M=4096,N=4096,K=4096 M=8192,N=8192,K=8192 M=2048,N=11008,K=4096; do
  for rep in 1 2 3; do
    for v in 7 12; do
      echo "start gemm $s $v $(date +%H:%M:%S.%N)" >> $W/windows.txt
      $K run $W/bc gemm --shape $s --variant $v --reps 2000 --no-check 2>&1 | grep -E '^ *v[0-9]+' |
        awk -v s=$s '{print "gemm", s, $1, $(NF-2)}'
      echo "end gemm $s $v $(date +%H:%M:%S.%N)" >> $W/windows.txt
    done
  done
done | tee $W/sustained.txt; kill $smi; echo "sustained $(el)"; pack
