#!/usr/bin/env bash
# Session 51, device call 2 (data, main's build at 1657c1a): norms over rows whose length is
# not a multiple of the vector (the shifted rows) against their even neighbours: every
# variant's time (the five fastest), then Nsight Compute's sections of the default.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call2.tgz -C $W $(cd $W && ls *.txt 2>/dev/null) 2>/dev/null; }
tar xJf .carry/exp.tar.xz -C $W
CASES="layernorm_bf16:M=8191,N=1025 layernorm_bf16:M=8192,N=1024 layernorm_f32:M=16383,N=1023
layernorm_f32:M=16384,N=1024 layernorm_f32:M=4095,N=4097 layernorm_bf16:M=16383,N=4095
layernorm_bf16:M=16384,N=4096 rmsnorm_bf16:M=65535,N=511 softmax_bf16:M=16383,N=4095"
for c in $CASES; do
  k=${c%%:*}; s=${c#*:}
  timeout 120 $K run $W/exp/N_mb $k --shape $s --variant all --reps 30 --no-check --copy-baseline > $W/t.log 2>&1
  def=$(grep -E '^ *v[0-9]+\*' $W/t.log | awk '{print $1, $(NF-3), $NF "%"}')
  best=$(grep -E '^ *v[0-9]+' $W/t.log | awk '{m=$(NF-3); p=$NF; $NF=""; $(NF-1)=""; $(NF-2)=""; $(NF-3)=""; $(NF-4)=""; $(NF-5)=""; print m, p "%", $0}' | sort -g | head -5 | tr '\n' ';')
  echo "== $k $s | default $def | best $best"
done | tee $W/sweep.txt
echo "sweep $(el)"; pack
for c in layernorm_bf16:M=8191,N=1025 layernorm_bf16:M=8192,N=1024 layernorm_f32:M=16383,N=1023 layernorm_f32:M=16384,N=1024; do
  k=${c%%:*}; s=${c#*:}
  timeout 120 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section InstructionStats \
    -k regex:$k -c 1 $K run $W/exp/N_mb $k --shape $s --reps 1 --no-check > $W/ncu_${k}_${s//[,=]/_}.txt 2>&1
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Executed Ipc A|L1/TEX Hit|Mem Busy|Max Bandwidth|Warp Cycles Per Issued|Block Limit Reg|Executed Instructions  " $W/ncu_${k}_${s//[,=]/_}.txt | sed "s/^/$k $s: /"
done | tee $W/ncu_summary.txt
echo "ncu $(el)"; pack
