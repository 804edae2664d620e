#!/usr/bin/env bash
# Session 31, device call 3: bench/contraction.py, every case in one run, with this session's
# build (calls 1-2): Kiln beside cuBLAS and torch.compile(mode="max-autotune-no-cudagraphs").
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
tar xf .carry/lib.tar -C build
PYTHONPATH=python KILN_BIN=$K KILN_CACHE_DIR=/tmp/pc KILN_RUNTIME_LIB=build/lib/libkiln_runtime.so \
  timeout 480 python3 bench/contraction.py $W/contraction > $W/contraction_bench.txt 2>&1
echo "contraction.py: exit $?"; cat $W/contraction_bench.txt | grep -v "^ *$" | tail -20
cp $W/contraction/contraction.json $W/contraction.json.txt
mkdir -p $OUT/call3 && cp $W/*.txt $OUT/call3/
