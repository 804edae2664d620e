#!/usr/bin/env bash
# Session 18, device call 3: why cumsum 4096 x 32768 f32 sits at 90% of copy when the same
# kernel on 16384 x 8192 runs at 95%. (a) The committed build's default (v7: a block of 256
# per row, 40 registers, 6 blocks an SM: 792 at once on 132 SMs) over row counts that fill
# whole waves (3960 = 5 x 792, 4752 = 6 x 792) and partial ones (4096, 4224, 5544 + 1 ...),
# rows of 32768; (b) the same with the row kernels of 256 threads held to 32 registers
# (8 blocks an SM, 1056 at once; built with KILN_EXP8=1, an experiment only), every variant.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w3; mkdir -p $W/q
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2" && chmod +x "$2"; }
mkdir -p build/tools; unxz .carry/kiln.xz build/tools/kiln; unxz .carry/kiln_exp8.xz /tmp/kiln_exp8
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { (cd $W && tar czf $OUT/call3.tgz gpu.txt q *.txt); }
K=build/tools/kiln
$K compile examples/scan.kiln -o $W/b_new > /dev/null &
KILN_EXP8=1 /tmp/kiln_exp8 compile examples/scan.kiln -o $W/b_exp8 > /dev/null &
wait; echo "compiled $(el)"
for b in new exp8; do
  for M in 3960 4096 4224 4752 5280 792 1584 2000 8192; do
    for v in 7 2; do
      $K run $W/b_$b cumsum_rows --shape M=$M,N=32768 --variant $v --reps 30 --no-check 2>&1 |
        grep -E '^ *v[0-9]+' | awk -v b=$b -v m=$M '{print b, "M=" m, $1, $(NF-2), $NF}'
    done
  done
done | tee $W/q/sweep.txt
echo "sweep $(el)"; pack
for b in new exp8; do
  for s in cumsum_rows:M=4096,N=32768 cumsum_rows:M=16384,N=8192 cumsum_bf16:M=4096,N=32768 cumsum_fused:M=4096,N=32768; do
    IFS=: read -r kern shape <<< "$s"
    $K run $W/b_$b $kern --shape $shape --variant all --reps 30 --no-check --copy-baseline > $W/q/all_${b}_${kern}_${shape//[=,]/_}.txt 2>&1
    echo "== $b $kern $shape"; grep -E '^ *v[0-9]+' $W/q/all_${b}_${kern}_${shape//[=,]/_}.txt | awk '{printf "%s %s | ", $1, $(NF-3)}'; echo
  done
done
echo "all $(el)"; pack
