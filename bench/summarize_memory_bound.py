"""The table of bench/memory_bound.sh, and its plot. Per case: the bytes it must move (the same
count for both sides, bench/memory_bound_cases.py), Kiln's heuristic default and its best
variant (time, % of the peak copy bandwidth Kiln measured in the same run), torch eager and
torch.compile (time, % of the copy torch measured), and Kiln's default over torch.compile's
time. The plot (memory_bound.png, when matplotlib is installed) shows % of copy per case for
Kiln's default, Kiln's best variant and torch.compile.

    python3 bench/summarize_memory_bound.py OUT_DIR"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from memory_bound_cases import CASES  # noqa: E402


def load(out):
    torch, tcopy = {}, {}
    for path in sorted(glob.glob(os.path.join(out, "torch*.json"))):
        t = json.load(open(path))
        for c in t["cases"]:
            torch[c["case"]], tcopy[c["case"]] = c, t["copy_gbps"]
        print(f"{os.path.basename(path)}: {t['device']}, torch {t['torch']}, "
              f"copy {t['copy_gbps']:.0f} GB/s")
    rows = []
    for c in CASES:
        path = os.path.join(out, f"kiln_{c.id}.json")
        k = json.load(open(path)) if os.path.exists(path) else None
        row = {"case": c, "tc": torch.get(c.id), "tcopy": tcopy.get(c.id)}
        if k:
            row["copy"] = k["copy_gbps"]
            ok = [v for v in k["variants"] if v["ok"] or not v["checked"]]
            row["default"] = next((v for v in k["variants"]
                                   if all(p.endswith("*") for p in v["label"].split("+"))), None)
            row["best"] = min(ok, key=lambda v: v["median_us"]) if ok else None
        rows.append(row)
    return rows


def pct(nbytes, us, copy):
    return 100 * nbytes / (us * 1e-6) / 1e9 / copy if us and copy else None


def table(rows):
    print("\n| case | kind | bytes | Kiln default | % copy | Kiln best (variant: config) | % copy "
          "| torch eager | torch.compile | % copy | default / compile |")
    print("| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    f = lambda p: f"{p:.1f}%" if p is not None else "-"
    for r in rows:
        c, d, b, tc = r["case"], r.get("default"), r.get("best"), r["tc"]
        n = c.bytes()
        cells = [f"{c.id} ({c.kernel} {c.shape_arg()})", c.kind + ("" if c.bound == "memory"
                                                                    else ", launch-bound"),
                 f"{n / 1e6:.1f} MB"]
        cells += [f"{d['median_us']:.1f} us", f(pct(n, d["median_us"], r["copy"]))] if d \
            else ["-", "-"]
        cells += [f"{b['median_us']:.1f} us ({b['label']}: {b['config']})",
                  f(pct(n, b["median_us"], r["copy"]))] if b else ["-", "-"]
        if tc:
            cells += [f"{tc['eager_s'] * 1e6:.1f} us", f"{tc['compile_s'] * 1e6:.1f} us",
                      f(pct(n, tc["compile_s"] * 1e6, r["tcopy"]))]
            cells.append(f"{d['median_us'] / (tc['compile_s'] * 1e6):.2f}" if d else "-")
        else:
            cells += ["-", "-", "-", "-"]
        print("| " + " | ".join(cells) + " |")
    copies = [r["copy"] for r in rows if r.get("copy")]
    if copies:
        print(f"\nKiln's copy (same run, per case): {min(copies):.0f}-{max(copies):.0f} GB/s")


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no plot)")
        return
    rows = [r for r in rows if r["case"].bound == "memory"]
    names = [r["case"].id for r in rows]
    n = lambda r: r["case"].bytes()
    series = [
        ("Kiln default", [pct(n(r), r["default"]["median_us"], r["copy"]) if r.get("default")
                          else 0 for r in rows]),
        ("Kiln best variant", [pct(n(r), r["best"]["median_us"], r["copy"]) if r.get("best")
                               else 0 for r in rows]),
        ("torch.compile", [pct(n(r), r["tc"]["compile_s"] * 1e6, r["tcopy"]) if r["tc"] else 0
                           for r in rows]),
    ]
    fig, ax = plt.subplots(figsize=(16, 6))
    w = 0.27
    for i, (label, ys) in enumerate(series):
        ax.bar([x + (i - 1) * w for x in range(len(names))], [y or 0 for y in ys], w, label=label)
    ax.axhline(90, color="k", lw=0.8, ls="--")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("% of peak copy bandwidth (same run)")
    ax.set_title("Memory-bound cases (bench/memory_bound.sh): % of copy bandwidth")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main():
    out = sys.argv[1]
    rows = load(out)
    table(rows)
    plot(rows, os.path.join(out, "memory_bound.png"))


if __name__ == "__main__":
    main()
