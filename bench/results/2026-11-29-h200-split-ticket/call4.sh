#!/usr/bin/env bash
# Session 34, device call 4: call 3 found softmax_f32 (no tickets, the same cubin in both
# builds) 1.2 us slower in the new build with the kept scratch, level without it. Its three
# kernels' durations under Nsight Compute in both builds; end to end with dependent launches on
# and off (KILN_DEPENDENT_LAUNCH=0), two rounds interleaved.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_base.xz build/tools/kiln_base && chmod +x build/tools/kiln_base
KB=build/tools/kiln_base
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call4 && cp $W/*.txt $OUT/call4/ 2>/dev/null; }
cp bench/results/2026-11-29-h200-split-ticket/s.kiln $W/s.kiln
$K compile $W/s.kiln -o $W/s_new --arch sm_90 > /dev/null & $KB compile $W/s.kiln -o $W/s_base --arch sm_90 > /dev/null & wait
cases=("softmax_f32 M=4,N=1048576" "total_f32 M=1,N=1048576" "total_f32 M=1,N=16777216")
for r in 1 2; do for pdl in 1 0; do for c in "${cases[@]}"; do set -- $c; for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  echo "round $r pdl=$pdl $1 $2 $b $(KILN_DEPENDENT_LAUNCH=$pdl $k run $W/s_$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/pdl.txt
done; done; done; done
echo "pdl $(el)"; pack
for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  timeout 120 ncu --metrics gpu__time_duration.sum,launch__grid_size --launch-skip 30 --launch-count 6 $k run $W/s_$b softmax_f32 --shape M=4,N=1048576 --variant default --reps 20 --no-check > $W/ncu.log 2>&1
  echo "== $b softmax_f32"; grep -E "softmax_f32_s0|gpu__time_duration|launch__grid_size" $W/ncu.log | awk '{$1=$1; print}' | head -18
done | tee $W/ncu.txt
echo "ncu $(el)"; pack
