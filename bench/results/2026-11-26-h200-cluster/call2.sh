#!/usr/bin/env bash
# Session 14, device call 2: the cluster variants with the remote arrivals' default (CTA-scope)
# release instead of a cluster-scope one: a quick check, interleaved timings beside the same
# tiles alone, Nsight Compute, sanitizers.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w2; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools build/lib
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
tar xf .carry/lib.tar -C build
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W --exclude='cb' --exclude='*.cubin' --exclude='*.ptx' . ; }
K=build/tools/kiln
$K compile bench/contraction.kiln -o $W/cb --arch sm_90 > /dev/null; echo "compiled $(el)"
export KILN_REQUIRE_GPU=1
for c in "gemm --shape M=300,N=520,K=200" "gemm --shape M=257,N=4100,K=4095" "linear_bias_gelu --shape M=1000,N=1024,K=300"; do
  for v in 12 13; do echo "== v$v $c"; timeout 120 $K run $W/cb $c --variant $v --reps 3 2>&1 | tail -1; done
done > $W/smoke.txt 2>&1; cat $W/smoke.txt; echo "smoke $(el)"; pack
for r in 1 2; do
  for c in "gemm M=8192,N=4096,K=4096" "gemm M=4096,N=4096,K=4096" "gemm M=8192,N=8192,K=8192" "gemm M=8192,N=4096,K=512" "gemm M=6144,N=4096,K=4096" "gemm M=4095,N=4096,K=4096" "gemm M=1024,N=1024,K=1024" "bmm B=16,M=2048,N=2048,K=512" "linear_bias_gelu M=8192,N=4096,K=4096" "linear_bias_gelu M=2048,N=11008,K=4096"; do
    set -- $c
    vs="7 12"; [[ $1 == linear_bias_gelu ]] && vs="11 13 12"
    for v in $vs; do
      echo "$r $1 $2 v$v $(timeout 100 $K run $W/cb $1 --shape $2 --variant $v --no-check --reps 100 2>&1 | grep -E "^ +v$v" | awk '{print $(NF-2)}')"
    done
  done
done > $W/timings.txt 2>&1; cat $W/timings.txt; echo "timings $(el)"; pack
for tool in memcheck racecheck synccheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/cb gemm --shape M=257,N=1000,K=4095 --variant 12 --reps 1 > $W/san_$tool.txt 2>&1
  echo "$tool: exit $?"
done | tee $W/sanitizers.txt
for v in 7 12; do
  timeout 120 ncu --clock-control none -k regex:gemm_s0_v$v -c 1 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,lts__t_bytes.sum \
    $K run $W/cb gemm --shape M=8192,N=4096,K=4096 --variant $v --reps 1 --no-check > $W/ncu_v$v.txt 2>&1
  echo "ncu v$v exit $?"; grep -E "Duration|L2 Cache Throughput|DRAM Throughput|Compute \(SM\)|lts__t_bytes|SM Frequency|stalled_(membar|barrier|long_scoreboard|wait|gmma)" $W/ncu_v$v.txt
done; echo "ncu $(el)"; pack
