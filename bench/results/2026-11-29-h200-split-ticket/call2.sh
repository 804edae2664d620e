#!/usr/bin/env bash
# Session 34, device call 2, speed: this session's build (kiln: split rows that end through
# tickets, one launch fewer) against main before it (kiln_base, built at 53c8cfa: the same
# runtime and code generator as 0993e51), default variants, 100 launches, L2 flushed, two
# rounds interleaved case by case; softmax_f32 and rmsnorm_bf16 (splits whose last phase
# walks: no tickets) and colsum (outer splits) as controls. Then, in the same run, the peak
# copy bandwidth beside one f32 row's sum (kiln run --copy-baseline) and torch.compile's sum.
set -uo pipefail
W=/tmp/w2; source bench/device_setup.sh
python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" .carry/kiln_base.xz build/tools/kiln_base && chmod +x build/tools/kiln_base
KB=build/tools/kiln_base
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call2 && cp $W/*.txt $OUT/call2/ 2>/dev/null; }
for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  $k compile bench/memory_bound.kiln -o $W/mb_$b --arch sm_90 -j 4 > /dev/null &
  $k compile examples/global_max_norm.kiln -o $W/gm_$b --arch sm_90 > /dev/null &
  $k compile examples/mean_var.kiln -o $W/mv_$b --arch sm_90 > /dev/null &
done
wait; echo "compiled $(el)"
cases=("mb total_f32 M=1,N=1048576" "mb total_f32 M=1,N=4194304" "mb total_f32 M=1,N=16777216"
  "mb total_f32 M=1,N=67108864" "mb total_f32 M=1,N=3000001" "mb total_f32 M=4,N=4194304"
  "mb rowsum_f32 M=16,N=1000000" "mb rowmax_bf16 M=2,N=5000000" "mb logsumexp_bf16 M=8,N=262144"
  "mv mean_var M=2,N=4000000" "gm global_max_norm M=1000,N=1000" "gm global_max_norm M=8192,N=8192"
  "mb softmax_f32 M=4,N=1048576" "mb rmsnorm_bf16 M=2,N=1000000" "mb colsum_bf16 M=1048576,N=64")
for r in 1 2; do for c in "${cases[@]}"; do set -- $c; for b in new base; do
  k=$K; [ $b = base ] && k=$KB
  echo "round $r $2 $3 $b $($k run $W/${1}_$b $2 --shape $3 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/ab.txt
done; done; echo "ab round $r $(el)"; pack; done
# The default checked against the interpreter, then timed beside the copy peak (1 GiB each way).
for n in 1048576 4194304 16777216 67108864; do
  $K run $W/mb_new total_f32 --shape M=1,N=$n --variant default --reps 100 --copy-baseline > $W/copy_$n.log 2>&1
  echo "N=$n: $(grep -E '^ *v[0-9]|copy|rror|check' $W/copy_$n.log | tr '\n' ' ')" | tee -a $W/copy.txt
done
pack
TORCHINDUCTOR_CACHE_DIR=/tmp/ti timeout 200 python3 bench/results/2026-11-29-h200-uniform-warp/torch_sum.py 1048576 4194304 16777216 67108864 2>&1 | grep -v '^ *$' | tee -a $W/torch_sum.txt
echo "torch $(el)"; pack
