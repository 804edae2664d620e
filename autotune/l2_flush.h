// What the harness runs before each timed repetition so that the kernel starts with none of its
// data in the L2 and none of anyone else's waiting to be written back: a read of twice the L2.
// A write over a buffer (cuMemsetD8Async, what this did before, and what triton.testing.do_bench
// does) evicts the kernel's data too, but leaves the L2 full of dirty lines that the timed
// kernel then writes back to DRAM as its own data displaces them: on an H200, a mean over the
// middle axis of [64, 1024, 512] f32 (134 MB) took 44.3 us after a write, 35.2 after the read,
// and 35.1 under Nsight Compute; 39 cases of the memory-bound suite up to 9.6 us less, the
// 1 GiB copy 0.7% (bench/results/2026-12-01-h200-strides, calls 1 and 2).
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/runtime.h"

namespace kiln {

class DeviceBuffer;

/// The reading kernel's PTX (entry kiln_l2_flush: the buffer, its size in 16-byte vectors).
const char* l2_flush_ptx();

class L2Flush {
 public:
  /// Allocates twice the device's L2 (at least 32 MB; 256 MB when the driver does not say),
  /// zeroed on `stream` (before any read enqueued there), and loads the reading kernel
  /// (hand-written PTX the driver JIT-compiles, once per flush: the harness holds one).
  /// Throws HarnessError (autotune/harness.h) when the buffer cannot be had or the kernel not
  /// loaded: a timing after any other flush would not be comparable.
  L2Flush(const Runtime& rt, CUstream stream);
  ~L2Flush();
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;
  /// Enqueues the read on `stream`; the launch's result.
  CUresult enqueue(CUstream stream) const;

 private:
  const Runtime& rt_;
  size_t bytes_ = 0;
  std::unique_ptr<DeviceBuffer> buf_;
  CUmodule module_ = nullptr;
  CUfunction fn_ = nullptr;
};

}  // namespace kiln
