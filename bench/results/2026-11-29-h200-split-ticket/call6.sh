#!/usr/bin/env bash
# Session 34, device call 6: the kept tickets in an allocation of their own, made the first
# time a launch on the stream takes tickets (the scratch allocated exactly as in base), against
# base: does softmax_f32's 1.2 us (calls 3-5) go? Three rounds interleaved.
set -uo pipefail
W=/tmp/w7; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_base.xz build/tools/kiln_base && chmod +x build/tools/kiln_base
KB=build/tools/kiln_base
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call6 && cp $W/*.txt $OUT/call6/ 2>/dev/null; }
$K compile bench/results/2026-11-29-h200-split-ticket/s.kiln -o $W/s_new --arch sm_90 > /dev/null &
$KB compile bench/results/2026-11-29-h200-split-ticket/s.kiln -o $W/s_base --arch sm_90 > /dev/null & wait
cases=("softmax_f32 M=4,N=1048576" "total_f32 M=1,N=1048576" "total_f32 M=1,N=3000001" "total_f32 M=1,N=16777216" "total_f32 M=1,N=67108864")
for r in 1 2 3; do for c in "${cases[@]}"; do set -- $c; for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  echo "round $r $1 $2 $b $($k run $W/s_$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/sep.txt
done; done; done
echo "sep $(el)"; pack
