#!/usr/bin/env bash
# Session 32, device call 1: a split row's store-only last phase launched one block per row
# (manifest split.lead_last; S in the phase argument's high word), this session's build (kiln)
# against main before it (kiln_base, 3f5e4c3): (a) every variant of the examples with split
# reductions end to end, the runtime's GPU tests (graph capture of split kernels), the C API's,
# and sanitizers on split defaults at awkward shapes; (b) the A/B, default variants, 100
# launches, two rounds, beside torch.compile's sum of one f32 row; (c) an experiment build
# (kiln_ws, not submitted: the workspace allocated once instead of from the stream-ordered pool
# at every launch) on the same sums, to measure what the allocation and its release cost;
# (d) what the device's bundle records (registers, the split's grid) and Nsight Compute on the
# new build's two kernels.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
D=bench/results/2026-11-29-h200-lead-last
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2"; }
unxz .carry/kiln_base.xz build/tools/kiln_base; unxz .carry/kiln_ws.xz build/tools/kiln_ws
chmod +x build/tools/kiln_base build/tools/kiln_ws
unxz .carry/tests.tar.xz /tmp/tests.tar && tar xf /tmp/tests.tar -C build
KB=build/tools/kiln_base KW=build/tools/kiln_ws
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call1 && cp $W/*.txt $OUT/call1/ 2>/dev/null; }
for b in new base ws; do
  k=$K; [ $b = base ] && k=$KB; [ $b = ws ] && k=$KW
  $k compile bench/memory_bound.kiln -o $W/mb_$b --arch sm_90 -j 5 > /dev/null &
  $k compile examples/global_max_norm.kiln -o $W/gm_$b --arch sm_90 > /dev/null &
done
examples="global_max_norm rowsum_colsum rowsum softmax layernorm rmsnorm add_rmsnorm spatial_mean mean_var logsumexp cross_entropy reduction_suite"
mkdir -p $W/pre; for ex in $examples add; do $K compile examples/$ex.kiln -o $W/pre/$ex --arch sm_90 -j 16 > /dev/null || echo "FAIL compile $ex"; done
wait; echo "compiled $(el)"
export KILN_REQUIRE_GPU=1
for i in $(seq 0 15); do
  mkdir -p $W/e2e/$i/bundles; for ex in $examples; do ln -s $W/pre/$ex $W/e2e/$i/bundles/$ex; done
  KILN_GPU_EXAMPLES="$examples" KILN_GPU_SHARD=$i/16 timeout 180 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.log 2>&1 &
done; wait
cat $W/e2e_[0-9]*.log > $W/e2e.txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -20; echo "e2e $(el)"; pack
build/tests/kiln_gpu_runtime_tests $W/pre/add $W/pre/rowsum $W/pre/global_max_norm > $W/runtime_tests.txt 2>&1
echo "runtime tests: exit $? $(grep -E 'passed|failed' $W/runtime_tests.txt | tail -1)" | tee -a $W/gpu.txt
build/tests/kiln_gpu_c_api_tests $W/pre/add $W/pre/rowsum > $W/c_api_tests.txt 2>&1
echo "c api tests: exit $? $(grep -E 'passed|failed' $W/c_api_tests.txt | tail -1)" | tee -a $W/gpu.txt
unset KILN_REQUIRE_GPU
for c in "total_f32 M=1,N=3000001" "total_f32 M=5,N=1000000" "logsumexp_bf16 M=3,N=200001"; do
  set -- $c
  for tool in memcheck racecheck synccheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/mb_new $1 --shape $2 --variant default --reps 1 > $W/san.log 2>&1
    echo "$tool $c: exit $? $(grep -c ' ok ' $W/san.log) ok-lines $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' $W/san.log)"
  done
done | tee $W/sanitizers.txt; echo "sanitizers $(el)"; pack
# (d) the bundle compiled here: the split variant's registers and the grid explain reports.
python3 - $W/mb_new/manifest.json <<'EOF' | tee $W/bundle_facts.txt
import json, sys
m = json.load(open(sys.argv[1]))
for k in m["kernels"]:
    if k["name"] not in ("total_f32", "logsumexp_bf16"): continue
    for s in k["steps"]:
        for v in s["variants"]:
            if "split" in v:
                print(k["name"], v["entry"], v["split"], [(i["arch"], i.get("registers")) for i in v["images"]])
EOF
$K explain bench/memory_bound.kiln --kernel total_f32 --shape M=1,N=67108864 2>&1 | grep -iE "split|variant" | head -4 | tee -a $W/bundle_facts.txt
cases=("mb total_f32 M=1,N=1048576" "mb total_f32 M=1,N=4194304" "mb total_f32 M=1,N=16777216"
  "mb total_f32 M=1,N=67108864" "mb total_f32 M=1,N=67108863" "mb total_f32 M=1,N=134217728" "mb total_f32 M=4,N=4194304"
  "mb logsumexp_bf16 M=8,N=262144" "gm global_max_norm M=1000,N=1000" "gm global_max_norm M=8192,N=8192"
  "mb rmsnorm_bf16 M=2,N=1000000" "mb softmax_f32 M=4,N=1048576")
for r in 1 2; do for c in "${cases[@]}"; do set -- $c; for b in new base ws; do
  k=$K; [ $b = base ] && k=$KB; [ $b = ws ] && k=$KW
  [ $b = ws ] && [ $2 != total_f32 ] && continue  # the experiment shares one allocation
  echo "round $r $2 $3 $b $($k run $W/${1}_$b $2 --shape $3 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/ab.txt
done; done; echo "ab round $r $(el)"
[ $r = 1 ] && TORCHINDUCTOR_CACHE_DIR=/tmp/ti timeout 150 python3 bench/results/2026-11-29-h200-uniform-warp/torch_sum.py 1048576 4194304 16777216 67108864 2>&1 | grep -v '^ *$' | tee -a $W/ab.txt
pack; done
sec="--section SpeedOfLight --section LaunchStats --metrics dram__bytes_read.sum,gpu__time_duration.sum"
for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  timeout 60 ncu $sec -k regex:total --launch-count 2 $k run $W/mb_$b total_f32 --shape M=1,N=16777216 --variant default --reps 1 --no-check > $W/ncu_${b}_sum.txt 2>&1
  echo "$b: $(grep -E '^  [a-z_0-9]+.*\(|Duration|Grid Size|DRAM Throughput' $W/ncu_${b}_sum.txt | tr -s ' ' | tr '\n' ';')"
done | tee $W/ncu_sum.txt; echo "ncu $(el)"; pack
