#!/usr/bin/env bash
# Session 18, device call 1. (a) Row scans loading a step ahead (new) against the committed
# build (base, 1579d28), every variant, the same GPU, alternating; (b) every variant of
# examples/scan.kiln end to end with the new build, and memcheck on its defaults; (c) every
# variant of compute-heavy and light pointwise kernels (the base build: pointwise code is the
# same in both) at large and medium sizes, to see where four vectors in flight beat two.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w1; mkdir -p $W/scan $W/pw
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2" && chmod +x "$2"; }
mkdir -p build/tools; unxz .carry/kiln.xz build/tools/kiln; unxz .carry/kiln_base.xz /tmp/kiln_base
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call1.tgz gpu.txt scan pw *.txt); }
NEW=build/tools/kiln BASE=/tmp/kiln_base
for b in new base; do
  k=$NEW; [[ $b == base ]] && k=$BASE
  $k compile examples/scan.kiln -o $W/b_scan_$b > /dev/null &
done
$BASE compile bench/memory_bound.kiln -o $W/b_mb > /dev/null &
for ex in dropout rotary embedding gelu_tanh; do $BASE compile examples/$ex.kiln -o $W/b_$ex > /dev/null & done
wait; echo "compiled $(el)"
# (a)
for spec in cumsum_rows:M=4096,N=32768 cumsum_rows:M=16384,N=8192 cumsum_rows:M=256,N=262144 \
    cumsum_bf16:M=4096,N=32768 cumsum_fused:M=4096,N=32768 cummax_rows:M=4096,N=32768 \
    cumsum_rows:M=4096,N=32768; do
  IFS=: read -r kern shape <<< "$spec"
  for b in base new; do
    k=$NEW; [[ $b == base ]] && k=$BASE
    $k run $W/b_scan_$b $kern --shape $shape --variant all --reps 30 --no-check --copy-baseline \
      > $W/scan/${kern}_${shape//[=,]/_}_$b.txt 2>&1
    echo "== $b $kern $shape"; grep -E '^ *v[0-9]+\*' $W/scan/${kern}_${shape//[=,]/_}_$b.txt
  done
done
echo "scan timing $(el)"; pack
# (b)
export KILN_REQUIRE_GPU=1
for i in 0 1 2 3 4 5 6 7; do
  mkdir -p $W/e2e/$i/bundles; cp -r $W/b_scan_new $W/e2e/$i/bundles/scan
  KILN_GPU_EXAMPLES=scan KILN_GPU_SHARD=$i/8 timeout 200 tests/gpu/run_gpu_tests.sh $NEW $W/e2e/$i > $W/e2e_$i.txt 2>&1 &
done; wait
cat $W/e2e_[0-7].txt > $W/e2e.txt; rm -f $W/e2e_[0-7].txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e scan: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
grep -E 'FAIL' -A6 $W/e2e.txt | head -30
for i in 0 1 2 3; do
  mkdir -p $W/san/$i/bundles; cp -r $W/b_scan_new $W/san/$i/bundles/scan
  KILN_GPU_EXAMPLES=scan KILN_GPU_SHARD=$i/4 timeout 200 tests/gpu/run_gpu_tests.sh $NEW $W/san/$i compute-sanitizer --tool memcheck --error-exitcode 3 > $W/san_$i.txt 2>&1 &
done; wait
cat $W/san_[0-3].txt > $W/memcheck.txt; rm -f $W/san_[0-3].txt
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "memcheck scan: %d passed, %d failed, %d skipped\n", p, f, s}' $W/memcheck.txt | tee -a $W/gpu.txt
echo "e2e + memcheck $(el)"; pack
# (c)
for spec in b_mb:bias_gelu_erf:M=16384,N=8192 b_mb:bias_gelu_tanh:M=16384,N=8192 b_mb:silu_mul:M=16384,N=8192 \
    b_mb:add_f32:M=8192,N=8192 b_mb:scale_cast:M=8192,N=8192 b_mb:add_pos:B=32,S=2048,D=1024 \
    b_dropout:dropout_bf16:M=16384,N=8192 b_dropout:dropout:M=16384,N=8192 \
    b_dropout:dropout_backward_bf16:M=16384,N=8192 b_dropout:dropout_mask:M=8192,N=8192 \
    b_rotary:rotary:T=16384,H=32,R=64,P=16384 b_rotary:rotary_f32:T=16384,H=32,D=128,P=16384 \
    b_gelu_tanh:tanh_f32:N=67108864 b_gelu_tanh:gelu_tanh:M=16384,N=8192 \
    b_embedding:embedding:T=131072,V=32000,D=4096 \
    b_mb:bias_gelu_erf:M=1024,N=1024 b_mb:bias_gelu_erf:M=4096,N=1000 b_mb:add_f32:M=1024,N=1024 \
    b_dropout:dropout_bf16:M=1024,N=2048 b_dropout:dropout:M=2048,N=1000 b_rotary:rotary:T=1024,H=32,R=64,P=1024 \
    b_mb:bias_gelu_erf:M=16384,N=8192; do
  IFS=: read -r bundle kern shape <<< "$spec"
  extra=(); [[ $kern == dropout* ]] && extra=(--scalar p=0.1)
  f=$W/pw/${kern}_${shape//[=,]/_}.txt; [[ -f $f ]] && f=${f%.txt}_again.txt
  $BASE run $W/$bundle $kern --shape $shape "${extra[@]}" --variant all --reps 30 --no-check --copy-baseline > $f 2>&1
  echo "== $kern $shape"; grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-2)}' | tr '\n' ' '; echo
done
echo "pointwise $(el)"; pack
