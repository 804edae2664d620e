// Planning a kernel into GPU launches ("steps") for the code generator.
//
// Until the fusion scheduler lands, every kernel is pointwise and planned in two moves:
//  1. Temporaries are inlined into their uses: a load `t[a, b]` becomes t's defining
//     expression with its left-hand side indices renamed to a, b. Shared subexpressions stay
//     shared (the result is a DAG), so nothing is recomputed more than the spec says.
//  2. Outputs whose iteration spaces have the same extents are stored by one step (horizontal
//     fusion: each input element they share is loaded once); each distinct space is a step.
// Each step names its space's index variables s0, s1, ... so that stores from statements
// that spelled their indices differently share them.
#pragma once

#include <string>
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

/// Plans `k` (verified) into pointwise steps. Throws UserError at a reduction's location:
/// the code generator does not handle reductions yet.
std::vector<PointwiseStep> plan_pointwise(const KernelDef& k);

}  // namespace kiln
