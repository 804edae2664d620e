#!/usr/bin/env bash
# Session 34, device call 5: is call 4's 1.2 us where the kept scratch's tickets lie? The new
# build (tickets before the scratch: the workspace 16 KiB into the allocation), `flip` (the same
# with the tickets after the scratch: the workspace at the allocation's start, as in base) and
# base, two rounds interleaved.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
for b in base flip; do python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_$b.xz build/tools/kiln_$b && chmod +x build/tools/kiln_$b; done
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call5 && cp $W/*.txt $OUT/call5/ 2>/dev/null; }
$K compile bench/results/2026-11-29-h200-split-ticket/s.kiln -o $W/s_new --arch sm_90 > /dev/null &
build/tools/kiln_base compile bench/results/2026-11-29-h200-split-ticket/s.kiln -o $W/s_base --arch sm_90 > /dev/null & wait
ln -s $W/s_new $W/s_flip
cases=("softmax_f32 M=4,N=1048576" "total_f32 M=1,N=1048576" "total_f32 M=1,N=3000001" "total_f32 M=1,N=16777216")
for r in 1 2 3; do for c in "${cases[@]}"; do set -- $c; for b in new flip base; do
  k=$K; [ $b != new ] && k=build/tools/kiln_$b
  echo "round $r $1 $2 $b $($k run $W/s_$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/flip.txt
done; done; done
echo "flip $(el)"; pack
