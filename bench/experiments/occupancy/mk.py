"""Builds the cubins of the occupancy experiment (bench/results/2026-11-21-h200-reductions.md,
seventh run) from the sm_90 PTX of two bundles, through nvJitLink as `kiln compile` does, each
with one edit: a .minnctapersm directive, streaming stores (st.global.cs) or loads that skip
L1 (L1::no_allocate). The recorded numbers came from bundles of 4f79859, before kiln added
its own occupancy hint (removed below) and cache-hinted loads (which the L1::no_allocate edit
does not match). Run here (CUDA toolkit), carry the directory, time with run.py there:

    kiln compile examples/rmsnorm.kiln -o /tmp/rb && kiln compile examples/layernorm.kiln -o /tmp/lb
    python3 bench/experiments/occupancy/mk.py /tmp/rb /tmp/lb bench/experiments/occupancy/out
    python3 bench/experiments/occupancy/run.py bench/experiments/occupancy/out   # on the GPU
"""
import ctypes, os, re, sys, json
L = ctypes.CDLL('/usr/local/cuda/lib64/libnvJitLink.so')
def link(ptx):
    h = ctypes.c_void_p()
    opts = [b"-arch=sm_90", b"-O3", b"-verbose"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    assert L.__nvJitLinkCreate_13_0(ctypes.byref(h), len(opts), arr) == 0
    data = ptx.encode()
    assert L.__nvJitLinkAddData_13_0(h, 2, data, len(data), b"x") == 0
    r = L.__nvJitLinkComplete_13_0(h)
    n = ctypes.c_size_t(); L.__nvJitLinkGetInfoLogSize_13_0(h, ctypes.byref(n))
    b = ctypes.create_string_buffer(n.value + 1); L.__nvJitLinkGetInfoLog_13_0(h, b)
    log = b.value.decode()
    if r:
        L.__nvJitLinkGetErrorLogSize_13_0(h, ctypes.byref(n)); e = ctypes.create_string_buffer(n.value + 1)
        L.__nvJitLinkGetErrorLog_13_0(h, e); raise SystemExit(e.value.decode())
    L.__nvJitLinkGetLinkedCubinSize_13_0(h, ctypes.byref(n)); c = ctypes.create_string_buffer(n.value)
    L.__nvJitLinkGetLinkedCubin_13_0(h, c)
    regs = re.search(r"Used (\d+) registers", log).group(1)
    spill = re.search(r"(\d+) bytes spill stores", log).group(1)
    return c.raw, int(regs), int(spill)

def edit(ptx, minc=0, cs=False, na=False):
    # Bundles from 576024c on carry kiln's own occupancy hint on some variants: start without.
    ptx = re.sub(r"^\.minnctapersm \d+\n", "", ptx, flags=re.M)
    if minc:
        ptx = re.sub(r"^(\.maxntid .*)$", r"\1\n.minnctapersm %d" % minc, ptx, flags=re.M)
    if cs:
        ptx = ptx.replace("st.global.v4.b32", "st.global.cs.v4.b32")
    if na:
        ptx = ptx.replace("ld.global.nc.v4.u32", "ld.global.nc.L1::no_allocate.v4.u32")
    return ptx

specs = {
  # name: (bundle, entry, minc, cs, na)
  "rms_v5": ("rb", "rmsnorm_s0_v5", 0, False, False),
  "rms_v5_min10": ("rb", "rmsnorm_s0_v5", 10, False, False),
  "rms_v5_min12": ("rb", "rmsnorm_s0_v5", 12, False, False),
  "rms_v5_cs": ("rb", "rmsnorm_s0_v5", 0, True, False),
  "rms_v5_min10_cs": ("rb", "rmsnorm_s0_v5", 10, True, False),
  "rms_v5_min10_na": ("rb", "rmsnorm_s0_v5", 10, False, True),
  "rms_v10": ("rb", "rmsnorm_s0_v10", 0, False, False),
  "rms_v10_min5": ("rb", "rmsnorm_s0_v10", 5, False, False),
  "rms_v10_min6": ("rb", "rmsnorm_s0_v10", 6, False, False),
  "ln_v5": ("lb", "layernorm_s0_v5", 0, False, False),
  "ln_v5_min10": ("lb", "layernorm_s0_v5", 10, False, False),
  "ln_v5_min12": ("lb", "layernorm_s0_v5", 12, False, False),
  "ln_v5_min10_cs": ("lb", "layernorm_s0_v5", 10, True, False),
  "ln_v28": ("lb", "layernorm_s0_v28", 0, False, False),
  "ln_v28_min10": ("lb", "layernorm_s0_v28", 10, False, False),
  "ln_v10": ("lb", "layernorm_s0_v10", 0, False, False),
  "ln_v10_min5": ("lb", "layernorm_s0_v10", 5, False, False),
}
bundles = {"rb": sys.argv[1], "lb": sys.argv[2]}
out = sys.argv[3]
os.makedirs(out, exist_ok=True)
meta = {}
for name, (b, entry, minc, cs, na) in specs.items():
    ptx = open(f"{bundles[b]}/{entry}.sm_90.ptx").read()
    cub, regs, spill = link(edit(ptx, minc, cs, na))
    open(f"{out}/{name}.cubin", "wb").write(cub)
    m = json.load(open(f"{bundles[b]}/manifest.json"))
    v = [v for v in m["kernels"][0]["steps"][0]["variants"] if v["entry"] == entry][0]
    meta[name] = {"entry": entry, "block": v["block_threads"], "rows_per_block": v["elements_per_block"], "regs": regs, "spill": spill}
    print(name, regs, spill)
json.dump(meta, open(f"{out}/meta.json", "w"), indent=1)
