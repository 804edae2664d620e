# The table of a call's ab.txt (call2.sh, call3.sh): each shape's best of two rounds for the
# bundle as compiled ("new") and without the splits' min_reduced ("old"), and their ratio.
#   python3 ab_summary.py ab.txt
import sys, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
pick = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 8 or not f[4][:2] in ("v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9"):
        if line.strip(): print("UNPARSED", line.strip())
        continue
    rnd, which, k, shape = f[0], f[1], f[2], f[3]
    t[(k, shape)][which].append(float(f[-3]))
    pick[(k, shape, which)] = f[4]
ratios = []
every = []
for (k, shape), d in sorted(t.items()):
    if not d["new"] or not d["old"]:
        continue
    new, old = min(d["new"]), min(d["old"])
    same = pick[(k, shape, "new")] == pick[(k, shape, "old")]
    r = new / old
    every.append(r)
    if not same:
        ratios.append(r)
    print(f"{k} {shape} new {pick[(k, shape, 'new')]} {new:.2f} old {pick[(k, shape, 'old')]} "
          f"{old:.2f} new/old {r:.3f}{' (same pick)' if same else ''}")
if ratios:
    print(f"changed picks: {len(ratios)}, new/old {min(ratios):.3f}..{max(ratios):.3f}, "
          f"faster at {sum(r < 0.98 for r in ratios)}, slower at {sum(r > 1.02 for r in ratios)}")
if every:
    print(f"every shape: {len(every)}, new/old {min(every):.3f}..{max(every):.3f}, "
          f"faster at {sum(r < 0.98 for r in every)}, slower at {sum(r > 1.02 for r in every)}")
