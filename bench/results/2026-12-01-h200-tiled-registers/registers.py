"""Registers and spill bytes of the tiled kernels' variants, from bundles' manifests (what
nvJitLink reported when `kiln compile` assembled them on the build machine, CUDA 13.0).
usage: python3 registers.py LABEL=BUNDLE_DIR ... (split at the last =)  (each a bench/memory_bound.kiln bundle)"""
import json, sys
KERNELS = ("transpose_f32", "transpose_bf16", "transpose_add", "heads_keys", "rotate3")
for arg in sys.argv[1:]:
    label, path = arg.rsplit("=", 1)
    m = json.load(open(f"{path}/manifest.json"))
    for k in m["kernels"]:
        if k["name"] not in KERNELS:
            continue
        for st in k["steps"]:
            cells = []
            for i, v in enumerate(st["variants"]):
                c = v.get("config", {})
                if "tile_in" not in c:
                    continue
                im = v["images"][0]
                cells.append(f"v{i} {c['tile_in']}x{c['tile_out']}/{c['block']}/vec{c['vec']}: "
                             f"{im.get('registers')} regs, {im.get('spill_bytes')} B spilled")
            print(f"{label} {k['name']}:\n  " + "\n  ".join(cells))
