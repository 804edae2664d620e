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
class CallInst;
class IRBuilderBase;
}  // namespace llvm

namespace kiln {

/// What the runtime must know about a lowered variant beyond its config.
struct VariantLayout {
  int align_bytes = 1;              // required alignment of the pointers below
  std::vector<int> aligned_params;  // params read or written with vectors
  // A pointwise or outer reduction variant's second entry and the row multiple its own entry
  // needs (bundle::GeneralForm); empty when the entry serves every launch.
  std::string general_entry;
  int row_multiple = 0;
};

/// The widest vector (in elements) worth using for a step: 16 bytes of the narrowest tensor
/// it reads or writes contiguously.
int max_vector_width(const KernelDef& k, const PointwiseStep& step);

/// Whether the vector variants of `step` compute coordinates, and so read in a row-aligned form
/// that needs rows a multiple of their vector (compiler/lower_pointwise.cpp, steps 4 and 6):
/// a step of two or more variables that reads a tensor at other than its own indices, gathers,
/// or uses an index variable's value.
bool has_row_aligned_form(const PointwiseStep& step);

/// The name of the general entry (bundle::GeneralForm) of the variant whose entry is
/// `entry`: one spelling for the lowering that emits it, the plan that names it in the
/// manifest, and the compiler that keeps new variants' names free.
std::string general_entry_name(const std::string& entry);

/// Whether `e` is the row-major flat index of `step`'s variables over its space, spelled as the
/// parser fills in rand(seed, offset)'s counter: i64(s0) * E1 + s1 ...
bool is_flat_index(const PointwiseStep& step, const Expr& e);

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

/// Inline PTX `text` without operands at b's insertion point: it has side effects and reads
/// and writes memory as far as LLVM knows (no access moves across it), and is convergent, so
/// LLVM never copies it into branches on the lane (the `.sync.aligned` instructions must run at
/// one place in every thread of a warp).
llvm::CallInst* emit_asm_statement(llvm::IRBuilderBase& b, const char* text);

/// Programmatic dependent launch (PTX griddepcontrol, sm_90 and later): the runtime launches a
/// step after the first before the kernel ahead of it in the stream has ended
/// (bundle::KernelInfo::dependent_launch), so the kernel must wait for that one before it
/// touches what it wrote. Kernel `fn`, lowered for `arch`, gets at its start
/// `griddepcontrol.launch_dependents` (the step after it may be launched once every block of
/// this one has started; its blocks take SMs as this one's leave them) and
/// `griddepcontrol.wait` (the kernel before it has ended and its writes are visible), or, where
/// the kernel placed its own waits (defer_dependency_wait), the wait before each return, so
/// that no block ends before the kernel before it. Nothing for architectures before sm_90.
void make_dependent(llvm::Function& fn, const std::string& arch);
/// Whether kernels for `arch` ("sm_90a") can be dependent launches.
bool dependent_launch_arch(const std::string& arch);
/// Marks kernel `fn` as waiting itself before its first access of an earlier step's data, and
/// so before every store (a contraction whose operands are the spec's inputs copies them while
/// the kernel before it ends: lower_contraction.cpp); `wait` emits the wait there.
void defer_dependency_wait(llvm::Function& fn);
llvm::CallInst* emit_dependency_wait(llvm::IRBuilderBase& b);

/// The module's textual LLVM IR.
std::string module_text(const llvm::Module& m);

/// The LLVM version Kiln was built with, e.g. "19.1.7".
std::string llvm_version();

}  // namespace kiln
