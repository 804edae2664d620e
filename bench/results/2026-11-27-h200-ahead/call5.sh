#!/usr/bin/env bash
# Session 18, device call 5, the build to land (0bf18a2): issue 20's cumsum and dropout and
# the memory-bound suite's bias + GELU cases beside torch, each default checked against the
# interpreter first; memcheck on the defaults the new tiers pick (a block with one chunk a
# step for f32 rows of 2049 to 65536, four vectors in flight for heavy steps of 17M+ elements).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w5; mkdir -p $W/san
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz /tmp/kiln && chmod +x /tmp/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call5.tgz gpu.txt san *.txt $(ls every/*.txt every/*.md mb/*.txt mb/*.md 2>/dev/null)); }
K=/tmp/kiln
$K compile bench/memory_bound.kiln -o $W/b_mb > /dev/null &
$K compile examples/scan.kiln -o $W/b_scan > /dev/null &
$K compile examples/dropout.kiln -o $W/b_dropout > /dev/null &
wait; echo "compiled $(el)"
for s in b_scan:cumsum_rows:M=7,N=4100 b_scan:cumsum_rows:M=5,N=65536 b_scan:cumsum_rows:M=3,N=2049 \
    b_scan:cumsum_i32:M=3,N=3000 b_scan:cumsum_bf16:M=5,N=40000 b_dropout:dropout_bf16:M=4096,N=4160; do
  IFS=: read -r b kern shape <<< "$s"
  extra=(); [[ $kern == dropout* ]] && extra=(--scalar p=0.1)
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 3 $K run $W/$b $kern --shape $shape "${extra[@]}" --variant default --reps 2 > $W/san/${kern}_${shape//[=,]/_}.txt 2>&1
  echo "memcheck $kern $shape: exit $? $(grep -E '^ *v[0-9]+' $W/san/${kern}_${shape//[=,]/_}.txt | awk '{print $1, $(NF-4)}') $(grep -c 'ERROR SUMMARY: 0' $W/san/${kern}_${shape//[=,]/_}.txt)"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
BENCH_REPS=30 BENCH_KERNELS="cumsum_rows cumsum_row dropout_bf16" BENCH_TORCH="cumsum dropout" timeout 200 bench/everyday.sh $K $W/every > $W/every.txt 2>&1
echo "everyday: exit $? $(el)"; tail -7 $W/every.txt; pack
BENCH_BUNDLE=$W/b_mb BENCH_REPS=30 timeout 150 bench/memory_bound.sh $K $W/mb bias_gelu > $W/mb.txt 2>&1
echo "memory-bound: exit $? $(el)"; grep -E "bias_gelu|copy" $W/mb/summary.md; pack
