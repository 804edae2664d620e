// See l2_flush.h. The kernel is hand-written PTX, as the tuner's comparator is
// (autotune/gpu_check.cpp): a grid-stride loop of 16-byte loads over the buffer, each thread
// folding what it read into one word with xor, which it stores only when nonzero. The buffer is
// zeroed once, on the stream the reads run on, so nothing is ever stored and the loads stay (ptxas
// cannot know the contents). Loads are .cg: they fill the L2, not the SM's L1.
#include "autotune/l2_flush.h"

#include <algorithm>
#include <array>

#include "autotune/harness.h"
#include "runtime/driver.h"

namespace kiln {
namespace {

constexpr const char* kPtx = R"(
.version 7.0
.target sm_80
.address_size 64

.visible .entry kiln_l2_flush(.param .u64 p_buf, .param .u64 p_vectors)
{
  .reg .pred %p<2>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<8>;

  ld.param.u64 %rd0, [p_buf];
  ld.param.u64 %rd1, [p_vectors];
  cvta.to.global.u64 %rd0, %rd0;
  mov.u32 %r0, %ctaid.x;
  mov.u32 %r1, %ntid.x;
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %nctaid.x;
  mul.wide.u32 %rd2, %r0, %r1;
  cvt.u64.u32 %rd3, %r2;
  add.u64 %rd2, %rd2, %rd3;
  mul.wide.u32 %rd3, %r3, %r1;
  mov.u32 %r4, 0;
LOOP:
  setp.ge.u64 %p0, %rd2, %rd1;
  @%p0 bra DONE;
  shl.b64 %rd4, %rd2, 4;
  add.u64 %rd4, %rd0, %rd4;
  ld.global.cg.v4.u32 {%r5, %r6, %r7, %r8}, [%rd4];
  xor.b32 %r4, %r4, %r5;
  xor.b32 %r4, %r4, %r6;
  xor.b32 %r4, %r4, %r7;
  xor.b32 %r4, %r4, %r8;
  add.u64 %rd2, %rd2, %rd3;
  bra LOOP;
DONE:
  setp.eq.u32 %p1, %r4, 0;
  @%p1 bra END;
  st.global.u32 [%rd0], %r4;
END:
  ret;
}
)";

size_t flush_bytes(const Runtime& rt) {
  const int l2 = rt.device().l2_bytes;
  if (l2 <= 0) return size_t{256} << 20;
  return std::max(size_t{32} << 20, 2 * static_cast<size_t>(l2));
}

}  // namespace

const char* l2_flush_ptx() {
  return kPtx;
}

L2Flush::L2Flush(const Runtime& rt, CUstream stream) : rt_(rt), bytes_(flush_bytes(rt)) {
  buf_ = std::make_unique<DeviceBuffer>(rt, bytes_);
  const DriverApi& api = rt.driver();
  if (CUresult r = api.cuMemsetD8Async(buf_->get(), 0, bytes_, stream); r != CUDA_SUCCESS) {
    throw HarnessError{"cuMemsetD8Async (the L2 flush's buffer): " + rt.describe(r)};
  }
  if (CUresult r = api.cuModuleLoadDataEx(&module_, kPtx, 0, nullptr, nullptr); r != CUDA_SUCCESS) {
    module_ = nullptr;
    throw HarnessError{"loading the L2 flush's kernel: " + rt.describe(r)};
  }
  if (CUresult r = api.cuModuleGetFunction(&fn_, module_, "kiln_l2_flush"); r != CUDA_SUCCESS) {
    api.cuModuleUnload(module_);
    throw HarnessError{"cuModuleGetFunction (the L2 flush's kernel): " + rt.describe(r)};
  }
}

L2Flush::~L2Flush() {
  if (module_) rt_.driver().cuModuleUnload(module_);
}

CUresult L2Flush::enqueue(CUstream stream) const {
  const DriverApi& api = rt_.driver();
  CUdeviceptr buf = buf_->get();
  uint64_t vectors = bytes_ / 16;
  std::array<void*, 2> args = {&buf, &vectors};
  // Every SM full (an H200 holds 270K threads), each thread then strides.
  constexpr unsigned kBlock = 256, kGrid = 2048;
  return api.cuLaunchKernel(fn_, kGrid, 1, 1, kBlock, 1, 1, 0, stream, args.data(), nullptr);
}

}  // namespace kiln
