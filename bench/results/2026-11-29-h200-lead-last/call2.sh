#!/usr/bin/env bash
# Session 32, device call 2: (a) every variant of the 12 examples with split reductions end to
# end against the interpreter with this session's build (call 1's shards ran out of time: 2 of
# 16 finished), and the sanitizers on split defaults at awkward shapes (call 1's log did not
# come back); (b) why call 1's bundle recorded 0 registers for total_f32's v21 (the runtime
# then sizes the split grid for an unknown occupancy: 4 blocks per SM): the toolkit here, the
# registers of each variant over repeated compiles, and ptxas's report on that variant's PTX.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call2 && cp $W/*.txt $OUT/call2/ 2>/dev/null; }
examples="global_max_norm rowsum_colsum rowsum softmax layernorm rmsnorm add_rmsnorm spatial_mean mean_var logsumexp cross_entropy reduction_suite"
mkdir -p $W/pre; for ex in $examples; do $K compile examples/$ex.kiln -o $W/pre/$ex --arch sm_90 -j 16 > /dev/null || echo "FAIL compile $ex"; done
awk '/kernel total_f32/,/^}/' bench/memory_bound.kiln > $W/tot.kiln
$K compile bench/memory_bound.kiln -o $W/mb --arch sm_90 -j 16 > /dev/null
echo "compiled $(el)"
export KILN_REQUIRE_GPU=1
for i in $(seq 0 15); do
  mkdir -p $W/e2e/$i/bundles; for ex in $examples; do ln -s $W/pre/$ex $W/e2e/$i/bundles/$ex; done
  KILN_GPU_EXAMPLES="$examples" KILN_GPU_SHARD=$i/16 timeout 400 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in $(seq 0 15); do echo "shard $i: $(grep -E 'passed,.*failed' $W/e2e_$i.log || echo 'no summary (timed out)')"; done > $W/e2e_shards.txt
cat $W/e2e_[0-9]*.log > $W/e2e.txt; rm $W/e2e_[0-9]*.log
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -c "no summary" $W/e2e_shards.txt | sed 's/^/shards without a summary: /' | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -20; echo "e2e $(el)"; pack
unset KILN_REQUIRE_GPU
for c in "total_f32 M=1,N=3000001" "total_f32 M=5,N=1000000" "logsumexp_bf16 M=3,N=200001"; do
  set -- $c
  for tool in memcheck racecheck synccheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/mb $1 --shape $2 --variant default --reps 1 > $W/san.log 2>&1
    echo "$tool $c: exit $? $(grep -c ' ok ' $W/san.log) ok-lines $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' $W/san.log)"
  done
done | tee $W/sanitizers.txt; rm -f $W/san.log; echo "sanitizers $(el)"; pack
{
  ptxas --version | tail -2; ls -l /usr/local/cuda /usr/local/cuda/lib64/libnvJitLink.so* 2>&1 | head -4
  for j in 1 8 16; do for r in 1 2; do
    rm -rf $W/tot; $K compile $W/tot.kiln -o $W/tot --arch sm_90 -j $j > /dev/null
    echo "-j $j round $r: $(python3 -c "
import json; m = json.load(open('$W/tot/manifest.json'))
print([(v['id'], v['images'][0].get('registers'), v['images'][0].get('spill_bytes')) for v in m['kernels'][0]['steps'][0]['variants'] if v['images'][0].get('registers', 0) == 0 or 'split' in v])")"
    cp $W/tot/total_f32_s0_v21.sm_90.ptx $W/v21_j${j}_r$r.ptx
  done; done
  echo "mb (call 1's way, -j 16): $(python3 -c "
import json; m = json.load(open('$W/mb/manifest.json'))
print(sum(1 for k in m['kernels'] for s in k['steps'] for v in s['variants'] for i in v['images'] if not i.get('registers')), 'images without registers of', sum(len(v['images']) for k in m['kernels'] for s in k['steps'] for v in s['variants']))")"
  md5sum $W/v21_*.ptx; grep -n "maxntid\|minnctapersm\|maxnreg" $W/v21_j1_r1.ptx
  for f in $W/v21_j1_r1.ptx $W/v21_j16_r2.ptx; do
    echo "== ptxas -c -v $f"; ptxas -arch=sm_90 -O3 -v -c $f -o /tmp/v.cubin 2>&1 | tail -4
  done
} > $W/registers.txt 2>&1; cat $W/registers.txt; echo "registers $(el)"; pack
