#!/usr/bin/env bash
# Session 31, device call 6 (an experiment): split rows over more blocks than are resident.
# kiln_exp is this session's build with KILN_EXP_SPLIT_MULT multiplying the split's blocks per
# row (bundle::split_blocks: resident blocks x SMs / rows, at most reduced / (2 x chunk)); not
# submitted. Default variants, 100 launches, multipliers interleaved, two rounds.
set -uo pipefail
W=/tmp/w6; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_exp.xz build/tools/kiln_exp && chmod +x build/tools/kiln_exp
KE=build/tools/kiln_exp
$K compile bench/memory_bound.kiln -o $W/mb --arch sm_90 -j 8 > /dev/null
cases=("total_f32 M=1,N=1048576" "total_f32 M=1,N=4194304" "total_f32 M=1,N=16777216" "total_f32 M=1,N=33554432"
  "total_f32 M=1,N=67108864" "total_f32 M=4,N=4194304" "logsumexp_bf16 M=8,N=262144" "softmax_f32 M=4,N=1048576"
  "rmsnorm_bf16 M=2,N=1000000")
for r in 1 2; do for c in "${cases[@]}"; do set -- $c; for m in 1 2 3 4 8; do
  echo "round $r $1 $2 x$m $(KILN_EXP_SPLIT_MULT=$m $KE run $W/mb $1 --shape $2 --variant default --reps 100 $([ $r = 1 ] || echo --no-check) 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-4), $(NF-2)}')"
done; done; done | tee $W/mult.txt
mkdir -p $OUT/call6 && cp $W/*.txt $OUT/call6/
