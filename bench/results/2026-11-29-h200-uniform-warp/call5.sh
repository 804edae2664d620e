#!/usr/bin/env bash
# Session 31, device call 5: the sum of one f32 row of 2^22 to 2^26 elements, every variant
# (`kiln run` without --variant: each candidate checked, then timed, 100 launches), to tell
# whether a better variant exists where the default trails torch.compile (2^24: 29.2 us against
# 24.5 in call 4); torch.compile's generated code at 2^24.
set -uo pipefail
W=/tmp/w5; source bench/device_setup.sh
D=bench/results/2026-11-29-h200-uniform-warp
$K compile bench/memory_bound.kiln -o $W/mb --arch sm_90 -j 8 > /dev/null
for n in 16777216 4194304 67108864; do
  timeout 120 $K run $W/mb total_f32 --shape M=1,N=$n --reps 100 > $W/all_$n.txt 2>&1
  echo "$n: $(grep -E '^ *v[0-9]' $W/all_$n.txt | sort -k$(( $(head -1 $W/all_$n.txt | wc -w) )) -g | head -0)"
  grep -E '^ *v[0-9]' $W/all_$n.txt | awk '{print $(NF-2), $0}' | sort -g | head -6
done | tee $W/best.txt
TORCHINDUCTOR_CACHE_DIR=/tmp/ti TORCH_LOGS=output_code timeout 150 python3 $D/torch_sum.py 16777216 > $W/torch_code_16m.log 2>&1
grep -E "torch.compile sum|def triton|XBLOCK|RBLOCK|R0_BLOCK|grid|triton_heuristics|num_warps|reduction_hint" $W/torch_code_16m.log | head -40 > $W/torch_code_16m.txt
mkdir -p $OUT/call5 && cp $W/*.txt $OUT/call5/
