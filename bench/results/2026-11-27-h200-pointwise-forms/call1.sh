#!/usr/bin/env bash
# Session 16, device call 1: pointwise kernels whose register count is set by paths that do
# not run. Three builds of one source: "base" (HEAD, 66a7266), "pass" (bf16 words stored as
# loaded), "split" (the same binary with KILN_EXP_NO64 and KILN_EXP_NOANY: the kernel holds only
# the 32-bit row-aligned form, valid for the shapes below only), and "split8" (plus unroll 8).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
W=/tmp/s16c1; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
un() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" $1 $2 && chmod +x $2; }
un .carry/kiln_base.xz $W/kiln_base; un .carry/kiln_exp.xz $W/kiln_exp
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { tar czf $OUT/call1.tgz -C $W --exclude='b_*' --exclude='kiln_*' . ; }
for ex in embedding rotary dropout causal_mask; do
  $W/kiln_base compile examples/$ex.kiln -o $W/b_base_$ex > /dev/null &
  $W/kiln_exp compile examples/$ex.kiln -o $W/b_pass_$ex > /dev/null &
  KILN_EXP_NO64=1 KILN_EXP_NOANY=1 $W/kiln_exp compile examples/$ex.kiln -o $W/b_split_$ex > /dev/null &
done
for ex in embedding rotary; do
  KILN_EXP_UNROLL8=1 KILN_EXP_NO64=1 KILN_EXP_NOANY=1 $W/kiln_exp compile examples/$ex.kiln -o $W/b_split8_$ex > /dev/null &
done
$W/kiln_base compile bench/memory_bound.kiln -o $W/b_base_mb > /dev/null &
$W/kiln_exp compile bench/memory_bound.kiln -o $W/b_pass_mb > /dev/null &
KILN_EXP_NO64=1 KILN_EXP_NOANY=1 $W/kiln_exp compile bench/memory_bound.kiln -o $W/b_split_mb > /dev/null &
wait
echo "compiled $(el)"
run() {  # name bundle-suffix kernel shape [extra]
  local tag=$1 ex=$2 k=$3 s=$4; shift 4
  for b in base pass split split8; do
    [[ -d $W/b_${b}_$ex ]] || continue
    $W/kiln_$([[ $b == base ]] && echo base || echo exp) run $W/b_${b}_$ex $k --shape $s "$@" --variant default --reps 1 > $W/check_${tag}_$b.txt 2>&1 || echo "CHECK FAILED $tag $b"
    $W/kiln_$([[ $b == base ]] && echo base || echo exp) run $W/b_${b}_$ex $k --shape $s "$@" --variant all --reps 30 --no-check > $W/time_${tag}_$b.txt 2>&1
  done
  echo "$tag $(el)"; pack
}
$W/kiln_base run $W/b_base_mb add_f32 --shape M=256,N=256 --copy-baseline --reps 5 --no-check | tail -1 > $W/copy.txt
run embedding embedding embedding T=131072,V=32000,D=4096
run rotary rotary rotary T=16384,H=32,R=64,P=16384
run dropout dropout dropout_bf16 M=16384,N=8192 --scalar p=0.1
run causal causal_mask causal_mask T=16384
run gelu_erf mb bias_gelu_erf M=16384,N=8192
run gelu_tanh mb bias_gelu_tanh M=16384,N=8192
run add_pos mb add_pos B=32,S=2048,D=1024
M="launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,smsp__inst_executed.sum"
for b in base split; do
  ncu --metrics $M $W/kiln_$([[ $b == base ]] && echo base || echo exp) run $W/b_${b}_embedding embedding --shape T=131072,V=32000,D=4096 --variant default --reps 1 --no-check > $W/ncu_embedding_$b.txt 2>&1
  ncu --metrics $M $W/kiln_$([[ $b == base ]] && echo base || echo exp) run $W/b_${b}_rotary rotary --shape T=16384,H=32,R=64,P=16384 --variant default --reps 1 --no-check > $W/ncu_rotary_$b.txt 2>&1
done
echo "ncu $(el)"; pack
for f in $W/time_*; do echo "== $f"; grep -E "^\s+v[0-9]+\*" $f; done
