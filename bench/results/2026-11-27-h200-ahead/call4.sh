#!/usr/bin/env bash
# Session 18, device call 4: the row-scan tiers again now that rows load a step ahead (the
# committed build): a warp per row (v0), a block of 256 with one chunk a step (v2) and with
# two (v7, the default beyond the warp tier), over row lengths of 512 to 262144 at 128M
# elements (f32; bf16 and the fused kernel at fewer lengths), and the rule's pick (*).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w4; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz /tmp/kiln && chmod +x /tmp/kiln
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
K=/tmp/kiln
$K compile examples/scan.kiln -o $W/b > /dev/null; echo "compiled $(el)"
for kn in cumsum_rows:512,1024,2048,4096,8192,16384,32768,65536,262144 cumsum_bf16:2048,8192,16384,32768,65536,131072 \
    cumsum_fused:4096,8192,16384,32768; do
  IFS=: read -r kern Ns <<< "$kn"
  for N in ${Ns//,/ }; do
    M=$(( 134217728 / N ))
    for v in 0 2 7; do
      $K run $W/b $kern --shape M=$M,N=$N --variant $v --reps 30 --no-check 2>&1 |
        grep -E '^ *v[0-9]+' | awk -v k=$kern -v s=M=$M,N=$N '{print k, s, $1, $(NF-2), $NF}'
    done
  done
done | tee $W/tiers.txt
echo "tiers $(el)"; (cd $W && tar czf $OUT/call4.tgz gpu.txt tiers.txt)
