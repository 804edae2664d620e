#!/usr/bin/env bash
# Session 32, device call 3: the registers read from the cubin when nvJitLink's cache hides
# ptxas's report (bc158d1, kiln) against the build before it (20549a3, kiln_prev). (a) Each
# compiles bench/memory_bound.kiln twice on this machine (the second compile finds every image
# in the CUDA compute cache): the images recorded without registers, and whether the second
# compile's images equal the first's; (b) the A/B on second-compile bundles, default variants,
# 100 launches, two rounds, on kernels whose grid or image depends on the registers (split
# grids, the occupancy hint of one-row-per-block and outer kernels); (c) every variant of the
# examples with reductions end to end from second-compile bundles of this build.
set -uo pipefail
W=/tmp/w3; source bench/device_setup.sh
unxz() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2"; }
unxz .carry/kiln_prev.xz build/tools/kiln_prev; chmod +x build/tools/kiln_prev
KP=build/tools/kiln_prev
t0=$(date +%s); el() { echo "($(( $(date +%s) - t0 )) s)"; }
pack() { mkdir -p $OUT/call3 && cp $W/*.txt $OUT/call3/ 2>/dev/null; }
count() {  # images without registers, images, and the registers of total_f32's split variants
  python3 - "$1" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
ims = [(k["name"], v["id"], i) for k in m["kernels"] for s in k["steps"] for v in s["variants"] for i in v["images"]]
zero = sum(1 for _, _, i in ims if not i.get("registers"))
tot = [(v, i["registers"], i.get("spill_bytes", 0)) for k, v, i in ims if k == "total_f32" and 19 < v < 23]
print(f"{zero} of {len(ims)} images without registers; total_f32 v20-22 (registers, spills): {tot}")
EOF
}
$K compile bench/memory_bound.kiln -o $W/fix1 --arch sm_90 -j 16 > /dev/null
echo "fix, first compile: $(count $W/fix1)" | tee $W/registers.txt
$K compile bench/memory_bound.kiln -o $W/fix2 --arch sm_90 -j 16 > /dev/null
echo "fix, second compile: $(count $W/fix2)" | tee -a $W/registers.txt
$KP compile bench/memory_bound.kiln -o $W/prev2 --arch sm_90 -j 16 > /dev/null
echo "prev, second compile: $(count $W/prev2)" | tee -a $W/registers.txt
python3 - $W/fix1 $W/fix2 $W/prev2 <<'EOF' | tee -a $W/registers.txt
import json, sys
def images(d):
    m = json.load(open(d + "/manifest.json"))
    return {(k["name"], v["id"]): (i.get("cubin_hash"), i.get("registers"), i.get("spill_bytes", 0))
            for k in m["kernels"] for s in k["steps"] for v in s["variants"] for i in v["images"]}
a, b, c = (images(d) for d in sys.argv[1:])
for name, other in (("fix2", b), ("prev2", c)):
    cub = sum(1 for k in a if a[k][0] != other[k][0]); reg = sum(1 for k in a if a[k][1] != other[k][1])
    spl = sum(1 for k in a if a[k][2] != other[k][2])
    print(f"{name} against fix1: {cub} cubins differ, {reg} registers differ, {spl} spills differ of {len(a)};",
          "e.g.", [(k, a[k][1:], other[k][1:]) for k in a if a[k][0] != other[k][0]][:4])
EOF
echo "compiled $(el)"; pack
cases=("total_f32 M=1,N=16777216" "total_f32 M=1,N=67108864" "logsumexp_bf16 M=8,N=262144"
  "layernorm_bf16 M=16384,N=4096" "rmsnorm_bf16 M=16384,N=4096" "softmax_bf16 M=8192,N=8192"
  "rowsum_f32 M=32768,N=4096" "colsum_bf16 M=65536,N=2048" "colsum_bf16 M=1048576,N=64" "ln_wgrad M=16384,N=4096"
  "colsum_f32 M=4096,N=32768" "mid_mean B=64,M=512,N=512")
for r in 1 2; do for c in "${cases[@]}"; do set -- $c; for b in fix2 prev2; do
  k=$K; [ $b = prev2 ] && k=$KP
  echo "round $r $1 $2 $b $($k run $W/$b $1 --shape $2 --variant default --reps 100 --no-check 2>&1 | grep -E '^ *v[0-9]|rror' | awk '{print $1, $(NF-2)}')" | tee -a $W/ab.txt
done; done; echo "ab round $r $(el)"; pack; done
examples="reduction_suite softmax layernorm rmsnorm rowsum logsumexp mean_var cross_entropy"
mkdir -p $W/pre; for ex in $examples; do $K compile examples/$ex.kiln -o $W/pre1/$ex --arch sm_90 -j 16 > /dev/null; $K compile examples/$ex.kiln -o $W/pre/$ex --arch sm_90 -j 16 > /dev/null || echo "FAIL compile $ex"; done
for ex in $examples; do echo "$ex second compile: $(count $W/pre/$ex)"; done | tee -a $W/registers.txt
export KILN_REQUIRE_GPU=1
for i in $(seq 0 15); do
  mkdir -p $W/e2e/$i/bundles; for ex in $examples; do ln -s $W/pre/$ex $W/e2e/$i/bundles/$ex; done
  KILN_GPU_EXAMPLES="$examples" KILN_GPU_SHARD=$i/16 timeout 300 tests/gpu/run_gpu_tests.sh $K $W/e2e/$i > $W/e2e_$i.log 2>&1 &
done; wait
for i in $(seq 0 15); do grep -qE 'passed,.*failed' $W/e2e_$i.log || echo "shard $i: no summary (timed out)"; done > $W/e2e_shards.txt
cat $W/e2e_[0-9]*.log > $W/e2e.txt; rm $W/e2e_[0-9]*.log
awk '/passed,.*failed/ {p+=$1; f+=$3; s+=$5} END {printf "e2e: %d passed, %d failed, %d skipped\n", p, f, s}' $W/e2e.txt | tee -a $W/gpu.txt
cat $W/e2e_shards.txt | tee -a $W/gpu.txt; grep -E 'FAIL' -A6 $W/e2e.txt | head -20; echo "e2e $(el)"; pack
