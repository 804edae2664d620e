"""Rewrites a kernel's LLVM IR (tests/cpu_sim/dump.cpp) to run on the host: the
thread and block registers, the barrier and the warp shuffles become calls into the driver,
mul.hi.u32 and Philox's mul.wide.u32 IR functions, rcp.approx.ftz.f64 the reciprocal with all but 16 bits of its
mantissa cleared (worse than the hardware's, so that the Newton steps after it must work), the bf16 pair
conversion an IR function rounding to nearest even, ex2.approx a call of exp2f, nanosleep a call that
switches to the next thread (sim_threads.h), the reduction kernels' inline assembly plain IR (see
below), and the shared-memory tile an ordinary global (blocks run one after another).
    python3 to_host.py IN.ll OUT.ll [--force64] [--general] [--smem=BYTES]
--force64 makes the kernel take its 64-bit index path at any size (a pointwise variant's
general entry, which holds it); --general runs that entry at its usual sizes; --smem gives the launch
BYTES of dynamic shared memory (else none: staging variants run unstaged, tiles untiled)."""
import re
import sys

src, dst = sys.argv[1], sys.argv[2]
smem = next((int(a.split("=", 1)[1]) for a in sys.argv[3:] if a.startswith("--smem=")), 0)
s = "\n".join(l for l in open(src).read().splitlines()
              if not (l.startswith("declare") and "llvm.nvvm" in l))
for old, new in [("@llvm.nvvm.read.ptx.sreg.tid.x()", "@sim_tid()"),
                 ("@llvm.nvvm.read.ptx.sreg.ctaid.x()", "@sim_ctaid()"),
                 ("@llvm.nvvm.read.ptx.sreg.nctaid.x()", "@sim_nctaid()"),
                 ("@llvm.nvvm.barrier0()", "@sim_barrier()"),
                 ("@llvm.nvvm.mulhi.ui(", "@sim_mulhi_ui("),
                 ("@llvm.nvvm.rcp.approx.ftz.d(", "@sim_rcp_approx("),
                 ("@llvm.nvvm.ff2bf16x2.rn(", "@sim_bf16x2("),
                 ("@llvm.nvvm.shfl.sync.up.f32(", "@sim_shfl_up_f32("),
                 ("@llvm.nvvm.shfl.sync.up.i32(", "@sim_shfl_up_i32("),
                 ("@llvm.nvvm.shfl.sync.idx.f32(", "@sim_shfl_idx_f32("),
                 ("@llvm.nvvm.shfl.sync.idx.i32(", "@sim_shfl_idx_i32("),
                 ("@llvm.nvvm.shfl.sync.bfly.f32(", "@sim_shfl_bfly_f32("),
                 ("@llvm.nvvm.shfl.sync.bfly.i32(", "@sim_shfl_bfly_i32("),
                 ("@llvm.nvvm.ex2.approx.ftz.f(", "@sim_ex2("),
                 ("@llvm.nvvm.nanosleep(", "@sim_nanosleep("),
                 # %nsmid: an H200's 132 SMs, so that the small grids run here prefetch.
                 ("call i32 @llvm.nvvm.read.ptx.sreg.nsmid()", "add i32 132, 0")]:
    s = s.replace(old, new)
# The reduction kernels' inline assembly (compiler/emit.cpp, lower/reduction_rows.cpp): the L2
# policy is any number, the hinted vector loads plain loads, the passes' opaque copies copies,
# a prefetch nothing, and a launch gives `smem` bytes of dynamic shared memory; the tiled
# kernels' per-tile copy of the thread index (compiler/lower_tiled.cpp) a copy too, and their
# funnel shift LLVM's (shf.r.wrap takes the amount modulo 32, as llvm.fshr does).
for pattern, repl in [
        (r'call i64 asm "createpolicy[^"]*", "=l"\(\)', "add i64 0, 0"),
        (r'call \{ i32, i32, i32, i32 \} asm "ld\.global\.nc\.L1::evict_last[^"]*", "[^"]*"\(',
         "call { i32, i32, i32, i32 } @sim_ld_v4("),
        (r'call \{ i32, i32 \} asm "ld\.global\.nc\.L1::evict_last[^"]*", "[^"]*"\(',
         "call { i32, i32 } @sim_ld_v2("),
        (r'call \{ i32, i32 \} asm "\{ \.reg \.b64 t; mul\.wide\.u32 [^"]*", "=r,=r,r,n"\(',
         "call { i32, i32 } @sim_mul_wide("),
        (r'call i32 asm "mov\.b32 \$0, \$1; // pass \d+", "=r,r"\(', "call i32 @sim_mov32("),
        (r'call i16 asm "mov\.b16 \$0, \$1; // pass \d+", "=h,h"\(', "call i16 @sim_mov16("),
        (r'call i32 asm sideeffect "mov\.b32 \$0, \$1; // per tile", "=r,r"\(',
         "call i32 @sim_mov32("),
        (r'call i64 asm sideeffect "mov\.b64 \$0, \$1; // per tile", "=l,l"\(',
         "call i64 @sim_mov64("),
        (r'call i64 asm "mov\.b64 \$0, \$1; // stepped", "=l,l"\(', "call i64 @sim_mov64("),
        (r'call i32 asm "shf\.r\.wrap\.b32 \$0, \$1, \$2, \$3;", "=r,r,r,r"\(',
         "call i32 @sim_shf_r_wrap("),
        (r'call i32 asm "mov\.u32 \$0, %dynamic_smem_size;", "=r"\(\)', f"add i32 {smem}, 0"),
        (r'call void asm sideeffect "\{ \.reg \.b64 %pf; mad\.lo\.s64 %pf, \$1, \d+, \$0; '
         r'prefetch\.global\.L1 \[%pf\]; \}", "l,l"\(', "call void @sim_prefetch("),
        (r'= external addrspace\(3\) global \[0 x i8\]',
         f"= addrspace(3) global [{max(smem, 16)} x i8] zeroinitializer")]:
    s = re.sub(pattern, repl, s)
