#!/usr/bin/env bash
# Session 36, device call 1: the tiled kernel's shifted path (aligned vectors for extents that
# are not multiples of the vector). Every variant of the examples with tiled steps end to end
# (four shards), compute-sanitizer memcheck and racecheck at odd shapes, then the default
# variant of the new build against main's (kiln_old, 07fabc6) at odd and aligned shapes, the
# two interleaved, two rounds of 100 launches (the L2 flushed before each).
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call1 && cp $W/*.txt $OUT/call1/ 2>/dev/null; }
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
odd=bench/results/2026-11-29-h200-odd-transpose/odd.kiln
$K compile $odd -o $W/new --arch sm_90 > /dev/null &
build/tools/kiln_old compile $odd -o $W/old --arch sm_90 > /dev/null &
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="transpose permute gather_suite strided" KILN_GPU_SHARD=$i/4 timeout 240 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
for tool in memcheck racecheck; do
  for c in transpose_f32:M=1001,N=999 transpose_bf16:M=1000,N=3001 transpose_add:M=63,N=65 heads_keys:B=1,S=1000,H=7,D=5 transpose_bf16:M=3,N=7; do
    k=${c%%:*} s=${c#*:}
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/new $k --shape $s --variant default --reps 1 > $W/san_${tool}_${k}_${s//[=,]/_}.log 2>&1
    echo "$tool $k $s exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/san_${tool}_${k}_${s//[=,]/_}.log | head -1) $(grep -E '^ *v[0-9]+' $W/san_${tool}_${k}_${s//[=,]/_}.log | head -1)"
  done
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
cases=("transpose_f32 M=8191,N=8193" "transpose_f32 M=16383,N=2047" "transpose_f32 M=4095,N=1001"
  "transpose_bf16 M=8191,N=8193" "transpose_bf16 M=1000,N=3001" "transpose_add M=8191,N=8193"
  "heads_keys B=8,S=2047,H=32,D=127" "transpose_f32 M=8192,N=8192" "transpose_bf16 M=8192,N=8192"
  "heads_keys B=8,S=2048,H=32,D=128")
for r in 1 2; do
  for c in "${cases[@]}"; do
    set -- $c
    for b in new old; do
      k=build/tools/kiln_$b; [ $b = new ] && k=$K
      t=$($k run $W/$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-2)}')
      echo "round $r $1 $2 $b $t"
    done
  done
done | tee $W/ab.txt
echo "ab $(el)"; pack
