#!/usr/bin/env bash
# Are the winners of one tune as fast as another's? Every (kernel, shape) pair of a
# recorded-shapes file is launched with each cache's winners by `kiln run -c`, one after the
# other in the same process order, and timed the same way (kiln run's median); prints one line
# per pair with both times (each the faster of two interleaved runs) and their ratio, then the geometric mean and the pairs more than
# 5% apart. A pair whose winner (either cache's) is not in the bundles is left out and named.
#   tests/gpu/compare_caches.sh KILN_BINARY BUNDLES_DIR SHAPES_FILE CACHE_BEFORE CACHE_AFTER
# BUNDLES_DIR holds one bundle per example (tests/gpu/tune_all.sh's OUT_DIR/bundles); each
# shapes line's kernel is looked up in them by name and hash.
set -uo pipefail
kiln=$1 bundles=$2 shapes=$3 before=$4 after=$5
python3 - "$kiln" "$bundles" "$shapes" "$before" "$after" <<'PY'
import json, math, os, subprocess, sys, tempfile
kiln, bundles, shapes, before, after = sys.argv[1:]
where = {}
for ex in sorted(os.listdir(bundles)):
    for k in json.load(open(f"{bundles}/{ex}/manifest.json"))["kernels"]:
        where[(k["name"], k["hash"])] = f"{bundles}/{ex}"
def median(bundle, kernel, shape, cache):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        r = subprocess.run([kiln, "run", bundle, kernel, "--shape", shape, "-c", cache,
                            "--no-check", "--json", out.name], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"kiln run {kernel} {shape}: {r.stderr.strip()}")
        return json.load(open(out.name))["variants"][0]["median_us"]
def winners(path):  # (hash, shape) -> {step: config}, exact entries
    out = {}
    for e in json.load(open(path))["entries"]:
        k = e["key"]
        if not k.get("bucket"):
            out.setdefault((k["kernel_hash"], tuple(sorted(k["shape"].items()))), {})[k["step"]] = \
                e["winner"]["config"]
    return out
wins = [winners(before), winners(after)]
ratios, far, missing = [], [], []
for line in open(shapes):
    j = json.loads(line)
    shape = ",".join(f"{k}={v}" for k, v in j["shape"].items())
    b = where[(j["kernel"], j["hash"])]
    # A winner compiled on the fly by the other tune may be absent from these bundles: the
    # runtime would ignore it and run the heuristic, so the pair is left out and counted.
    steps = next(k for k in json.load(open(f"{b}/manifest.json"))["kernels"]
                 if k["name"] == j["kernel"])["steps"]
    key = (j["hash"], tuple(sorted(j["shape"].items())))
    if any(w.get(key) is None or any(c not in [v["config"] for v in steps[s]["variants"]]
                                     for s, c in w[key].items()) for w in wins):
        missing.append(f"{j['kernel']} {shape}")
        continue
    # Interleaved, twice each, the faster of each pair of medians: one slow process start or
    # clock dip does not decide.
    runs = [median(b, j["kernel"], shape, c) for c in (before, after, before, after)]
    t0, t1 = min(runs[0], runs[2]), min(runs[1], runs[3])
    ratios.append(t1 / t0)
    print(f"{j['kernel']:24} {shape:28} before {t0:9.2f} us  after {t1:9.2f} us  {t1 / t0:.3f}")
    if abs(t1 / t0 - 1) > 0.05:
        far.append(f"{j['kernel']} {shape} {t1 / t0:.3f}")
if missing:
    print(f"left out, a winner not in the bundles: {', '.join(missing)}")
print(f"{len(ratios)} pairs: geometric mean after/before {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}; "
      f"{len(far)} more than 5% apart: {', '.join(far) or 'none'}")
PY
