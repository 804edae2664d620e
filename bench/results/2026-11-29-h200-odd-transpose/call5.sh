#!/usr/bin/env bash
# Session 29, device call 5: tiled transposes whose extents are not multiples of the vector
# (the scalar path) with each warp's scalar loads and stores at consecutive elements, against
# main (kiln_old: its tiled lowering is main's): (a) every variant of the examples with tiled
# steps end to end (transpose, permute, gather_suite, strided; NaN and infinities where
# special_cases.txt asks), four shards at once; (b) compute-sanitizer memcheck and racecheck
# on the default variants at odd shapes; (c) the default variant at 14 shapes, both builds
# interleaved, two rounds of 100 launches (L2 flushed before each).
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
KO=build/tools/kiln_old
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call5 && cp $W/*.txt $OUT/call5/ 2>/dev/null; }
$K compile bench/memory_bound.kiln -o $W/new --arch sm_90 -j 8 > /dev/null &
$KO compile bench/memory_bound.kiln -o $W/old --arch sm_90 -j 8 > /dev/null &
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3; do
  KILN_GPU_EXAMPLES="transpose permute gather_suite strided" KILN_GPU_SHARD=$i/4 timeout 240 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2 3; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
for tool in memcheck racecheck; do
  for c in transpose_f32:M=1001,N=999 transpose_bf16:M=1000,N=3001 transpose_add:M=63,N=65 heads_keys:B=1,S=1000,H=7,D=5 rotate3:A=3,B=100,C=7; do
    k=${c%%:*} s=${c#*:}
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/new $k --shape $s --variant default --reps 1 > $W/san_${tool}_${k}.log 2>&1
    echo "$tool $k $s exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $W/san_${tool}_${k}.log | head -1) $(grep -E '^ *v[0-9]+' $W/san_${tool}_${k}.log | head -1)"
  done
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
cases=("transpose_f32 M=8191,N=8193" "transpose_f32 M=8192,N=8192" "transpose_f32 M=4095,N=1001"
  "transpose_f32 M=1000,N=3001" "transpose_f32 M=16383,N=2047" "transpose_bf16 M=8191,N=8193"
  "transpose_bf16 M=8192,N=8192" "transpose_bf16 M=1000,N=3001" "transpose_add M=8191,N=8193"
  "heads_keys B=8,S=2047,H=32,D=127" "heads_keys B=8,S=2048,H=32,D=128" "rotate3 A=255,B=511,C=63"
  "rotate3 A=256,B=512,C=64" "heads_first B=8,S=2047,H=32,D=127")
for r in 1 2; do
  for c in "${cases[@]}"; do
    set -- $c
    for b in new old; do
      k=$K; [ $b = old ] && k=$KO
      t=$($k run $W/$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-2)}')
      echo "round $r $1 $2 $b $t"
    done
  done
done | tee $W/ab.txt
echo "ab $(el)"
for s in M=8191,N=8193; do
  timeout 60 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    $K run $W/new transpose_f32 --shape $s --variant default --reps 1 > $W/ncu_new_transpose_f32.txt 2>&1
done
pack
