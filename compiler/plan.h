// Planning a pointwise kernel (or a pointwise kernel of a schedule, compiler/schedule.h) into
// GPU launches ("steps") for the code generator, in two moves (the kernel plan,
// compiler/kernel_plan.h, calls this for the pointwise steps of every kernel):
//  1. Temporaries are inlined into their uses: a load `t[a, b]` becomes t's defining
//     expression with its left-hand side indices renamed to a, b. Shared subexpressions stay
//     shared (the result is a DAG), so nothing is recomputed more than the spec says.
//  2. Outputs whose iteration spaces have the same extents are stored by one step (horizontal
//     fusion: each input element they share is loaded once); each distinct space is a step.
// Each step names its space's index variables s0, s1, ... so that stores from statements
// that spelled their indices differently share them.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/program.h"

namespace kiln {

/// One output written by a step: `value`, in the step's index variables, stored into kernel
/// parameter `param` (an index into KernelDef::params()) at the point (s0, s1, ...).
struct StepStore {
  int param = 0;
  Expr value;
};

struct PointwiseStep {
  std::vector<std::string> vars;  // "s0", "s1", ...
  std::vector<Dim> space;         // extent of each var
  std::vector<StepStore> stores;
};

using Rename = std::map<std::string, std::string>;

/// Replaces loads of tensors that `k`'s statements define by their definitions.
class Inliner {
 public:
  /// Inlines the statements for which `inline_it` holds (all when it is empty).
  Inliner(const KernelDef& k, std::function<bool(const Stmt&)> inline_it = {});

  /// `e` with index variables (reduction indices included) renamed by `rename` and every load
  /// of an inlined tensor replaced by its definition, read back at its stored type when it
  /// is an output. Shared subexpressions stay shared. Throws UserError for a reduction
  /// whose index `rename` does not name.
  Expr rewrite(const Expr& e, const Rename& rename);

 private:
  Expr rewrite(const Expr& e, const Rename& rename,
               std::unordered_map<const ExprNode*, Expr>& memo);
  Expr inline_definition(const Stmt& s, const std::vector<std::string>& idx);

  const KernelDef& k_;
  std::map<std::string, const Stmt*> defs_;
  std::map<std::string, Expr> cache_;
};

/// Plans `k` (verified, and without reductions: a scheduled pointwise kernel, or a spec kernel
/// whose schedule is all pointwise) into pointwise steps. Reductions are planned by the kernel
/// plan (compiler/kernel_plan.h); one left here throws UserError at its location.
std::vector<PointwiseStep> plan_pointwise(const KernelDef& k);

}  // namespace kiln
