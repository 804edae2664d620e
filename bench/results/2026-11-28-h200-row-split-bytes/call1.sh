#!/usr/bin/env bash
# Session 24, device call 1 (its timings were lost: the grep below kept the table's header line,
# "  variant ...", not the variant's row; call 2 repeats them; the checks at the end are kept,
# call1/checked.txt): the row split's limit in bytes (bundle/rule.h kSplitMinRowBytes)
# on kernels and lengths it was not fitted to. Each bundle (compiled for sm_90 by this
# session's kiln, carried as .carry/rows.tar.xz) is run twice by the same kiln: as compiled
# (the split only for rows of 256 KiB or more) and with every split's min_reduced removed from
# its manifest (the rule before it: the split's chunks alone decide). Same cubins, so only the
# rule's pick differs. The default variant at each shape, two rounds interleaved, 100 launches
# each; then each new pick once more, checked against the interpreter, at 16 rows.
set -uo pipefail
W=/tmp/w1
source bench/device_setup.sh
tar xJf .carry/rows.tar.xz -C $W
for b in reduction_suite cross_entropy layernorm rows; do
  rm -rf $W/$b.old && cp -r $W/$b $W/$b.old
  python3 - $W/$b.old/manifest.json <<'PY'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
n = 0
for k in m["kernels"]:
    for s in k["steps"]:
        for v in s["variants"]:
            if "split" in v and v["split"].pop("min_reduced", None) is not None:
                n += 1
json.dump(m, open(p, "w"), indent=2)
print(p, n, "limits removed")
PY
done
cases="reduction_suite:rowsum_bf16:N reduction_suite:logsumexp_bf16:N reduction_suite:mean_var_bf16:N
cross_entropy:cross_entropy:V layernorm:layernorm:N rows:softmax_bf16:N rows:rowsum_f16:N
rows:rmsnorm_bf16:N"
t0=$(date +%s)
for round in 1 2; do
  for c in $cases; do
    IFS=: read -r b k sym <<< "$c"
    for n in 65536 81920 100277 114688 128256 131071; do
      for m in 1 16 100; do
        for which in new old; do
          dir=$W/$b
          [[ $which == old ]] && dir=$W/$b.old
          line=$($K run $dir $k --shape M=$m,$sym=$n --variant default --reps 100 --no-check 2>&1 |
                 grep -E '^  v|rror' | head -1)
          echo "$round $which $k M=$m,$sym=$n $line"
        done
      done
    done
  done
  echo "round $round $(( $(date +%s) - t0 )) s" >&2
done > $W/ab.txt 2>&1
python3 - $W/ab.txt <<'PY' | tee $W/ab_summary.txt
import sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
pick = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 8 or not f[4].startswith("v"):
        if line.strip(): print("UNPARSED", line.strip())
        continue
    rnd, which, k, shape = f[0], f[1], f[2], f[3]
    t[(k, shape)][which].append(float(f[-3]))
    pick[(k, shape, which)] = f[4]
ratios = []
for (k, shape), d in sorted(t.items()):
    if not d["new"] or not d["old"]:
        continue
    new, old = min(d["new"]), min(d["old"])
    same = pick[(k, shape, "new")] == pick[(k, shape, "old")]
    r = new / old
    if not same:
        ratios.append(r)
    print(f"{k} {shape} new {pick[(k, shape, 'new')]} {new:.2f} old {pick[(k, shape, 'old')]} "
          f"{old:.2f} new/old {r:.3f}{' (same pick)' if same else ''}")
if ratios:
    print(f"changed picks: {len(ratios)}, new/old {min(ratios):.3f}..{max(ratios):.3f}, "
          f"faster at {sum(r < 0.98 for r in ratios)}, slower at {sum(r > 1.02 for r in ratios)}")
PY
# Correctness of the new picks: checked against the interpreter at 16 rows.
for c in $cases; do
  IFS=: read -r b k sym <<< "$c"
  for n in 65536 100277 131071; do
    echo "$k M=16,$sym=$n $($K run $W/$b $k --shape M=16,$sym=$n --variant default --reps 5 2>&1 |
                           grep -E '^  v|rror|MISMATCH' | head -2)"
  done
done > $W/checked.txt 2>&1
cat $W/checked.txt
echo "checked: $(grep -c ' ok ' $W/checked.txt) ok of $(wc -l < $W/checked.txt)"
echo "total $(( $(date +%s) - t0 )) s"
tar czf $OUT/call1.tgz -C $W --exclude=reduction_suite --exclude=cross_entropy --exclude=layernorm \
  --exclude=rows --exclude='*.old' .
