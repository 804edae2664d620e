// The CPU reference interpreter: runs any verified kernel on host buffers.
//
// Every statement is evaluated point by point in its iteration space, in f64 (reductions
// accumulate in f64), and rounded to the target's storage type when stored; temporaries are
// materialized in host memory at their compute type, held as f64 (an f32 temporary is not
// rounded to float: the comparison tolerance absorbs the difference; an i32 one holds exact
// wrapped integers). Casts to f16/bf16 round exactly as the GPU does. It is simple on purpose:
// it is the oracle the GPU kernels are checked against. Each statement is compiled once into a
// small tree of evaluation nodes with names and strides resolved, and evaluated a block of
// points at a time, so large pointwise statements run at hundreds of M elements/s.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/program.h"

namespace kiln {

/// A dense row-major host tensor holding elements in their storage type (bf16/f16 as their
/// 16-bit patterns).
struct HostTensor {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;

  HostTensor() = default;
  HostTensor(DType t, std::vector<int64_t> shape);  // zero-filled
  int64_t numel() const;
  /// Element i (flat, row-major) widened to double.
  double get(int64_t i) const;
  /// Stores v rounded to the storage type (f32: round to float; halves: nearest even;
  /// i32: v must be integral and in range; bool: v != 0).
  void set(int64_t i, double v);
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
};

/// Runs `k` with the given symbol values. `tensors` must hold every input and output by name
/// with the resolved shape and dtype; outputs are overwritten. Throws UserError when a symbol
/// is unbound or a buffer is missing or has the wrong shape.
void interpret(const KernelDef& k, const SymbolValues& symbols,
               std::map<std::string, HostTensor*, std::less<>>& tensors);

}  // namespace kiln
