#!/usr/bin/env bash
# Session 41, device call 4: the submitted build (the aligned-rows path with every load in
# flight, the vector path's copied words, the rule's 64 x 128 tiles for aligned-rows shapes).
# Every variant of the examples with tiled steps end to end against the interpreter (three
# shards); memcheck and racecheck on the rule's pick at aligned-rows shapes; the rule's pick
# timed before (kiln_old: ba3240a) and after; then the suite's permutations beside torch eager
# and torch.compile in one run.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
  .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
KO=build/tools/kiln_old
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call4.tgz -C $W $(cd $W && ls *.txt *.log 2>/dev/null) suite 2>/dev/null; }
$K compile examples/permute.kiln -o $W/perm --arch sm_90 > /dev/null &
$K compile bench/memory_bound.kiln -o $W/mb_new --arch sm_90 > /dev/null &
$KO compile bench/memory_bound.kiln -o $W/mb_old --arch sm_90 > /dev/null &
export KILN_REQUIRE_GPU=1
for i in 0 1 2; do
  KILN_GPU_EXAMPLES="transpose permute f32_matmul gather_suite" KILN_GPU_SHARD=$i/3 timeout 270 \
    tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
for tool in memcheck racecheck; do
  for c in heads_keys:B=2,S=101,H=8,D=127 transpose_bf16:N=999,M=1000 heads_keys:B=1,S=1001,H=4,D=64 \
           transpose_cast:N=65,M=1000; do
    k=${c%%:*} s=${c#*:} f=$W/san_${tool}_${k}_${s//[=,]/_}.log
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/perm $k --shape $s --variant default --reps 1 > $f 2>&1
    echo "$tool $k $s exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | head -1) $(grep -E '^ *v[0-9]+' $f | head -1)"
  done
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
for c in heads_keys:B=8,S=2047,H=32,D=127 heads_keys:B=4,S=4095,H=12,D=64 transpose_bf16:N=8191,M=8192 \
         transpose_bf16:N=999,M=3000 transpose_bf16:N=8192,M=8192 transpose_f32:N=8191,M=8192 \
         transpose_add:N=8191,M=8192; do
  k=${c%%:*} s=${c#*:}
  for b in old new; do
    bin=$K; [[ $b == old ]] && bin=$KO
    f=$W/default_${b}_${k}_${s//[=,]/_}.txt
    timeout 90 $bin run $W/mb_$b $k --shape $s --variant default --copy-baseline --reps 50 > $f 2>&1
    echo "$b $k $s: $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $3, $(NF-3), "us", $NF, "% copy"}')"
  done
done | tee $W/defaults.txt
echo "defaults $(el)"; pack
mkdir -p $W/suite
BENCH_BUNDLE=$W/mb_new timeout 240 bash bench/memory_bound.sh $K $W/suite transpose heads rotate3 > $W/suite.txt 2>&1
grep -E "^\| (transpose|heads|rotate)|torch (transpose|heads|rotate)" $W/suite.txt
echo "suite $(el)"; pack