if " asm " in s:
    sys.exit("to_host.py: inline assembly it does not know: " +
             next(l for l in s.splitlines() if " asm " in l))
if "llvm.nvvm" in s:
    sys.exit("to_host.py: an NVVM intrinsic it does not know: " +
             next(l for l in s.splitlines() if "llvm.nvvm" in l))
# A pointwise variant's general entry (compiler/lower_pointwise.cpp, step 6) holds the 64-bit
# path: --force64 and --general run it as the kernel the driver calls, its own entry renamed.
if ("--force64" in sys.argv or "--general" in sys.argv) and "@kern_general(" in s:
    s = re.sub(r"@kern\b", "@kern_own", s)
    s = re.sub(r"@kern_general\b", "@kern", s)
elif "--general" in sys.argv:
    sys.exit("to_host.py: --general on a kernel without a general entry")
if "--force64" in sys.argv:
    if s.count(", 2147483647") != 1:
        sys.exit("to_host.py: expected one comparison with INT32_MAX")
    s = s.replace(", 2147483647", ", 0")
s += """
declare i32 @sim_tid()
declare i32 @sim_ctaid()
declare i32 @sim_nctaid()
declare void @sim_barrier()
declare void @sim_nanosleep(i32)
declare float @sim_shfl_up_f32(i32, float, i32, i32)
declare i32 @sim_shfl_up_i32(i32, i32, i32, i32)
declare float @sim_shfl_idx_f32(i32, float, i32, i32)
declare i32 @sim_shfl_idx_i32(i32, i32, i32, i32)
declare float @sim_shfl_bfly_f32(i32, float, i32, i32)
declare i32 @sim_shfl_bfly_i32(i32, i32, i32, i32)
declare float @sim_ex2(float)
define internal void @sim_prefetch(i64 %base, i64 %offset) {
  ret void
}
define internal { i32, i32, i32, i32 } @sim_ld_v4(ptr addrspace(1) %p, i64 %policy) {
  %v = load <4 x i32>, ptr addrspace(1) %p, align 16
  %a = extractelement <4 x i32> %v, i32 0
  %b = extractelement <4 x i32> %v, i32 1
  %c = extractelement <4 x i32> %v, i32 2
  %d = extractelement <4 x i32> %v, i32 3
  %r0 = insertvalue { i32, i32, i32, i32 } poison, i32 %a, 0
  %r1 = insertvalue { i32, i32, i32, i32 } %r0, i32 %b, 1
  %r2 = insertvalue { i32, i32, i32, i32 } %r1, i32 %c, 2
  %r3 = insertvalue { i32, i32, i32, i32 } %r2, i32 %d, 3
  ret { i32, i32, i32, i32 } %r3
}
define internal { i32, i32 } @sim_ld_v2(ptr addrspace(1) %p, i64 %policy) {
  %v = load <2 x i32>, ptr addrspace(1) %p, align 8
  %a = extractelement <2 x i32> %v, i32 0
  %b = extractelement <2 x i32> %v, i32 1
  %r0 = insertvalue { i32, i32 } poison, i32 %a, 0
  %r1 = insertvalue { i32, i32 } %r0, i32 %b, 1
  ret { i32, i32 } %r1
}
define internal i32 @sim_shf_r_wrap(i32 %lo, i32 %hi, i32 %n) {
  %r = call i32 @llvm.fshr.i32(i32 %hi, i32 %lo, i32 %n)
  ret i32 %r
}
declare i32 @llvm.fshr.i32(i32, i32, i32)
define internal i32 @sim_mov32(i32 %x) {
  ret i32 %x
}
define internal i64 @sim_mov64(i64 %x) {
  ret i64 %x
}
define internal i16 @sim_mov16(i16 %x) {
  ret i16 %x
}
define internal { i32, i32 } @sim_mul_wide(i32 %a, i64 %m) {
  %a64 = zext i32 %a to i64
  %p = mul i64 %a64, %m
  %l = trunc i64 %p to i32
  %h = lshr i64 %p, 32
  %u = trunc i64 %h to i32
  %r0 = insertvalue { i32, i32 } poison, i32 %l, 0
  %r1 = insertvalue { i32, i32 } %r0, i32 %u, 1
  ret { i32, i32 } %r1
}
define internal i32 @sim_mulhi_ui(i32 %a, i32 %b) {
  %a64 = zext i32 %a to i64
  %b64 = zext i32 %b to i64
  %p = mul i64 %a64, %b64
  %h = lshr i64 %p, 32
  %r = trunc i64 %h to i32
  ret i32 %r
}
define internal double @sim_rcp_approx(double %x) {
  %r = fdiv double 1.0, %x
  %b = bitcast double %r to i64
  %m = and i64 %b, -68719476736
  %d = bitcast i64 %m to double
  ret double %d
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
