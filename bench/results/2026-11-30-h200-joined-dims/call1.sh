#!/usr/bin/env bash
# Session 37, device call 1: tiles over joined dimensions (compiler/plan.h Tiling::joined: h and
# d of [B, S, H, D] -> [B, H, D, S] one dimension of H*D). Every variant of the transpose and
# permute examples end to end against the interpreter (three shards), compute-sanitizer memcheck
# and racecheck on default variants at joined shapes (vector, shifted and element-by-element
# paths); then perm.kiln compiled by the build before (kiln_old: 5c0b24b, whose kernels 42abc13
# keeps) and after, every variant timed at permutations whose joined dimensions change the path
# or the tile count, the copy bandwidth in the same run; then the memory-bound suite's
# permutations beside torch eager and torch.compile.
set -uo pipefail
W=/tmp/w1; source bench/device_setup.sh
R=bench/results/2026-11-30-h200-joined-dims
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
  .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
KO=build/tools/kiln_old
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call1 && cp $W/*.txt $OUT/call1/ 2>/dev/null; mkdir -p $OUT/call1/suite && cp $W/suite/*.txt $W/suite/*.json $W/suite/*.md $OUT/call1/suite/ 2>/dev/null; }
$K compile examples/permute.kiln -o $W/new --arch sm_90 > /dev/null &
$K compile $R/perm.kiln -o $W/perm_new --arch sm_90 > /dev/null &
$KO compile $R/perm.kiln -o $W/perm_old --arch sm_90 > /dev/null &
mkdir -p $W/suite; $K compile bench/memory_bound.kiln -o $W/bundle --arch sm_90 > /dev/null &
export KILN_REQUIRE_GPU=1
for i in 0 1 2; do
  KILN_GPU_EXAMPLES="transpose permute" KILN_GPU_SHARD=$i/3 timeout 240 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
echo "e2e $(el)"; pack
for tool in memcheck racecheck; do
  for c in heads_keys:B=2,S=100,H=8,D=127 heads_keys:B=1,S=300,H=2,D=133 rotate3:A=3,B=4,C=1000 rotate3:A=7,B=33,C=1001; do
    k=${c%%:*} s=${c#*:} f=$W/san_${tool}_${k}_${s//[=,]/_}.log
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/new $k --shape $s --variant default --reps 1 > $f 2>&1
    echo "$tool $k $s exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | head -1) $(grep -E '^ *v[0-9]+' $f | head -1)"
  done
done | tee $W/sanitizer.txt
echo "sanitizer $(el)"; pack
for c in heads_keys:B=8,S=2047,H=32,D=127 heads_keys:B=4,S=4096,H=12,D=100 heads_keys:B=8,S=2048,H=32,D=128 \
         heads_keys:B=2,S=4095,H=20,D=63 rotate3:A=256,B=512,C=64 rotate3:A=1000,B=999,C=33 \
         rotate3_bf16:A=1000,B=1000,C=40 rotate3_bf16:A=999,B=1001,C=64; do
  k=${c%%:*} s=${c#*:}
  for b in old new; do
    bin=$K; [[ $b == old ]] && bin=$KO
    f=$W/time_${b}_${k}_${s//[=,]/_}.txt
    $bin run $W/perm_$b $k --shape $s --variant default --reps 1 > /dev/null 2>&1 || echo "$b $k $s: check FAILED"
    $bin run $W/perm_$b $k --shape $s --variant all --copy-baseline --reps 50 --no-check > $f 2>&1
    echo "$b $k $s default: $(grep -E '^ *v[0-9]+\*' $f | awk '{print $1, $(NF-3), "us", $NF, "% copy"}')"
    echo "$b $k $s best:    $(grep -E '^ *v[0-9]+' $f | awk '{print $(NF-3), $1, $NF, "% copy"}' | sort -g | head -1)"
  done
done | tee $W/perm.txt
echo "perm $(el)"; pack
BENCH_BUNDLE=$W/bundle timeout 240 bash bench/memory_bound.sh $K $W/suite heads_keys rotate3 heads_first transpose_bf16_odd > $W/suite.txt 2>&1
grep -E "^\| (transpose|heads|rotate)|torch (transpose|heads|rotate)" $W/suite.txt
echo "suite $(el)"; pack
