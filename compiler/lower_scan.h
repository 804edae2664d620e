// Lowering a scheduled scan kernel (kind scan, compiler/schedule.h) to LLVM IR.
#pragma once

#include <string>

#include "compiler/codegen.h"
#include "compiler/config.h"
#include "compiler/schedule.h"

namespace kiln {

/// Adds to `m` a kernel, `entry`, that runs `sk` (a scan kernel of a schedule of `abi`) with
/// `cfg`. The entry takes `abi`'s parameters and symbols (bundle/manifest.h); its grid walks
/// the rows (every extent of sk.space but the scanned one) in blocks of block / group rows (a
/// row scan) or block * vec columns (an outer scan); a split config's entry also takes the
/// workspace and the phase, and its grid is rows x blocks per row.
void lower_scan(llvm::Module& m, const KernelDef& abi, const ScheduledKernel& sk,
                const ScanConfig& cfg, const std::string& entry, VariantLayout* layout);

}  // namespace kiln
