// Lowering a scheduled reduction kernel to LLVM IR.
//
// A reduction kernel has rows O (sk.space) and a reduced extent R. Its placed statements are
// reductions `t[o] = op(body, r)`, row-level outputs `t[o] = f(o)` and element-level outputs
// `t[o, r] = f(o, r)`; pointwise temporaries are inlined into them. The steps:
//  1. Analysis (reduction_analysis.cpp): canonical statements, their passes over the reduced
//     index, and the fusions of looped rows (online max+sum, Welford).
//  2. One emitter per kind of kernel, in compiler/lower/: row kernels, where the reduced index
//     is contiguous (persistent, looped or staged rows: reduction_rows.cpp); outer kernels,
//     where it is strided (reduction_outer.cpp); split kernels, which spread a few long rows
//     or columns over many blocks, one phase per launch (reduction_split.cpp).
//  3. Every kernel combines its threads' partials in a fixed order, so the result does not
//     depend on timing. The pieces the emitters share are in lower/reduction_common.cpp.
// run() sets up the kernel (its parameters, shared memory, the thread's coordinates) and
// branches to the emitters of the shape and the config.
#include "compiler/lower_reduction.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "compiler/lower/reduction_lowering.h"

namespace kiln {
namespace reduction {

ReductionLowering::ReductionLowering(llvm::Module& m, const KernelDef& abi,
                                     const ScheduledKernel& sk, const ReductionConfig& cfg,
                                     bool index32)
    : m_(m),
      ctx_(m.getContext()),
      b_(ctx_),
      em_(m, b_),
      math_{b_, em_},
      abi_(abi),
      sk_(sk),
      cfg_(cfg),
      shape_(sk.kind),
      ix_(index32 ? b_.getInt32Ty() : b_.getInt64Ty()),
      params_(abi.params()),
      symbols_(abi.symbols()),
      prog_(canonicalize(abi, sk, cfg.fuse)),
      divides_(divides_reduced(prog_, params_)),
      stage_plan_(plan_stage(prog_, params_)),
      tile_plan_(cfg.strided && cfg.stage ? plan_tile(prog_, params_) : StagePlan{}) {
  internal_check(!index32 || has_index32_entry(shape_, cfg),
                 "lower_reduction: 32-bit indices in a row kernel or a strided variant");
  rank_ = static_cast<int>(sk.space.size());
  vary_ = shape_ == StepKind::row_reduction ? kReduced : row_var(rank_ - 1);
}

void ReductionLowering::run(const std::string& entry, VariantLayout* layout) {
  if (shape_ == StepKind::outer_reduction && rank_ == 0) {
    throw InternalError("lower_reduction: an outer reduction without rows");
  }
  if (cfg_.split && shape_ == StepKind::row_reduction && cfg_.group != cfg_.block) {
    throw InternalError("lower_reduction: a split row config with group != block");
  }
  if (cfg_.fuse && (shape_ != StepKind::row_reduction || cfg_.split)) {
    throw InternalError("lower_reduction: a fused config of an outer or split kernel");
  }
  if (cfg_.stage && (shape_ != StepKind::row_reduction || cfg_.split)) {
    throw InternalError("lower_reduction: a staging config of an outer or split kernel");
  }
  if (cfg_.prefetch && (shape_ != StepKind::outer_reduction || cfg_.split || cfg_.vec != 1)) {
    throw InternalError("lower_reduction: a prefetching config is outer, scalar and unsplit");
  }
  // A strided config is scalar and unsplit, or tiles (vectors from the tile only).
  if (cfg_.strided && (cfg_.split || (cfg_.stage ? tile_plan_.regions.empty() : cfg_.vec != 1))) {
    throw InternalError("lower_reduction: a strided config is scalar and unsplit, or tiles");
  }
  fn_ = em_.declare_kernel(abi_, entry, cfg_.block, cfg_.split);
  em_.set_read_strides(cfg_.strided);
  if (const int blocks = tile_blocks_per_sm(cfg_); blocks > 0) {
    em_.min_blocks_per_sm(fn_, blocks);
  }
  for (size_t i = 0; i < params_.size(); ++i) ptrs_.push_back(fn_->getArg(i));
  if (cfg_.split) {
    workspace_ = fn_->getArg(params_.size() + symbols_.size());
    phase_ = fn_->getArg(params_.size() + symbols_.size() + 1);
  }
  b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn_));
  make_shared_memory();
  // The symbols' and the special registers' values in the index type: 64-bit arguments,
  // truncated where the entry computes in 32 bits (its launches' extents are below 2^31).
  for (size_t i = 0; i < symbols_.size(); ++i) {
    syms_.push_back(b_.CreateTrunc(fn_->getArg(params_.size() + i), ix_));
  }
  tid_ = b_.CreateTrunc(em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), ix_);
  bid_ = b_.CreateTrunc(em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), ix_);
  nblocks_ = b_.CreateTrunc(em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), ix_);
  rows_ = ix(1);
  for (const Dim& d : sk_.space) {
    row_extents_.push_back(dim_value(d));
    rows_ = b_.CreateMul(rows_, row_extents_.back(), "rows");
  }
  for (const Dim& d : sk_.reduced) reduced_extents_.push_back(dim_value(d));
  const size_t m = reduced_extents_.size();
  suffix_.assign(m + 1, ix(1));
  for (size_t a = m; a-- > 0;) {
    suffix_[a] =
        a + 1 == m ? reduced_extents_[a] : b_.CreateMul(reduced_extents_[a], suffix_[a + 1]);
  }
  R_ = suffix_[0];  // the whole product
  // (An empty reduction divides nothing: its divisor, read as 1, is never used.)
  for (Value* d : suffix_) suffix_div_.push_back(em_.divisor(d));
  if (cfg_.strided) {
    for (int a = 0; a < static_cast<int>(m); ++a) step_groups_.emplace_back(a, a);
  } else {
    step_groups_ = stepped_axis_groups(prog_, params_, sk_.reduced);
  }
  for (const auto& [first, last] : step_groups_) {
    Value* e = reduced_extents_[static_cast<size_t>(first)];
    for (int a = first + 1; a <= last; ++a)
      e = b_.CreateMul(e, reduced_extents_[static_cast<size_t>(a)]);
    step_extents_.push_back(e);
  }
  if (shape_ == StepKind::outer_reduction) group_steps_ = axis_steps(cfg_.group);
  exit_ = BasicBlock::Create(ctx_, "exit", fn_);

  const int V = cfg_.vec;
  Value* vec_ok = b_.getFalse();
  if (V > 1) {
    Value* along = shape_ == StepKind::row_reduction ? R_ : row_extents_.back();
    vec_ok = b_.CreateICmpEQ(b_.CreateURem(along, ix(V)), ix(0), "vec.ok");
    // Vectors along a trailing run of the reduced indices (reduction_analysis.h) stay inside
    // it when its length is a multiple of vec too.
    if (shape_ == StepKind::row_reduction) {
      for (int a : suffix_runs(prog_)) {
        vec_ok = b_.CreateAnd(
            vec_ok, b_.CreateICmpEQ(b_.CreateURem(suffix_[static_cast<size_t>(a)], ix(V)), ix(0)));
      }
    }
  }
  if (cfg_.split && shape_ == StepKind::outer_reduction) {
    emit_outer_split(vec_ok);
  } else if (cfg_.split) {
    emit_split(vec_ok);
  } else if (shape_ == StepKind::row_reduction) {
    Value* fits = b_.CreateICmpULE(R_, ix(cfg_.capacity()), "fits");
    branch_rows(fits, vec_ok);
  } else {
    branch2(vec_ok, [&](bool vector) { emit_outer(vector); });
  }
  b_.SetInsertPoint(exit_);
  b_.CreateRetVoid();
  if (layout) *layout = layout_;
}

}  // namespace reduction

void lower_reduction(llvm::Module& m, const KernelDef& abi, const ScheduledKernel& sk,
                     const ReductionConfig& cfg, const std::string& entry, VariantLayout* layout) {
  internal_check(!sk.reduced.empty(), "lower_reduction: not a reduction kernel");
  if (!has_index32_entry(sk.kind, cfg)) {
    reduction::ReductionLowering(m, abi, sk, cfg).run(entry, layout);
    return;
  }
  // Two kernels (bundle::GeneralForm): the entry in 32-bit indices, the general one in 64.
  // One kernel holding both would take the registers of the costlier (lower_pointwise.cpp).
  VariantLayout own, general;
  reduction::ReductionLowering(m, abi, sk, cfg, true).run(entry, &own);
  reduction::ReductionLowering(m, abi, sk, cfg, false).run(general_entry_name(entry), &general);
  internal_check(
      own.align_bytes == general.align_bytes && own.aligned_params == general.aligned_params,
      "lower_reduction: the entries' alignment needs differ");
  own.general_entry = general_entry_name(entry);
  if (layout) *layout = own;
}

}  // namespace kiln
