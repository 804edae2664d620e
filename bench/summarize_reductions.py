"""The table of bench/reductions.sh: per case, Kiln's heuristic default and best variant, each
as time, GB/s and % of the copy bandwidth Kiln measured in the same run, then torch eager and
torch.compile from the same run (torch.json), when it has the case.

    python3 bench/summarize_reductions.py OUT_DIR"""
import glob
import json
import os
import sys


def main():
    out = sys.argv[1]
    torch = {}
    path = os.path.join(out, "torch.json")
    if os.path.exists(path):
        t = json.load(open(path))
        for c in t["cases"]:
            torch[c["case"]] = c
        print(f"torch copy: {t['copy_gbps']:.0f} GB/s ({t['device']}, torch {t['torch']})\n")
    print("| case | Kiln default | GB/s | % copy | Kiln best (config) | % copy | torch eager "
          "| torch.compile | Kiln copy GB/s |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    files = sorted(glob.glob(os.path.join(out, "kiln_*.json")), key=os.path.getmtime)
    for f in files:
        k = json.load(open(f))
        shape = k["shape"]
        dims = "x".join(str(shape[s]) for s in ("M", "N") if s in shape)
        ok = [v for v in k["variants"] if v["ok"] or not v["checked"]]
        bad = len(k["variants"]) - len(ok)
        # A kernel of several steps labels a row "v6*+v3": the default has `*` on every step.
        default = next((v for v in k["variants"]
                        if all(part.endswith("*") for part in v["label"].split("+"))), None)
        best = min(ok, key=lambda v: v["median_us"]) if ok else None
        copy = k["copy_gbps"]
        pct = lambda v: f"{100 * v['gbps'] / copy:.1f}%" if copy else "-"
        name = f"{k['kernel']} {dims}"
        tc = next((c for n, c in torch.items()
                   if n.split()[0] == k["kernel"] and n.split()[-1] == dims), None)
        cells = [name + (f" ({bad} variants MISMATCH)" if bad else "")]
        if default:
            flag = "" if default["ok"] or not default["checked"] else " MISMATCH"
            cells += [f"{default['median_us']:.2f} us{flag}", f"{default['gbps']:.0f}",
                      pct(default)]
        else:
            cells += ["-", "-", "-"]
        cells += [f"{best['median_us']:.2f} us ({best['label']}: {best['config']})", pct(best)]\
            if best else ["-", "-"]
        cells += [f"{tc['eager_s'] * 1e6:.1f} us", f"{tc['compile_s'] * 1e6:.1f} us"] if tc \
            else ["", ""]
        cells.append(f"{copy:.0f}")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
