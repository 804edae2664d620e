#!/usr/bin/env bash
# Session 20, device call 1: the split row scan with the next tile's loads issued before the
# look-back (kiln) against the committed build (kiln_old: load, scan, publish, then look back),
# interleaved, 200 launches each; every variant of examples/scan.kiln end to end; memcheck,
# racecheck and synccheck on the split variant; the everyday scan cases beside torch.compile.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w1; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools build/lib
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2" && chmod +x "$2"; }
unxz .carry/kiln.xz build/tools/kiln; unxz .carry/kiln_old.xz build/tools/kiln_old
K=build/tools/kiln
$K compile examples/scan.kiln -o $W/new > /dev/null; build/tools/kiln_old compile examples/scan.kiln -o $W/old > /dev/null
cases="cumsum_row:N=67108864 cumsum_row:N=16777216 cumsum_row:N=4194304 cumsum_row:N=67108863 cumsum_rows:M=8,N=8388608 cumsum_rows:M=64,N=1048576 cumsum_bf16:M=4,N=16777216 cumsum_fused:M=8,N=8388608"
for round in 1 2; do
  for c in $cases; do
    k=${c%%:*} s=${c#*:}
    for b in old new; do
      t=$(build/tools/kiln run $W/$b $k --shape $s --variant default --reps 200 --no-check 2>&1 | grep -E '^ *(v[0-9]+|default)' | head -1 | awk '{print $(NF-2)}')
      echo "$round $b $k $s $t" | tee -a $W/interleaved.txt
    done
  done
done
for c in cumsum_row:N=67108864 cumsum_rows:M=8,N=8388608; do
  k=${c%%:*} s=${c#*:}
  $K run $W/new $k --shape $s --variant all --reps 50 --no-check --copy-baseline > $W/all_new_$k.txt 2>&1
  echo "== new $k $s"; grep -E '^ *v[0-9]+|copy' $W/all_new_$k.txt | awk '{print $1, $2, $(NF-3), $NF}'
done
mkdir -p $W/e2e/bundles; cp -r $W/new $W/e2e/bundles/scan
KILN_REQUIRE_GPU=1 KILN_GPU_EXAMPLES="scan" tests/gpu/run_gpu_tests.sh $K $W/e2e > $W/e2e.txt 2>&1; echo "e2e exit $?"; tail -3 $W/e2e.txt
for tool in memcheck racecheck synccheck; do
  for s in N=100003 N=4194304 N=67108863; do
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $K run $W/new cumsum_row --shape $s --variant 6 --reps 1 > $W/san_${tool}_$s.txt 2>&1
    echo "$tool $s exit $? $(grep -E 'ERROR SUMMARY|max abs' $W/san_${tool}_$s.txt | head -2 | tr '\n' ' ')"
  done
done
BENCH_REPS=100 BENCH_KERNELS="cumsum_rows cumsum_row" BENCH_TORCH="cumsum" bench/everyday.sh $K $W/everyday > $W/everyday.txt 2>&1
echo "everyday exit $?"; cat $W/everyday/summary.md
tar czf $OUT/call1.tgz -C $W --exclude='new' --exclude='old' --exclude='bundles' --exclude='everyday/scan' --exclude='everyday/cross_entropy' --exclude='everyday/embedding' --exclude='everyday/dropout' --exclude='everyday/rotary' --exclude='everyday/spatial_mean' --exclude='everyday/strided' .
