"""The table of bench/everyday.sh: per case, the bytes it must move, Kiln's heuristic default
and best variant (time, % of the peak copy bandwidth Kiln measured in the same run), torch
eager and torch.compile (time, % of the copy torch measured), and Kiln's default over
torch.compile's time. The bytes are the same count for both sides (bench/torch_everyday.py).

    python3 bench/summarize_everyday.py OUT_DIR"""
import glob
import json
import os
import sys

# kiln kernel and shape -> (torch case, bytes)
CASES = {
    ("cross_entropy", "M=32768,V=32768"): ("cross_entropy bf16 32768x32768",
                                          32768 * 32768 * 2 + 32768 * 12),
    ("embedding", "D=4096,T=131072,V=32000"): ("embedding bf16 131072x4096",
                                               2 * 131072 * 4096 * 2 + 131072 * 8),
    ("cumsum_rows", "M=4096,N=32768"): ("cumsum f32 4096x32768", 2 * 4 * 4096 * 32768),
    ("cumsum_row", "N=67108864"): ("cumsum f32 1x67108864", 2 * 4 * (1 << 26)),
    ("dropout_bf16", "M=16384,N=8192"): ("dropout bf16 16384x8192", 2 * 2 * 16384 * 8192),
    ("rotary", "H=32,P=16384,R=64,T=16384"): ("rotary bf16 16384x32x128",
                                              2 * 2 * 16384 * 32 * 128 + 8 * 16384),
    ("spatial_mean_bf16", "B=64,C=256,H=56,W=56"): ("spatial mean bf16 64x256x56x56",
                                                    2 * 64 * 256 * 56 * 56 + 2 * 64 * 256),
    ("channel_sums", "C=256,H=56,N=64,W=56"): ("channel sums f32 64x256x56x56",
                                               4 * 64 * 256 * 56 * 56 + 8 * 256),
    ("layernorm_strided", "M=16384,N=4096"): ("layernorm bf16 transposed view 16384x4096",
                                              2 * 2 * 16384 * 4096 + 4 * 4096),
    ("layernorm_strided_f32", "M=16384,N=4096"): ("layernorm f32 transposed view 16384x4096",
                                                  2 * 4 * 16384 * 4096 + 8 * 4096),
    ("layernorm_strided", "M=32768,N=1000"): ("layernorm bf16 transposed view 32768x1000",
                                              2 * 2 * 32768 * 1000 + 4 * 1000),
    ("layernorm_strided", "M=8192,N=8192"): ("layernorm bf16 transposed view 8192x8192",
                                             2 * 2 * 8192 * 8192 + 4 * 8192),
    ("layernorm_strided", "M=16384,N=4096", "x=4099,1"): ("layernorm bf16 padded rows 16384x4096",
                                                          2 * 2 * 16384 * 4096 + 4 * 4096),
    ("layernorm_strided", "M=16384,N=4096", "x=1,16384"): ("layernorm bf16 x.t() 16384x4096",
                                                           2 * 2 * 16384 * 4096 + 4 * 4096),
}


def main():
    out = sys.argv[1]
    torch, tcopy = {}, None
    path = os.path.join(out, "torch.json")
    if os.path.exists(path):
        t = json.load(open(path))
        torch = {c["case"]: c for c in t["cases"]}
        tcopy = t["copy_gbps"]
        print(f"torch: {t['device']}, torch {t['torch']}, copy {tcopy:.0f} GB/s")
    print("\n| case | bytes | Kiln default | % copy | Kiln best (variant: config) | % copy "
          "| torch eager | torch.compile | % copy | default / compile |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for f in sorted(glob.glob(os.path.join(out, "kiln_*.json")), key=os.path.getmtime):
        k = json.load(open(f))
        shape = ",".join(f"{s}={v}" for s, v in sorted(k["shape"].items()))
        # A strided input's layout when kiln run was given one (--strides), else its default.
        strides = ";".join(f"{n}={','.join(map(str, v))}"
                           for n, v in sorted(k.get("strides", {}).items()))
        key = (k["kernel"], shape, strides) if strides else (k["kernel"], shape)
        tname, nbytes = CASES.get(key, (None, k["bytes_moved"]))
        copy = k["copy_gbps"]
        pct = lambda us, c: f"{100 * nbytes / (us * 1e-6) / 1e9 / c:.1f}%" if c else "-"
        ok = [v for v in k["variants"] if v["ok"] or not v["checked"]]
        default = next((v for v in k["variants"]
                        if all(p.endswith("*") for p in v["label"].split("+"))), None)
        best = min(ok, key=lambda v: v["median_us"]) if ok else None
        cells = [f"{k['kernel']} {shape}{' ' + strides if strides else ''}", f"{nbytes / 1e6:.0f} MB"]
        cells += [f"{default['median_us']:.1f} us", pct(default["median_us"], copy)] if default \
            else ["-", "-"]
        cells += [f"{best['median_us']:.1f} us ({best['label']}: {best['config']})",
                  pct(best["median_us"], copy)] if best else ["-", "-"]
        tc = torch.get(tname)
        if tc:
            cells += [f"{tc['eager_s'] * 1e6:.1f} us", f"{tc['compile_s'] * 1e6:.1f} us",
                      pct(tc["compile_s"] * 1e6, tcopy)]
            cells.append(f"{default['median_us'] / (tc['compile_s'] * 1e6):.2f}" if default
                         else "-")
        else:
            cells += ["", "", "", ""]
        print("| " + " | ".join(cells) + " |")
    print(f"\nKiln's copy (same run): {copy:.0f} GB/s" if glob.glob(os.path.join(out, "kiln_*"))
          else "")


if __name__ == "__main__":
    main()
