// See gpu_check.h. The kernel is hand-written PTX: it is a fixed piece of the tuner, not a
// kernel of a spec, and PTX lets its arithmetic be spelled to match the host's: every f64
// operation rounds to nearest on its own (mul.rn and add.rn are never fused into an fma).
//
// Per element i of the output (a grid-stride loop), with o the second run's value, s the
// interpreter's stored value and w its value before the output's rounding, all widened to f64:
//   differ += the two runs' bytes differ
//   integers: bad += o's bytes differ from s's
//   floats:   if o or s is not finite:  bad += !(s is NaN ? o is NaN : o == s)
//             else if o != s:           allowed = rel * |w| + gamma_scale  (rel_same if w == s)
//                                       bad += allowed > 0 ? |o - w| > allowed : |o - w| > 0
// The host rejects an element when |o - w| / allowed > 1, which implies |o - w| > allowed:
// an element the host would reject is always counted here (the kernel may count one more at
// the boundary, and then the host decides).
#include "autotune/gpu_check.h"

#include <algorithm>
#include <array>

#include "runtime/driver.h"

namespace kiln {
namespace {

constexpr const char* kPtx = R"(
.version 7.0
.target sm_80
.address_size 64

.visible .entry kiln_tune_check(
    .param .u64 p_run1, .param .u64 p_run2, .param .u64 p_stored, .param .u64 p_wide,
    .param .u64 p_n, .param .u32 p_kind, .param .f64 p_rel_same, .param .f64 p_rel_other,
    .param .f64 p_gamma_scale, .param .u64 p_counters)
{
  .reg .pred %p<24>;
  .reg .b16 %h<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<32>;
  .reg .f32 %f<4>;
  .reg .f64 %d<16>;

  ld.param.u64 %rd1, [p_run1];
  ld.param.u64 %rd2, [p_run2];
  ld.param.u64 %rd3, [p_stored];
  ld.param.u64 %rd4, [p_wide];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  cvta.to.global.u64 %rd4, %rd4;
  ld.param.u64 %rd5, [p_n];
  ld.param.u32 %r1, [p_kind];
  ld.param.f64 %d1, [p_rel_same];
  ld.param.f64 %d2, [p_rel_other];
  ld.param.f64 %d3, [p_gamma_scale];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mov.u32 %r5, %nctaid.x;
  mul.wide.u32 %rd6, %r2, %r3;
  cvt.u64.u32 %rd7, %r4;
  add.u64 %rd6, %rd6, %rd7;
  mul.wide.u32 %rd8, %r5, %r3;
  mov.u64 %rd9, 0;
  mov.u64 %rd10, 0;
  mov.u64 %rd11, 0;

LOOP:
  setp.ge.u64 %p1, %rd6, %rd5;
  @%p1 bra DONE;
  add.u64 %rd11, %rd11, 1;
  setp.eq.u32 %p2, %r1, 4;
  @%p2 bra WIDTH8;
  setp.eq.u32 %p3, %r1, 1;
  setp.eq.u32 %p4, %r1, 2;
  or.pred %p3, %p3, %p4;
  @%p3 bra WIDTH2;

  // f32 and 4-byte integers
  shl.b64 %rd12, %rd6, 2;
  add.u64 %rd13, %rd1, %rd12;
  ld.global.b32 %r6, [%rd13];
  add.u64 %rd13, %rd2, %rd12;
  ld.global.b32 %r7, [%rd13];
  add.u64 %rd13, %rd3, %rd12;
  ld.global.b32 %r8, [%rd13];
  setp.ne.b32 %p5, %r6, %r7;
  selp.u64 %rd14, 1, 0, %p5;
  add.u64 %rd10, %rd10, %rd14;
  setp.eq.u32 %p6, %r1, 3;
  @%p6 bra INT4;
  mov.b32 %f1, %r7;
  cvt.f64.f32 %d4, %f1;
  mov.b32 %f2, %r8;
  cvt.f64.f32 %d5, %f2;
  add.u64 %rd13, %rd4, %rd12;
  ld.global.f32 %f3, [%rd13];
  cvt.f64.f32 %d6, %f3;
  bra.uni FLOAT;
INT4:
  setp.ne.b32 %p7, %r7, %r8;
  selp.u64 %rd14, 1, 0, %p7;
  add.u64 %rd9, %rd9, %rd14;
  bra.uni NEXT;

WIDTH8:
  shl.b64 %rd12, %rd6, 3;
  add.u64 %rd13, %rd1, %rd12;
  ld.global.b64 %rd15, [%rd13];
  add.u64 %rd13, %rd2, %rd12;
  ld.global.b64 %rd16, [%rd13];
  add.u64 %rd13, %rd3, %rd12;
  ld.global.b64 %rd17, [%rd13];
  setp.ne.b64 %p8, %rd15, %rd16;
  selp.u64 %rd14, 1, 0, %p8;
  add.u64 %rd10, %rd10, %rd14;
  setp.ne.b64 %p9, %rd16, %rd17;
  selp.u64 %rd14, 1, 0, %p9;
  add.u64 %rd9, %rd9, %rd14;
  bra.uni NEXT;

WIDTH2:
  shl.b64 %rd12, %rd6, 1;
  add.u64 %rd13, %rd1, %rd12;
  ld.global.b16 %h1, [%rd13];
  add.u64 %rd13, %rd2, %rd12;
  ld.global.b16 %h2, [%rd13];
  add.u64 %rd13, %rd3, %rd12;
  ld.global.b16 %h3, [%rd13];
  setp.ne.b16 %p10, %h1, %h2;
  selp.u64 %rd14, 1, 0, %p10;
  add.u64 %rd10, %rd10, %rd14;
  shl.b64 %rd12, %rd6, 2;
  add.u64 %rd13, %rd4, %rd12;
  ld.global.f32 %f3, [%rd13];
  cvt.f64.f32 %d6, %f3;
  setp.eq.u32 %p11, %r1, 2;
  @%p11 bra BF16;
  cvt.f32.f16 %f1, %h2;
  cvt.f32.f16 %f2, %h3;
  bra.uni WIDEN;
BF16:
  cvt.u32.u16 %r9, %h2;
  shl.b32 %r9, %r9, 16;
  mov.b32 %f1, %r9;
  cvt.u32.u16 %r10, %h3;
  shl.b32 %r10, %r10, 16;
  mov.b32 %f2, %r10;
WIDEN:
  cvt.f64.f32 %d4, %f1;
  cvt.f64.f32 %d5, %f2;

FLOAT:
  // %d4 = o, %d5 = s, %d6 = w
  testp.finite.f64 %p12, %d5;
  testp.finite.f64 %p13, %d4;
  and.pred %p14, %p12, %p13;
  @%p14 bra FINITE;
  testp.notanumber.f64 %p15, %d5;
  testp.notanumber.f64 %p16, %d4;
  setp.eq.f64 %p17, %d4, %d5;
  selp.u32 %r11, 1, 0, %p16;
  selp.u32 %r12, 1, 0, %p17;
  selp.u32 %r13, %r11, %r12, %p15;
  setp.eq.u32 %p18, %r13, 0;
  selp.u64 %rd14, 1, 0, %p18;
  add.u64 %rd9, %rd9, %rd14;
  bra.uni NEXT;
FINITE:
  setp.eq.f64 %p19, %d4, %d5;
  @%p19 bra NEXT;
  sub.rn.f64 %d7, %d4, %d6;
  abs.f64 %d7, %d7;
  setp.eq.f64 %p20, %d6, %d5;
  selp.f64 %d8, %d1, %d2, %p20;
  abs.f64 %d9, %d6;
  mul.rn.f64 %d10, %d8, %d9;
  add.rn.f64 %d10, %d10, %d3;
  setp.gt.f64 %p21, %d10, 0d0000000000000000;
  selp.f64 %d11, %d10, 0d0000000000000000, %p21;
  setp.gt.f64 %p22, %d7, %d11;
  selp.u64 %rd14, 1, 0, %p22;
  add.u64 %rd9, %rd9, %rd14;

NEXT:
  add.u64 %rd6, %rd6, %rd8;
  bra.uni LOOP;

DONE:
  ld.param.u64 %rd20, [p_counters];
  cvta.to.global.u64 %rd20, %rd20;
  setp.eq.u64 %p23, %rd9, 0;
  @!%p23 red.global.add.u64 [%rd20], %rd9;
  setp.eq.u64 %p23, %rd10, 0;
  @!%p23 red.global.add.u64 [%rd20+8], %rd10;
  red.global.add.u64 [%rd20+16], %rd11;
  ret;
}
)";

}  // namespace

