// `kiln explain`: the story of one kernel, told from the decisions themselves. The schedule
// says which GPU kernels there are and why not fewer (compiler/schedule.h); the kernel plan
// gives each step's rule (compiler/kernel_plan.h); and for given sizes the variant that runs
// is the one the runtime's own heuristic picks (bundle/rule.h: step_rule and
// heuristic_variant) on the manifest step the compiler writes (manifest_step). Nothing here
// decides anything.
#pragma once

#include <string>
#include <vector>

#include "bundle/rule.h"
#include "compiler/kernel_plan.h"
#include "ir/interpreter.h"

namespace kiln {

/// What a launch of step `si` of `plan` with `sizes` (every symbol of the kernel) runs on a
/// device with `device`'s facts when nothing is tuned: the variant id, and in words how.
struct ExplainedStep {
  int variant = -1;
  std::string how;  // "the row on chip", "loops over the row", "split over blocks", ...
};
ExplainedStep explain_step(const KernelPlan& plan, size_t si, const SymbolValues& sizes,
                           const bundle::DeviceFacts& device);

/// The text of `kiln explain` for one kernel. With `sizes` naming every symbol, each step
/// also says what runs ("runs: variant 5 (...)"); without, only the rules.
std::string explain_kernel(const KernelDef& k, const SymbolValues& sizes,
                           const bundle::DeviceFacts& device);

}  // namespace kiln
