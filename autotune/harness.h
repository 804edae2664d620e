// The benchmark harness shared by `kiln run` and `kiln tune`: device buffers for one kernel at
// one shape, random inputs, poisoned outputs checked against a reference, and timing with CUDA
// events (warm-up, L2 flushed between repetitions, median and spread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "autotune/search.h"
#include "ir/interpreter.h"
#include "runtime/runtime.h"

namespace kiln {

/// Thrown by the harness when a driver call fails; the message names the call.
struct HarnessError {
  std::string message;
};

class DeviceBuffer {
 public:
  DeviceBuffer(const Runtime& rt, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr get() const { return ptr_; }

 private:
  const Runtime& rt_;
  CUdeviceptr ptr_ = 0;
};

/// The relative error allowed for an output of this type when results are compared.
double default_rtol(DType t);

/// ||out - ref|| / ||ref|| over finite elements; NaN/inf must sit where the reference has them.
struct Comparison {
  double rel_err = 0;
  int64_t mismatched_specials = 0;
  int64_t first_bad = -1;
};
Comparison compare(const HostTensor& out, const HostTensor& ref);

/// One kernel's arguments at one shape: host and device copies of every parameter, inputs
/// random (uniform in [-2, 2) for floats, [-1000, 1000] for i32; never zeros).
class KernelHarness {
 public:
  KernelHarness(const Runtime& rt, const KernelDef& def, const bundle::KernelInfo& info,
                const SymbolValues& shape, uint64_t seed);
  ~KernelHarness();

  std::span<const CUdeviceptr> ptrs() const { return ptrs_; }
  std::span<const int64_t> symbols() const { return syms_; }
  CUstream stream() const { return stream_; }
  /// Each input read once plus each output written once.
  double bytes_moved() const { return bytes_moved_; }

  /// The interpreter's outputs for these inputs, one per parameter (inputs copied).
  std::vector<HostTensor> reference() const;

  /// Poisons every output with `poison` bytes, calls `launch`, and returns the outputs (one
  /// per parameter; inputs are left empty).
  std::vector<HostTensor> run_poisoned(const std::function<void()>& launch, uint8_t poison);

  /// Compares outputs of two runs poisoned differently (0xFF then 0x7F) with `ref`: an empty
  /// list means they match (bitwise when `bitwise`, else within the dtype's tolerance or
  /// `rtol` >= 0) and every element was written. `max_err` receives the largest error.
  std::vector<std::string> check(const std::function<void()>& launch,
                                 const std::vector<HostTensor>& ref, bool bitwise, double rtol,
                                 double* max_err);

  /// Times `fn` (which enqueues work on stream()): >= 3 launches and >= 20 ms of warm-up,
  /// then `reps` timed launches (0: about `budget_ms` worth, 10..2000), each preceded by a
  /// write over a 256 MB buffer when `flush_l2`.
  Measurement time(const std::function<void()>& fn, int reps, bool flush_l2,
                   double budget_ms = 200);

 private:
  const Runtime& rt_;
  const KernelDef& def_;
  CUstream stream_ = nullptr;
  std::vector<HostTensor> host_;
  std::vector<std::unique_ptr<DeviceBuffer>> dev_;
  std::unique_ptr<DeviceBuffer> flush_;
  std::vector<CUdeviceptr> ptrs_;
  std::vector<int64_t> syms_;
  SymbolValues shape_;
  double bytes_moved_ = 0;
};

}  // namespace kiln
