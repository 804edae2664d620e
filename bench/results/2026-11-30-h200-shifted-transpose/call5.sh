#!/usr/bin/env bash
# Session 36, device call 5: call 4's build with edge tiles 8 vectors (chunks) at a time instead
# of one. Default variant new against main (kiln_old), two rounds; every variant of the new
# build at odd and aligned shapes.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call5 && cp $W/*.txt $OUT/call5/ 2>/dev/null; }
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
odd=bench/results/2026-11-29-h200-odd-transpose/odd.kiln
$K compile $odd -o $W/new --arch sm_90 > /dev/null &
build/tools/kiln_old compile $odd -o $W/old --arch sm_90 > /dev/null &
wait
cases=("transpose_f32 M=8191,N=8193" "transpose_f32 M=16383,N=2047" "transpose_f32 M=4095,N=1001"
  "transpose_bf16 M=8191,N=8193" "transpose_bf16 M=1000,N=3001" "transpose_add M=8191,N=8193"
  "heads_keys B=8,S=2047,H=32,D=127" "transpose_bf16 M=8192,N=8192")
for r in 1 2; do
  for c in "${cases[@]}"; do
    set -- $c
    for b in new old; do
      k=build/tools/kiln_$b; [ $b = new ] && k=$K
      t=$($k run $W/$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-2)}')
      echo "round $r $1 $2 $b $t"
    done
  done
done | tee $W/ab.txt
echo "ab $(el)"; pack
for c in "transpose_f32 M=8191,N=8193" "transpose_f32 M=16383,N=2047" "transpose_bf16 M=8191,N=8193" "transpose_bf16 M=1000,N=3001" "heads_keys B=8,S=2047,H=32,D=127" "transpose_f32 M=8192,N=8192" "transpose_bf16 M=8192,N=8192" "heads_keys B=8,S=2048,H=32,D=128"; do
  set -- $c
  for v in 0 1 2 3 4 5 6 7 8; do
    $K run $W/new $1 --shape $2 --variant $v --reps 50 --no-check 2>&1 | grep -E '^ *v[0-9]'
  done > $W/tiled_${1}_${2//[=,]/_}.txt
  echo "== $1 $2"; cat $W/tiled_${1}_${2//[=,]/_}.txt | awk '{print $1, $(NF-2)}' | tr '\n' ' '; echo
done | tee $W/tiled.txt
echo "tiled $(el)"; pack
