// Lowering a scheduled reduction kernel (compiler/schedule.h) to LLVM IR.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen.h"
#include "compiler/config.h"
#include "compiler/schedule.h"

namespace kiln {

/// Whether a scheduled kernel runs as a row reduction (the reduced index is the contiguous
/// one: persistent or looped, decided at launch) or an outer reduction.
enum class ReductionShape { row, outer };
ReductionShape reduction_shape(const ScheduledKernel& sk);

/// The widest useful vector (in elements): 16 bytes of the narrowest tensor the kernel reads
/// or writes along its vectorized index.
int reduction_vector_width(const ScheduledKernel& sk);

/// Adds to `m` a kernel, `entry`, that runs `sk` (a reduction kernel of a schedule of `abi`)
/// with `cfg`. The entry takes `abi`'s parameters and symbols (runtime/manifest.h): the
/// grid walks sk.space (the rows) in blocks of rows_per_block(); a split config's entry also
/// takes the workspace and the phase, and its grid is rows x blocks per row. Throws UserError for
/// bodies the code generator cannot place.
void lower_reduction(llvm::Module& m, const KernelDef& abi, const ScheduledKernel& sk,
                     const ReductionConfig& cfg, const std::string& entry, VariantLayout* layout);

/// How a split variant of row reduction `sk` runs (runtime/manifest.h): launches per kernel
/// launch, and 32-bit workspace words per (row, block).
struct SplitShape {
  int phases = 0;
  int slots = 0;
};
SplitShape split_shape(const KernelDef& abi, const ScheduledKernel& sk);

/// The passes that a row reduction kernel (reduction_shape row) makes over each row: `held`
/// when the row is persistent (and in a split variant), `looped` when it loops, fewer where a
/// reduction is computed in an earlier reduction's pass (the rules open lower_reduction.cpp).
/// Row-level stores are not passes over the row. `fused` says which and how, in statement
/// order: "s: online max+sum with mx", "_r1: welford with _r0". For tests and tools.
struct RowPasses {
  int held = 0, looped = 0;
  std::vector<std::string> fused;
};
RowPasses row_passes(const KernelDef& abi, const ScheduledKernel& sk);

/// The dynamic shared memory a staging variant of row reduction `sk` uses per element of a row
/// (the element sizes of the inputs it stages), or 0 when no input is read by two passes
/// (staging would keep nothing; the compiler then makes no staging variant).
int64_t stage_bytes_per_element(const KernelDef& abi, const ScheduledKernel& sk);

/// Rows (elements of sk.space) one block covers.
int64_t rows_per_block(ReductionShape shape, const ReductionConfig& cfg);

}  // namespace kiln
