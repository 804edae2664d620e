// Lowering a scheduled reduction kernel (compiler/schedule.h) to LLVM IR. The analysis it
// rests on (shapes, passes, split and staging sizes) is declared in reduction_analysis.h.
#pragma once

#include <string>

#include "compiler/codegen.h"
#include "compiler/config.h"
#include "compiler/reduction_analysis.h"
#include "compiler/schedule.h"

namespace kiln {

/// Adds to `m` a kernel, `entry`, that runs `sk` (a reduction kernel of a schedule of `abi`)
/// with `cfg`. The entry takes `abi`'s parameters and symbols (bundle/manifest.h): the
/// grid walks sk.space (the rows) in blocks of rows_per_block(); a split config's entry also
/// takes the workspace and the phase, and its grid is rows x blocks per row. Throws UserError for
/// bodies the code generator cannot place.
void lower_reduction(llvm::Module& m, const KernelDef& abi, const ScheduledKernel& sk,
                     const ReductionConfig& cfg, const std::string& entry, VariantLayout* layout);

}  // namespace kiln
