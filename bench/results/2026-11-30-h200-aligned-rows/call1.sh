#!/usr/bin/env bash
# Session 41, device call 1: the aligned-rows path of tiled steps (compiler/lower_tiled.cpp:
# A a multiple of the vector, I not: the vector path's loads and register transpose, the
# output rows' shift taken when step 4 reads shared memory) and the vector path's step 4
# storing a copied bf16 chunk's words as read. Every variant of the transpose and permute
# examples end to end against the interpreter (three shards); memcheck and racecheck on the
# default at shapes of the new path; then bench/memory_bound.kiln compiled by the build before
# (kiln_old: ba3240a) and after, every variant timed at aligned, aligned-rows and odd shapes
# with the copy in the same run; then the suite's permutations beside torch.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
  .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
KO=build/tools/kiln_old
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call1 && cp $W/*.txt $OUT/call1/ 2>/dev/null; mkdir -p $OUT/call1/suite && cp $W/suite/*.txt $W/suite/*.json $W/suite/*.md $OUT/call1/suite/ 2>/dev/null; }
$K compile examples/permute.kiln -o $W/perm --arch sm_90 > /dev/null &
$K compile bench/memory_bound.kiln -o $W/mb_new --arch sm_90 > /dev/null &
$KO compile bench/memory_bound.kiln -o $W/mb_old --arch sm_90 > /dev/null &
export KILN_REQUIRE_GPU=1
for i in 0 1 2; do
  KILN_GPU_EXAMPLES="transpose permute" KILN_GPU_SHARD=$i/3 timeout 240 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
for tool in memcheck racecheck; do
  for c in heads_keys:B=2,S=101,H=8,D=127 transpose_bf16:N=999,M=1000 heads_keys_f32:B=1,S=37,H=2,D=12 \
           transpose_cast:N=65,M=1000 rotate3:A=3,B=5,C=8; do
    k=${c%%:*} s=${c#*:} f=$W/san_${tool}_${k}_${s//[=,]/_}.log
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/perm $k --shape $s --variant default --reps 1 > $f 2>&1
    echo "$tool $k $s exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | head -1) $(grep -E '^ *v[0-9]+' $f | head -1)"
  done
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
for c in heads_keys:B=8,S=2047,H=32,D=127 heads_keys:B=4,S=4095,H=12,D=64 heads_keys:B=8,S=2048,H=32,D=128 \
         transpose_bf16:N=8191,M=8192 transpose_bf16:N=8192,M=8192 transpose_bf16:N=8191,M=8193 \
         transpose_bf16:N=999,M=3000 transpose_f32:N=8191,M=8192 transpose_f32:N=8192,M=8192 \
         transpose_add:N=8191,M=8192 rotate3:A=256,B=511,C=64 rotate3:A=256,B=512,C=64; do
  k=${c%%:*} s=${c#*:}
  for b in old new; do
    bin=$K; [[ $b == old ]] && bin=$KO
    f=$W/time_${b}_${k}_${s//[=,]/_}.txt
    timeout 60 $bin run $W/mb_$b $k --shape $s --variant default --reps 1 > $W/check_${b}_${k}_${s//[=,]/_}.txt 2>&1 || echo "$b $k $s: check FAILED"
    timeout 90 $bin run $W/mb_$b $k --shape $s --variant all --copy-baseline --reps 50 --no-check > $f 2>&1
    echo "$b $k $s default: $(grep -E '^ *v[0-9]+\*' $f | awk '{print $1, $(NF-3), "us", $NF, "% copy"}')"
    echo "$b $k $s best:    $(grep -E '^ *v[0-9]+' $f | awk '{print $(NF-3), $1, $NF, "% copy"}' | sort -g | head -1)"
  done
done | tee $W/perm.txt
echo "perm $(el)"; pack
mkdir -p $W/suite
BENCH_BUNDLE=$W/mb_new timeout 200 bash bench/memory_bound.sh $K $W/suite heads_keys heads_keys_4d_odd transpose_bf16 transpose_f32 > $W/suite.txt 2>&1
grep -E "^\| (transpose|heads|rotate)|torch (transpose|heads|rotate)" $W/suite.txt
echo "suite $(el)"; pack
