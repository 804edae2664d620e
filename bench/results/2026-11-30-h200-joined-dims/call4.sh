#!/usr/bin/env bash
# Session 37, device call 4: the shifted path where the across extent is a multiple of V (every
# input row aligned): step 4 reads each lane at its column without the row's shift, and step 2
# skips each row's last vector. This build (kiln.xz) against the one before it (kiln_old.xz,
# 2dadf09): every variant timed at shapes of aligned input rows and odd output rows, and at
# shapes the change should leave alone (its registers may move), the copy bandwidth in the same
# run. Then every variant of the tiled examples end to end and memcheck on the new branch.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
R=bench/results/2026-11-30-h200-joined-dims
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
  .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
KO=build/tools/kiln_old
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call4.tgz *.txt 2>/dev/null); }
for b in old new; do
  bin=$K; [[ $b == old ]] && bin=$KO
  $bin compile examples/permute.kiln -o $W/ex_$b --arch sm_90 > /dev/null &
  $bin compile $R/perm.kiln -o $W/perm_$b --arch sm_90 > /dev/null &
done; wait
for c in ex:heads_keys:B=8,S=2047,H=32,D=127 ex:transpose_bf16:M=8192,N=8191 ex:transpose_bf16:M=4096,N=4095 \
         perm:rotate3_bf16:A=999,B=1001,C=64 ex:transpose_add:M=8192,N=8191 \
         ex:transpose_bf16:M=8191,N=8193 ex:transpose_bf16:M=8192,N=8192 ex:heads_keys:B=8,S=2048,H=32,D=128 \
         ex:transpose_add:M=8192,N=8192 ex:transpose_add:M=8191,N=8193; do
  IFS=: read -r bun k s <<< "$c"
  for b in old new; do
    bin=$K; [[ $b == old ]] && bin=$KO
    f=$W/time_${b}_${k}_${s//[=,]/_}.txt
    $bin run $W/${bun}_$b $k --shape $s --variant default --reps 1 > /dev/null 2>&1 || echo "$b $k $s: check FAILED"
    $bin run $W/${bun}_$b $k --shape $s --variant all --copy-baseline --reps 50 --no-check > $f 2>&1
    echo "$b $k $s: default $(grep -E '^ *v[0-9]+\*' $f | awk '{print $1, $(NF-3), "us", $NF "%"}')  v0 $(grep -E '^ *v0\*? ' $f | awk '{print $(NF-3)}')  v1 $(grep -E '^ *v1\*? ' $f | awk '{print $(NF-3)}')  best $(grep -E '^ *v[0-9]+' $f | awk '{print $(NF-3), $1}' | sort -g | head -1)"
  done
done | tee $W/perm.txt
echo "perm $(el)"; pack
export KILN_REQUIRE_GPU=1
for i in 0 1 2; do
  KILN_GPU_EXAMPLES="transpose permute" KILN_GPU_SHARD=$i/3 timeout 240 tests/gpu/run_gpu_tests.sh $K $W/e2e$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in 0 1 2; do echo "shard $i: $(tail -1 $W/e2e_$i.log)"; grep -E "FAIL|SKIP" $W/e2e_$i.log | head -5; done | tee $W/e2e.txt
for c in heads_keys:B=2,S=301,H=4,D=64 transpose_bf16:M=1000,N=3001 transpose_add:M=200,N=203 transpose_add:M=256,N=203; do
  k=${c%%:*} s=${c#*:} f=$W/san_memcheck_${k}_${s//[=,]/_}.log
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/ex_new $k --shape $s --variant all --reps 1 > $f 2>&1
  echo "memcheck $k $s (every variant) exit $? $(grep -E 'ERROR SUMMARY' $f | head -1) $(grep -cE ' ok ' $f) ok"
done | tee $W/sanitizer.txt
echo "e2e, sanitizer $(el)"; pack
