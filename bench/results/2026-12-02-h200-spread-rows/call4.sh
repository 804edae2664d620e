#!/usr/bin/env bash
# Session 51, device call 4: the spread tiers (this build, N) against main at 1657c1a (O, carried
# as .carry/kiln_old.xz with its bundles exp/old_*): every variant of the kernels whose tiers
# changed against the interpreter at awkward shapes, random inputs then NaN and infinities;
# memcheck of the defaults; then the defaults of O and N interleaved, two rounds, 50 launches.
set -uo pipefail
W=/tmp/w4; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call4.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" \
  .carry/kiln_old.xz build/tools/kiln_old && chmod +x build/tools/kiln_old
KO=build/tools/kiln_old
CHECKS="S:rowsum_f32:M=1,N=1 S:rowsum_f32:M=3,N=2047 S:rowsum_f32:M=17,N=4099 S:rowsum_f32:M=5,N=8191
S:rowsum_f32:M=1000,N=1025 S:rowsum_f32:M=2,N=8193 S:rowmax_f32:M=7,N=3001 S:rowmax_f32:M=300,N=2048
S:rowdot_f32:M=9,N=6001 S:rowdot_f32:M=130,N=4096 S:meanvar_f32:M=5,N=3000
N_rows:channel_sums:N=3,C=5,H=7,W=7 N_rows:channel_sums:N=2,C=3,H=33,W=33 N_rows:channel_sums:N=40,C=3,H=8,W=8
N_rows:diag_sums:N=3,C=4,H=9,W=9 N_rows:diag_sums:N=2,C=3,H=30,W=30"
pass=0; fail=0
for inputs in random specials; do
  for c in $CHECKS; do
    IFS=: read -r b k s <<<"$c"
    if KILN_RUN_INPUTS=$inputs timeout 120 $K run $W/exp/$b $k --shape $s --variant all --reps 1 > $W/c.log 2>&1 &&
       ! grep -q MISMATCH $W/c.log; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED $inputs $c"; tail -5 $W/c.log; fi
  done
done 2>&1 | tee $W/checks.txt
echo "checks: $(grep -c FAILED $W/checks.txt) failed of $(( $(echo $CHECKS | wc -w) * 2 )) $(el)" | tee -a $W/checks.txt
for c in S:rowsum_f32:M=1000,N=3001 S:rowdot_f32:M=33,N=6000 N_rows:channel_sums:N=64,C=512,H=7,W=7; do
  IFS=: read -r b k s <<<"$c"
  compute-sanitizer --tool memcheck $K run $W/exp/$b $k --shape $s --reps 1 2>&1 | grep -E "ERROR SUMMARY|v[0-9]+\*" | sed "s/^/$k $s: /"
done | tee $W/memcheck.txt
echo "memcheck $(el)"; pack
run1() { timeout 60 $1 run $W/exp/$2 $3 --shape $4 --variant default --reps 50 --no-check 2>&1 | grep -E '^ *v[0-9]+' | awk '{print $1, $(NF-2)}' | head -1; }
CASES="S:rowsum_f32:M=264,N=3000 S:rowsum_f32:M=4224,N=1500 S:rowsum_f32:M=16896,N=3000 S:rowsum_f32:M=8448,N=6000
S:rowsum_f32:M=4096,N=3001 S:rowsum_f32:M=1000,N=1999 S:rowsum_f32:M=16384,N=1027 S:rowsum_f32:M=264,N=5001
S:rowsum_f32:M=32768,N=2048 S:rowsum_f32:M=32768,N=4096 S:rowmax_f32:M=1056,N=6000 S:rowmax_f32:M=2000,N=4095 S:rowdot_f32:M=4224,N=1500
S:rowdot_f32:M=1056,N=7001 S:rowdot_f32:M=65536,N=2048 S:meanvar_f32:M=4224,N=3000 N_rows:channel_sums:N=64,C=512,H=7,W=7
N_rows:channel_sums:N=32,C=1024,H=7,W=7 N_rows:channel_sums:N=32,C=256,H=14,W=14 N_rows:channel_sums:N=128,C=256,H=7,W=7
N_rows:channel_sums:N=16,C=1024,H=7,W=7 N_rows:diag_sums:N=4,C=512,H=32,W=32 N_rows:diag_sums:N=2,C=2048,H=45,W=45"
for round in 1 2; do
  for c in $CASES; do
    IFS=: read -r b k s <<<"$c"
    echo "round $round | $k $s | O $(run1 $KO old_$b $k $s) | N $(run1 $K $b $k $s)"
  done
done | tee $W/ab.txt
echo "ab $(el)"; pack
