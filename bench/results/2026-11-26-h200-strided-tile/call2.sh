#!/usr/bin/env bash
# Device call 2: the tile's shape, measured. An experiment binary whose tile takes its rows per
# block, block size and loads in flight per thread from the environment (KILN_TILE_RPB,
# KILN_TILE_BLOCK, KILN_TILE_LOADS; not committed), the copy's stores at constant offsets
# (compiler/lower/reduction_rows.cpp tile_address). Logs in $OUT/call2.tgz.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
W=/tmp/w2; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
mkdir -p build/tools
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln.xz build/tools/kiln && chmod +x build/tools/kiln
K=build/tools/kiln
for cfg in "8 256 16" "8 256 8" "4 128 16" "4 256 16" "16 512 16" "8 256 32" "8 128 16" "8 512 16"; do
  set -- $cfg
  b=$W/sb_$1_$2_$3
  KILN_TILE_RPB=$1 KILN_TILE_BLOCK=$2 KILN_TILE_LOADS=$3 $K compile examples/strided.kiln -o $b > /dev/null
  for c in "layernorm_strided --shape M=16384,N=4096" "layernorm_strided --shape M=16384,N=4096 --strides=x=4099,1" \
           "layernorm_strided --shape M=8192,N=8192" "layernorm_strided --shape M=32768,N=1000" "layernorm_strided_f32 --shape M=16384,N=4096"; do
    echo "== rpb=$1 block=$2 loads=$3 $c"
    timeout 60 $K run $b $c --variant default --reps 30 --no-check 2>&1 | grep "v54"
  done
done 2>&1 | tee $W/shapes.txt | paste - - | awk '{print}'
tar czf $OUT/call2.tgz -C $W gpu.txt shapes.txt
