#!/usr/bin/env bash
# Device call 5: larger blocks for the tile, with their registers capped so that two (or one)
# still fit an SM (KILN_TILE_MINB: PTX .minnctapersm), on the experiment binary of call 4.
# Logs in $OUT/call5.tgz.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
W=/tmp/w5; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_exp.xz build/tools/kiln_exp && chmod +x build/tools/kiln_exp
K=build/tools/kiln_exp
i=0
for cfg in "" "KILN_TILE_BLOCK=512 KILN_TILE_MINB=2" "KILN_TILE_BLOCK=512 KILN_TILE_MINB=2 KILN_TILE_ITEMS=4" \
           "KILN_TILE_BLOCK=512 KILN_TILE_MINB=2 KILN_TILE_LOADS=16" "KILN_TILE_BLOCK=1024 KILN_TILE_MINB=1"; do
  i=$((i+1)); b=$W/sb_$i
  env $cfg $K compile examples/strided.kiln -o $b > /dev/null
  for c in "layernorm_strided --shape M=16384,N=4096" "layernorm_strided --shape M=16384,N=4096 --strides=x=1,16384" \
           "layernorm_strided_f32 --shape M=16384,N=4096" "layernorm_strided_f32 --shape M=16384,N=4096 --strides=x=1,16384" \
           "layernorm_strided --shape M=8192,N=8192" "layernorm_strided --shape M=32768,N=1000" \
           "layernorm_strided --shape M=16384,N=4096 --strides=x=4099,1" "layernorm_strided --shape M=4096,N=16384" \
           "layernorm_strided_f32 --shape M=65536,N=256"; do
    r=$(timeout 60 $K run $b $c --variant default --reps 30 --no-check 2>&1 | grep "v54" | awk '{print $(NF-2)}')
    echo "[${cfg:-default}] $c: $r us"
  done
done 2>&1 | tee $W/knobs.txt
tar czf $OUT/call5.tgz -C $W gpu.txt knobs.txt
