#!/usr/bin/env bash
# Session 27 (issue 19), device call 1: split rows whose length is not a multiple of the vector
# walk shifted vectors (kiln, this build) instead of scalars (kiln_old, main before it):
# (a) every variant of the row-reduction examples end to end (their split cases: M=3,N=100003,
# M=2,N=3000017, one row of 64M); (b) the default variant at odd and aligned lengths of few
# rows, both builds interleaved, two rounds of 100 launches (checked once first); (c) memcheck
# on the shifted split.
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
KO=build/tools/kiln_old
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
ex="rowsum softmax layernorm rmsnorm add_rmsnorm mean_var logsumexp"
for e in $ex; do $K compile examples/$e.kiln -o $W/pre/$e > /dev/null & done
$K compile bench/memory_bound.kiln -o $W/mb_new > /dev/null &
$KO compile bench/memory_bound.kiln -o $W/mb_old > /dev/null &
wait; echo "compiled $(el)"
# (b)
grep -n "^kernel" bench/memory_bound.kiln | head -60 > $W/kernels.txt
cases=("softmax_bf16 M=2,N=70001" "softmax_bf16 M=2,N=70000" "softmax_bf16 M=1,N=1000001" "softmax_bf16 M=4,N=100003"
  "rmsnorm_bf16 M=3,N=100003" "rmsnorm_bf16 M=3,N=100000" "rowsum_f32 M=2,N=3000017" "rowsum_f32 M=2,N=3000016"
  "rowsum_f32 M=1,N=67108863" "rowsum_f32 M=1,N=67108864" "layernorm_f32 M=2,N=100001" "logsumexp_bf16 M=8,N=128257")
for c in "${cases[@]}"; do
  set -- $c
  $K run $W/mb_new $1 --shape $2 --variant default --reps 3 2>&1 | grep -E '^ *v[0-9]' | awk -v c="$c" '{print "check new", c, $1, $(NF-4)}'
done | tee $W/checks.txt
for round in 1 2; do
  for c in "${cases[@]}"; do
    set -- $c
    for b in new old; do
      k=$K; [ $b = old ] && k=$KO
      t=$($k run $W/mb_$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-2)}')
      echo "round $round $1 $2 $b $t"
    done
  done
done | tee $W/ab.txt; echo "ab $(el)"
# (a)
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  mkdir -p $W/e2e/$i/bundles; cp -r $W/pre/* $W/e2e/$i/bundles/
  KILN_GPU_EXAMPLES="$ex" KILN_GPU_SHARD=$i/8 timeout 300 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt; rm -f $W/e2e_[0-7].txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30; echo "e2e $(el)"
unset KILN_REQUIRE_GPU
# (c)
for c in "softmax_bf16 M=3,N=100003" "rowsum_f32 M=2,N=3000017" "layernorm_f32 M=2,N=100001"; do
  set -- $c
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $K run $W/mb_new $1 --shape $2 --variant default --reps 1 > $W/memcheck_$1.txt 2>&1
  echo "memcheck $c: exit $?"
done | tee $W/sanitizers.txt
mkdir -p $OUT/call1 && cp $W/*.txt $OUT/call1/
