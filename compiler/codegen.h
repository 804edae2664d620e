// Lowering planned steps to LLVM IR for the NVPTX backend, and turning that IR into PTX.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/config.h"
#include "compiler/plan.h"
#include "ir/program.h"

namespace llvm {
class LLVMContext;
class Module;
class Function;
}  // namespace llvm

namespace kiln {

/// What the runtime must know about a lowered variant beyond its config.
struct VariantLayout {
  int align_bytes = 1;              // required alignment of the pointers below
  std::vector<int> aligned_params;  // params read or written with vectors
};

/// The widest vector (in elements) worth using for a step: 16 bytes of the narrowest tensor
/// it reads or writes contiguously.
int max_vector_width(const KernelDef& k, const PointwiseStep& step);

/// Adds to `m` a kernel, `entry`, that runs `step` with `cfg` (ABI in bundle/manifest.h):
/// lower_tiled for a tiled config, else the flat kernel. The module needs no target yet;
/// emit_ptx sets it.
void lower_pointwise(llvm::Module& m, const KernelDef& k, const PointwiseStep& step,
                     const PointwiseConfig& cfg, const std::string& entry, VariantLayout* layout);

/// The tiled pointwise kernel (compiler/lower_tiled.cpp) of a step with a tiling
/// (PointwiseStep::tiling) and a tiled config.
void lower_tiled(llvm::Module& m, const KernelDef& k, const PointwiseStep& step,
                 const PointwiseConfig& cfg, const std::string& entry, VariantLayout* layout);

/// Sets the NVPTX target for `arch` ("sm_90"), links the libdevice functions the module
/// calls, runs the O3 pipeline and returns the PTX. `optimized_ir`, when given, receives the
/// module's text after optimization.
std::string emit_ptx(llvm::Module& m, const std::string& arch, std::string* optimized_ir = nullptr);

/// Asks ptxas to fit `blocks` blocks of `entry` on one SM (.minnctapersm): it then keeps the
/// registers per thread within what that many blocks leave each thread, spilling if it must.
void require_blocks_per_sm(llvm::Module& m, const std::string& entry, int blocks);

/// Declares kernel `fn` to run in clusters of `blocks` blocks along x (.reqnctapercluster;
/// emit_ptx writes it, sm_90 and later).
void require_cluster(llvm::Function& fn, int blocks);
inline constexpr const char* kClusterAttribute = "kiln-cluster-blocks";

/// The module's textual LLVM IR.
std::string module_text(const llvm::Module& m);

/// The LLVM version Kiln was built with, e.g. "19.1.7".
std::string llvm_version();

}  // namespace kiln
