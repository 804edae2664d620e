"""Rewrites a kernel's LLVM IR (tests/cpu_sim/dump.cpp) to run on the host: the
thread and block registers, the barrier and the warp shuffles become calls into the driver,
mul.hi.u32 an IR function, the bf16 pair
conversion an IR function rounding to nearest even, and the shared-memory tile an ordinary
global (blocks run one after another).
    python3 to_host.py IN.ll OUT.ll [--force64]
--force64 makes the kernel take its 64-bit index path at any size."""
import sys

src, dst = sys.argv[1], sys.argv[2]
s = "\n".join(l for l in open(src).read().splitlines()
              if not (l.startswith("declare") and "llvm.nvvm" in l))
for old, new in [("@llvm.nvvm.read.ptx.sreg.tid.x()", "@sim_tid()"),
                 ("@llvm.nvvm.read.ptx.sreg.ctaid.x()", "@sim_ctaid()"),
                 ("@llvm.nvvm.read.ptx.sreg.nctaid.x()", "@sim_nctaid()"),
                 ("@llvm.nvvm.barrier0()", "@sim_barrier()"),
                 ("@llvm.nvvm.mulhi.ui(", "@sim_mulhi_ui("),
                 ("@llvm.nvvm.ff2bf16x2.rn(", "@sim_bf16x2("),
                 ("@llvm.nvvm.shfl.sync.up.f32(", "@sim_shfl_up_f32("),
                 ("@llvm.nvvm.shfl.sync.up.i32(", "@sim_shfl_up_i32("),
                 ("@llvm.nvvm.shfl.sync.idx.f32(", "@sim_shfl_idx_f32("),
                 ("@llvm.nvvm.shfl.sync.idx.i32(", "@sim_shfl_idx_i32("),
                 ("@llvm.nvvm.shfl.sync.bfly.f32(", "@sim_shfl_bfly_f32("),
                 ("@llvm.nvvm.shfl.sync.bfly.i32(", "@sim_shfl_bfly_i32(")]:
    s = s.replace(old, new)
if "llvm.nvvm" in s:
    sys.exit("to_host.py: an NVVM intrinsic it does not know: " +
             next(l for l in s.splitlines() if "llvm.nvvm" in l))
if "--force64" in sys.argv:
    if s.count(", 2147483647") != 1:
        sys.exit("to_host.py: expected one comparison with INT32_MAX")
    s = s.replace(", 2147483647", ", 0")
s += """
declare i32 @sim_tid()
declare i32 @sim_ctaid()
declare i32 @sim_nctaid()
declare void @sim_barrier()
declare float @sim_shfl_up_f32(i32, float, i32, i32)
declare i32 @sim_shfl_up_i32(i32, i32, i32, i32)
declare float @sim_shfl_idx_f32(i32, float, i32, i32)
declare i32 @sim_shfl_idx_i32(i32, i32, i32, i32)
declare float @sim_shfl_bfly_f32(i32, float, i32, i32)
declare i32 @sim_shfl_bfly_i32(i32, i32, i32, i32)
define internal i32 @sim_mulhi_ui(i32 %a, i32 %b) {
  %a64 = zext i32 %a to i64
  %b64 = zext i32 %b to i64
  %p = mul i64 %a64, %b64
  %h = lshr i64 %p, 32
  %r = trunc i64 %h to i32
  ret i32 %r
}
define internal i16 @sim_rne(float %f) {
  %b = bitcast float %f to i32
  %h = lshr i32 %b, 16
  %odd = and i32 %h, 1
  %bias = add i32 %odd, 32767
  %r = add i32 %b, %bias
  %s = lshr i32 %r, 16
  %t = trunc i32 %s to i16
  ret i16 %t
}
define bfloat @__truncsfbf2(float %f) {
  %h = call i16 @sim_rne(float %f)
  %r = bitcast i16 %h to bfloat
  ret bfloat %r
}
define internal <2 x bfloat> @sim_bf16x2(float %a, float %b) {
  %lo = call i16 @sim_rne(float %b)
  %hi = call i16 @sim_rne(float %a)
  %v0 = insertelement <2 x i16> poison, i16 %lo, i32 0
  %v1 = insertelement <2 x i16> %v0, i16 %hi, i32 1
  %r = bitcast <2 x i16> %v1 to <2 x bfloat>
  ret <2 x bfloat> %r
}
"""
open(dst, "w").write(s)
