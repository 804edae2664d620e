// The tuner's comparison of a candidate's outputs on the GPU (docs/autotune.md, "Checks"):
// a PTX kernel, JIT-compiled once per process, that applies the harness's tolerance rule
// (autotune/harness.h, compare()) to every element of an output in f64, as the host does,
// and counts what the host check would look at. It only ever says "every element passed";
// whatever else it sees, or when it cannot run, the host check decides (KernelHarness::
// check_fast).
#pragma once

#include <cstdint>

#include "runtime/runtime.h"

namespace kiln {

/// What the comparison kernel counted over one output.
struct GpuCounts {
  uint64_t bad = 0;      // elements of the second run outside the tolerance (or >= it)
  uint64_t differ = 0;   // elements whose bytes differ between the two runs
  uint64_t visited = 0;  // elements compared (== the output's size when the kernel ran)
};

/// The element kinds the kernel compares: floats through the tolerance rule, integers bit
/// for bit.
enum class GpuCheckKind : uint32_t { f32 = 0, f16 = 1, bf16 = 2, int4 = 3, int8 = 4 };

/// The rule's numbers for one output, computed on the host exactly as compare() computes
/// them, so the kernel's additions and products round the same way.
struct GpuRule {
  double rel_same = 0;     // tol.rel + tol.u_out: when the exact value is representable
  double rel_other = 0;    // tol.rel
  double gamma_scale = 0;  // tol.gamma * scale
};

class GpuComparator {
 public:
  /// Loads the kernel (the driver JIT-compiles its PTX, once). ok() says whether it loaded.
  explicit GpuComparator(const Runtime& rt);
  ~GpuComparator();
  GpuComparator(const GpuComparator&) = delete;
  GpuComparator& operator=(const GpuComparator&) = delete;
  bool ok() const { return fn_ != nullptr; }

  /// Compares `n` elements of `kind`: run1 and run2 are the two runs' outputs, stored the
  /// interpreter's values in the output's type and wide its values before the output's
  /// rounding as f32 (floats only; any pointer for integers). `counters` is 3 zeroed u64 of
  /// device memory that receive GpuCounts in order. Enqueued on `stream`; false when the
  /// launch was refused.
  bool enqueue(CUstream stream, GpuCheckKind kind, CUdeviceptr run1, CUdeviceptr run2,
               CUdeviceptr stored, CUdeviceptr wide, uint64_t n, const GpuRule& rule,
               CUdeviceptr counters) const;

 private:
  const Runtime& rt_;
  CUmodule module_ = nullptr;
  CUfunction fn_ = nullptr;
};

}  // namespace kiln
