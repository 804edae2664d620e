// The fusion scheduler: from a kernel's statements to the fewest GPU kernels.
//
// Algorithm:
//  1. Normalize: every reduction becomes a statement of its own, `_rN[free] = op(body, r)`,
//     where `free` are the index variables the reduction depends on (innermost reductions
//     first). Afterwards each statement ("node") is either pointwise or one top-level
//     reduction, like Inductor's nodes with (numel, rnumel).
//  2. Each node has a group: a pointwise node its space S; a reduction node its rows O (its
//     left-hand side extents) and reduced extent R. Nodes are visited in statement order; a
//     node joins the earlier kernel with which it shares the most bytes (a tensor one writes
//     and the other reads, or an input both read) when
//       - the groups fit: pointwise S into a pointwise kernel S; a reduction (O, R) into a
//         reduction kernel (O, R); a pointwise node with S = O (row-level: epilogue, e.g.
//         `mean[i] = s[i] / N`) or S = O + [R] in any order (element-level, e.g. `e[i, j]`)
//         into a reduction kernel (O, R); a reduction (O, R) into a pointwise kernel whose
//         space is O + [R] (which becomes a reduction kernel);
//       - no cycle: every kernel it depends on comes no later than the one it joins.
//     Otherwise it starts a new kernel, and the reason it could not join each related kernel
//     is recorded (like Inductor's WhyNoFuse).
//     Pointwise temporaries are not nodes of their own: like Inductor's pointwise nodes they
//     are inlined into every reader, and the fusion checks look through them (a reader of
//     `e[i, j] = exp(x[i, j] - mx[i])` reads x and mx at those indices).
//  3. Tensors: a pointwise temporary is recomputed in each kernel that reads it (its sources are
//     read there instead, which never moves more bytes than writing and re-reading it when it
//     has one source of its size); a reduction's result used by a later kernel is
//     materialized as a buffer with a known shape. Temporaries used inside one kernel never
//     touch memory.
//     A scan (`t[i, j] = cumsum(body, j)`) starts a kernel of its own (kind scan); its body
//     is its prologue, and pointwise nodes over its space that read what it computes only at
//     their own point join it as its epilogue.
//  4. Each kernel becomes a verified KernelDef of its own (inputs: the parameters and buffers
//     it reads; outputs: what it writes), a kind (pointwise, row or outer reduction: which
//     index the threads run along) and a byte count.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bundle/manifest.h"
#include "compiler/contraction.h"
#include "ir/interpreter.h"
#include "ir/program.h"

namespace kiln {

// A scheduled kernel's kind is its step kind (bundle/manifest.h): pointwise, a row
// reduction (the reduced index is the contiguous one), an outer reduction (it is not: e.g.
// column sums) or a contraction (a sum of products of two f16/bf16 reads, compiler/
// contraction.h: it starts a kernel of its own, and only statements over its output space,
// its epilogue, join it). How a row reduction runs at a given size (held on chip, looped, split) is
// the kernel plan's rule (compiler/kernel_plan.h), not the schedule's.
using bundle::StepKind;

/// A statement of the normalized kernel.
struct ScheduleNode {
  int id = 0;                // index in Schedule::normalized.body
  std::string target;        // the tensor it defines
  std::vector<Dim> space;    // extents of its left-hand side
  std::vector<Dim> reduced;  // a reduction node: the extents of its reduced indices (one
                             // or more: one reduction over their product); else empty
  std::optional<int> scan;   // a scan node: the position of its index on the left-hand side
  std::vector<int> deps;     // nodes whose results it reads
};

struct ScheduledKernel {
  std::string name;  // "<kernel>_k<i>"
  StepKind kind = StepKind::pointwise;
  std::string kind_reason;   // why this kind
  std::vector<int> nodes;    // node ids, in statement order
  std::vector<Dim> space;    // pointwise: its space; reduction: the rows O
  std::vector<Dim> reduced;  // reduction: the reduced extents, R their product (else empty)
  int row_phases = 0;        // reduction: dependent passes over a row (softmax: 3)
  // A reduction over several indices: how they run, "h, w flattened to one axis of H*W" or
  // "n, h, w as one flat index of N*H*W (the general path: ...)"; else empty.
  std::string flattening;
  KernelDef def;  // the kernel as a program of its own (verified)
  // Reduction kernels: for each placed statement of `def` (by target; recomputed pointwise
  // temporaries have none), the part each of its index variables plays: row dimension d
  // (0 <= d < space.size()) or reduced index a (d == space.size() + a, 0 <= a <
  // reduced.size()). Several reduced indices are ordered as the widest tensor the reduction
  // reads lays them out, outermost first, and run as one flat index of R elements.
  std::map<std::string, std::map<std::string, int>> roles;
  // Contraction kernels: the contraction (its statement is the kernel's only reduction; the
  // others are its epilogue, over the same space), as analyze_contraction found it in `def`.
  std::optional<ContractionShape> contraction;
  // Scan kernels: the position in `space` (the scan statement's left-hand side extents) of the
  // index the scan runs along; the scan is the kernel's first placed statement, the others
  // are its epilogue (over the same space, reading its result at the same point).
  std::optional<int> scan_axis;
  std::string bytes;                  // bytes it must move, as a formula of the symbols
  std::optional<double> bytes_value;  // the same with the symbol values given, if all are
};

/// The scan statement of a scan kernel (kind scan) in its `def`.
const Stmt& scan_statement(const ScheduledKernel& sk);

/// Why two kernels that exchange data or read the same input were not fused.
struct FusionRefusal {
  int node = 0;    // the node that did not join
  int kernel = 0;  // the kernel it did not join
  std::string reason;
};

struct Schedule {
  KernelDef normalized;  // the kernel after step 1
  std::vector<ScheduleNode> nodes;
  std::vector<ScheduledKernel> kernels;  // in launch order
  std::vector<TensorDecl> buffers;       // materialized intermediates, role temp
  std::vector<FusionRefusal> refusals;
};

struct ScheduleOptions {
  /// Symbol values the byte counts are evaluated with (explain's --shape).
  SymbolValues sizes;
};

/// Schedules a verified kernel. Throws UserError for programs it cannot schedule.
Schedule schedule_kernel(const KernelDef& k, const ScheduleOptions& opts = {});

/// The stable text form (`kiln compile --emit=schedule`), used by golden tests.
std::string print_schedule(const Schedule& s);

/// The same with reasons, for people (`kiln explain`).
std::string explain_schedule(const Schedule& s);

/// Runs the scheduled kernels one by one with the CPU interpreter, materialized buffers in
/// between: the result must equal interpret() of the original kernel (up to the rounding of
/// buffers to their storage type).
void run_schedule(const Schedule& s, const SymbolValues& symbols,
                  std::map<std::string, HostTensor*, std::less<>>& tensors);

}  // namespace kiln
