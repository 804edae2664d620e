#!/usr/bin/env bash
# Session 36, device call 6: the shifted path rebuilt on the vector path's V x V blocks (each
# row loaded as the two aligned vectors around it and realigned in registers, one more block
# row for the input rows i0 - V .. i0 - 1; step 4 reads two chunks and realigns them). Three
# builds: new (the plan's rule: element by element where every load is a tiled 32-bit one),
# all (the shifted path for every step), old (main). Default variant, two rounds; every tiled
# variant of the new build at two shapes; Nsight Compute on the new bf16 default.
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call6 && cp $W/*.txt $OUT/call6/ 2>/dev/null; }
for b in old all; do
  python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_$b.xz build/tools/kiln_$b && chmod +x build/tools/kiln_$b
done
odd=bench/results/2026-11-29-h200-odd-transpose/odd.kiln
for b in new all old; do
  k=build/tools/kiln_$b; [ $b = new ] && k=$K
  $k compile $odd -o $W/$b --arch sm_90 > /dev/null &
done; wait
cases=("transpose_f32 M=8191,N=8193" "transpose_f32 M=16383,N=2047" "transpose_f32 M=4095,N=1001"
  "transpose_bf16 M=8191,N=8193" "transpose_bf16 M=1000,N=3001" "transpose_add M=8191,N=8193"
  "heads_keys B=8,S=2047,H=32,D=127" "transpose_bf16 M=8192,N=8192")
for r in 1 2; do
  for c in "${cases[@]}"; do
    set -- $c
    for b in new all old; do
      k=build/tools/kiln_$b; [ $b = new ] && k=$K
      t=$($k run $W/$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]' | awk '{print $1, $(NF-2)}')
      echo "round $r $1 $2 $b $t"
    done
  done
done | tee $W/ab.txt
echo "ab $(el)"; pack
for c in "transpose_f32 M=8191,N=8193 all" "transpose_bf16 M=8191,N=8193 new" "heads_keys B=8,S=2047,H=32,D=127 new"; do
  set -- $c
  k=build/tools/kiln_$3; [ $3 = new ] && k=$K
  for v in 0 1 2 3 4 5 6; do
    $k run $W/$3 $1 --shape $2 --variant $v --reps 50 --no-check 2>&1 | grep -E '^ *v[0-9]'
  done > $W/tiled_${1}_${2//[=,]/_}.txt
  echo "== $1 $2 ($3)"; awk '{print $1, $(NF-2)}' $W/tiled_${1}_${2//[=,]/_}.txt | tr '\n' ' '; echo
done | tee $W/tiled.txt
echo "tiled $(el)"; pack
timeout 60 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis_Tables -c 2 \
  $K run $W/new transpose_bf16 --shape M=8191,N=8193 --variant default --reps 1 --no-check > $W/ncu_bf16.txt 2>&1
grep -E "Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Registers Per|Achieved Occ|Warp Cycles Per Issued|bank" $W/ncu_bf16.txt | head -12
echo "ncu $(el)"; pack