GpuComparator::GpuComparator(const Runtime& rt) : rt_(rt) {
  const DriverApi& api = rt.driver();
  if (api.cuModuleLoadDataEx(&module_, kPtx, 0, nullptr, nullptr) != CUDA_SUCCESS) {
    module_ = nullptr;
    return;
  }
  if (api.cuModuleGetFunction(&fn_, module_, "kiln_tune_check") != CUDA_SUCCESS) fn_ = nullptr;
}

GpuComparator::~GpuComparator() {
  if (module_) rt_.driver().cuModuleUnload(module_);
}

bool GpuComparator::enqueue(CUstream stream, GpuCheckKind kind, CUdeviceptr run1, CUdeviceptr run2,
                            CUdeviceptr stored, CUdeviceptr wide, uint64_t n, const GpuRule& rule,
                            CUdeviceptr counters) const {
  if (!ok()) return false;
  auto k = static_cast<uint32_t>(kind);
  double rel_same = rule.rel_same, rel_other = rule.rel_other, gamma_scale = rule.gamma_scale;
  std::array<void*, 10> args = {&run1, &run2,     &stored,    &wide,        &n,
                                &k,    &rel_same, &rel_other, &gamma_scale, &counters};
  // Enough blocks to fill any GPU a few times over; each thread then strides.
  constexpr uint64_t kBlock = 256;
  const auto grid = static_cast<unsigned>(std::clamp<uint64_t>((n + kBlock - 1) / kBlock, 1, 4096));
  return rt_.driver().cuLaunchKernel(fn_, grid, 1, 1, kBlock, 1, 1, 0, stream, args.data(),
                                     nullptr) == CUDA_SUCCESS;
}

}  // namespace kiln
