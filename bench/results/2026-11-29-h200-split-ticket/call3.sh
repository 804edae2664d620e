#!/usr/bin/env bash
# Session 34, device call 3: why call 2's new build was no faster. The same cases with the
# stream's kept scratch on and off (KILN_KEEP_SCRATCH=0) in both builds, two rounds
# interleaved; then Nsight Compute's durations of every kernel of one launch in each build.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_base.xz build/tools/kiln_base && chmod +x build/tools/kiln_base
KB=build/tools/kiln_base
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call3 && cp $W/*.txt $OUT/call3/ 2>/dev/null; }
cat > $W/s.kiln <<'K'
kernel total_f32(x: f32[M, N]) -> (s: f32[M]) {
  s[i] = sum(x[i, j], j)
}
kernel softmax_f32(x: f32[M, N]) -> (y: f32[M, N]) {
  mx[i] = max(x[i, j], j)
  e[i, j] = exp(x[i, j] - mx[i])
  s[i] = sum(e[i, j], j)
  y[i, j] = e[i, j] / s[i]
}
K
$K compile $W/s.kiln -o $W/s_new --arch sm_90 > /dev/null & $KB compile $W/s.kiln -o $W/s_base --arch sm_90 > /dev/null & wait
echo "compiled $(el)"
cases=("total_f32 M=1,N=1048576" "total_f32 M=1,N=3000001" "total_f32 M=1,N=16777216" "softmax_f32 M=4,N=1048576")
for r in 1 2; do for keep in 1 0; do for c in "${cases[@]}"; do set -- $c; for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  echo "round $r keep=$keep $1 $2 $b $(KILN_KEEP_SCRATCH=$keep $k run $W/s_$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/keep.txt
done; done; done; done
echo "keep $(el)"; pack
for c in "total_f32 M=1,N=16777216" "total_f32 M=1,N=3000001" "total_f32 M=1,N=1048576"; do set -- $c; for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  timeout 120 ncu --metrics gpu__time_duration.sum,launch__grid_size --launch-skip 10 --launch-count 4 $k run $W/s_$b $1 --shape $2 --variant default --reps 20 --no-check > $W/ncu.log 2>&1
  echo "== $b $1 $2"; grep -E "total_f32_s0|gpu__time_duration|launch__grid_size" $W/ncu.log | awk '{$1=$1; print}' | head -12
done; done | tee $W/ncu.txt
echo "ncu $(el)"; pack
