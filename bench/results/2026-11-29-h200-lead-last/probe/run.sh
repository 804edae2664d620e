#!/usr/bin/env bash
# Session 32's probe, run on the device from the repository root with the probe built here
# (probe.cpp) and total_f32's v21 PTX (sm_90, from a local compile of bench/memory_bound.kiln)
# carried in .carry/probe/: the environment, nvJitLink's log for one PTX linked repeatedly, and
# what a compile of total_f32 alone records. The output is probe.txt beside this file.
W=/tmp/wp; source bench/device_setup.sh > /dev/null
awk '/kernel total_f32/,/^}/' bench/memory_bound.kiln > $W/tot.kiln
{
echo "env: KILN_CUDA_ROOT=${KILN_CUDA_ROOT:-} CUDA_HOME=${CUDA_HOME:-} CUDA_PATH=${CUDA_PATH:-} LANG=${LANG:-} LC_ALL=${LC_ALL:-}"
env | grep -iE "cuda|nvjit|ptx" | head
.carry/probe/probe /usr/local/cuda/lib64/libnvJitLink.so .carry/probe/v21.ptx 2>&1 | head -16
$K compile $W/tot.kiln -o $W/tot --arch sm_90 -j 2 2>&1 | tail -5
python3 -c "
import json; m = json.load(open('$W/tot/manifest.json'))
for v in m['kernels'][0]['steps'][0]['variants'][19:23]: print(v['id'], v['images'])"
ls $W/tot | head -5; ls $W/tot | grep -c cubin
} > $W/probe.txt 2>&1
mkdir -p $OUT/probe && cp $W/probe.txt $OUT/probe/; cat $W/probe.txt
