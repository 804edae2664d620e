#!/usr/bin/env bash
# Session 14, device call 3: contraction variants under sustained load (bench/experiments/
# gemm_power/run.py, an experiment build with KILN_EXP_REMAP and raster/group variants v14-v19)
# beside cuBLAS, with the SM clock and board power.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/w3; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader | tee $W/gpu.txt
mkdir -p /tmp/exp
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_exp.xz /tmp/exp/kiln && chmod +x /tmp/exp/kiln
cp .carry/libexp.so /tmp/exp/libkiln_runtime.so
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
PYTHONPATH=python KILN_BIN=/tmp/exp/kiln KILN_RUNTIME_LIB=/tmp/exp/libkiln_runtime.so KILN_CACHE_DIR=/tmp/pc \
  timeout 500 python3 bench/experiments/gemm_power/run.py $W/power "; 7:12,11:13; 7:14; 7:15,11:18; 7:16; 7:17; 7:19" > $W/power.txt 2>&1
echo "exit $? $(el)"; tail -60 $W/power.txt
tar czf $OUT/call3.tgz -C $W .
