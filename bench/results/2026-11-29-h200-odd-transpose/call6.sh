#!/usr/bin/env bash
# Session 29, device call 6: which half of the scalar path's new mapping helps. Three builds of
# odd.kiln (the suite's transposes): new (loads and stores of a warp at consecutive elements,
# call 5's build), s (stores only: the loads as on main), old (main). Default variant, the
# three interleaved, two rounds of 100 launches.
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
for b in old s; do
  python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_$b.xz build/tools/kiln_$b && chmod +x build/tools/kiln_$b
done
d=bench/results/2026-11-29-h200-odd-transpose
for b in new s old; do
  k=build/tools/kiln_$b; [ $b = new ] && k=$K
  $k compile $d/odd.kiln -o $W/$b --arch sm_90 > /dev/null &
done; wait
cases=("transpose_f32 M=8191,N=8193" "transpose_f32 M=16383,N=2047" "transpose_f32 M=4095,N=1001"
  "transpose_bf16 M=8191,N=8193" "transpose_bf16 M=1000,N=3001" "transpose_add M=8191,N=8193"
  "heads_keys B=8,S=2047,H=32,D=127")
for r in 1 2; do
  for c in "${cases[@]}"; do
    set -- $c
    for b in new s old; do
      k=build/tools/kiln_$b; [ $b = new ] && k=$K
      t=$($k run $W/$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-2)}')
      echo "round $r $1 $2 $b $t"
    done
  done
done | tee $W/ab.txt
mkdir -p $OUT/call6 && cp $W/*.txt $OUT/call6/
