#!/usr/bin/env bash
# Session 42, device call 3: the hold before and after on the kernels call 2 had no "before"
# for: one binary (the submitted build plus an experiment's hook, KILN_EXP_NO_HOLD=1, that
# skips the .minnctapersm request: not committed) compiling examples/permute.kiln and
# bf16_add.kiln both ways; each case's default timed without and with the hold, alternating.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
  .carry/kiln_nohold.xz build/tools/kiln_hook && chmod +x build/tools/kiln_hook
KH=build/tools/kiln_hook D=bench/results/2026-12-01-h200-tiled-registers
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call3.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
for b in hold nohold; do
  e=; [[ $b == nohold ]] && e=1
  KILN_EXP_NO_HOLD=$e $KH compile examples/permute.kiln -o $W/perm_$b --arch sm_90 > /dev/null &
  KILN_EXP_NO_HOLD=$e $KH compile $D/bf16_add.kiln -o $W/ba_$b --arch sm_90 > /dev/null &
done; wait; echo "compiled $(el)"
for c in transpose_add:N=8192,M=8192 transpose_add:N=8191,M=8193 transpose_add:N=8191,M=8192 \
         transpose_add:N=1000,M=3001 heads_keys_f32:B=4,S=2048,H=16,D=128 heads_keys_f32:B=4,S=2047,H=16,D=127 \
         transpose_bf16:N=8191,M=8192 transpose_bf16:N=4096,M=12288 transpose_bf16:N=3001,M=5003 \
         heads_keys:B=8,S=2047,H=32,D=127 heads_keys:B=2,S=4096,H=16,D=64 \
         ba:transpose_add_bf16:N=8192,M=8192 ba:transpose_add_bf16:N=8191,M=8192 ba:transpose_add_bf16:N=8191,M=8193; do
  p=perm; [[ $c == ba:* ]] && { p=ba; c=${c#ba:}; }
  k=${c%%:*} s=${c#*:} line="$k $s:"
  for b in nohold hold nohold hold; do
    f=$W/run_${b}_${k}_${s//[=,]/_}.txt
    timeout 40 $K run $W/${p}_$b $k --shape $s --variant default --copy-baseline --reps 50 > $f 2>&1
    line="$line | $b $(grep -E '^ *v[0-9]+' $f | awk '{print $1, $(NF-3), "us", $NF "%"}')"
  done
  echo "$line"
done | tee $W/times.txt
echo "times $(el)"; pack
