// The kernel plan: everything decided about how a spec kernel runs, built once from its
// fusion schedule (compiler/schedule.h) and read by everything after it.
//
// A spec kernel runs as one or more GPU launches ("steps"). For each step the plan holds its
// kind, its iteration space, the analysis of its body (the passes over a row, the fusions of
// looped rows, the split and staging layouts), its configuration space with the heuristic
// default marked, and the rule that picks a variant for a launch's sizes:
//   - tiers: a row of R elements runs the tier with the smallest limit >= R (the largest tier
//     when none); the limit is the elements a tier holds on chip, and longer rows loop;
//   - split: when the unsplit kernel would have fewer blocks ("tiles") than the GPU has SMs
//     and the split gives each tile at least 4 blocks, the split variant runs instead;
//   - contractions: the variant with the smallest tiles when the default's tiles would be
//     fewer than half the GPU's SMs;
//   - otherwise the default variant.
// Readers:
//   - lowering (compile.cpp: lower_step) compiles each planned variant as the plan says;
//   - the manifest writer (manifest_step) copies the variants and the rule into the bundle,
//     where the runtime evaluates the rule (bundle/rule.h: step_rule, heuristic_variant)
//     without re-deriving anything;
//   - `kiln explain` prints the rule and, for given sizes, the variant the runtime's own
//     heuristic_variant picks on the manifest step (tools/explain.cpp);
//   - `kiln tune` times the planned variants and searches the ranges the plan allows;
//   - `kiln compile --emit=plan` prints it (print_plan), and golden tests pin that text.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "bundle/manifest.h"
#include "compiler/config.h"
#include "compiler/lower_reduction.h"
#include "compiler/plan.h"
#include "compiler/schedule.h"

namespace kiln {

using AnyConfig = std::variant<PointwiseConfig, ReductionConfig, ContractionConfig, ScanConfig>;

/// One variant of a step: a configuration and what the manifest records about it.
struct PlannedVariant {
  AnyConfig config;
  bool is_default = false;
  int block_threads = 0;
  int64_t elements_per_block = 0;  // elements (pointwise) or rows (reductions) a block covers
  int64_t max_reduced = 0;         // a tier of the rule: rows of up to this many elements (outer
                                   // steps: short columns, bundle/rule.h); 0: not
  int64_t min_rows_per_sm = 0;     // the tier replaces the others of its limit from this many
                                   // rows per SM (bundle/rule.h); 0: an ordinary tier
  bundle::SplitInfo split;         // split variants (phases > 0)
  bundle::StageInfo stage;         // staging variants (bytes_per_element > 0)
  bundle::TileInfo tile;           // contraction variants (m > 0)
  bool strided = false;            // the step's strided variant (StepPlan::strided_variant)
  int odd_rows = -1;  // a row tier's shifting twin for rows that are not whole vectors (rule.h)
  // A flat pointwise variant's or an outer reduction variant's general entry
  // (bundle::GeneralForm; has_index32_entry) and the row multiple its own entry needs (0: any
  // rows).
  bool general = false;
  int row_multiple = 0;
};

/// A knob the tuner may move beyond the planned variants (pointwise steps only: their
/// variants can be compiled on the fly).
struct TuneRange {
  std::string name;
  int64_t min = 0, max = 0;
};

struct StepPlan {
  bundle::StepKind kind = bundle::StepKind::pointwise;
  const KernelDef* abi = nullptr;  // the parameters its entry takes (manifest.h's ABI)
  std::vector<Dim> space;          // pointwise: its elements; reductions, scans: the rows
  std::vector<Dim> reduced;        // reductions: the reduced extents (R: their product); scans: the
                                   // scanned extent; else empty
  PointwiseStep pointwise;         // pointwise: the stores, in the step's variables
  const ScheduledKernel* sk = nullptr;  // reductions, contractions, scans: the kernel it lowers
  int max_vec = 1;                      // widest useful vector, in elements (16 bytes)
  // Pointwise steps and contraction epilogues: tanh and erf run on approximations, every
  // output being f16 or bf16 (plan.h fast_functions; pointwise: PointwiseStep::fast_functions).
  bool fast_functions = false;

  // Row reductions: the passes over a row (held on chip, looped) and the fusions of looped
  // rows ("s: online max+sum with mx"); a kernel with fusions gets fused variants.
  RowPasses passes;
  // Split variants: launches per kernel launch and workspace words per (row, block).
  SplitShape split;
  // Staging variants: shared memory per element of a row (0: nothing is read twice, and
  // there are no staging variants).
  int64_t stage_bytes_per_element = 0;
  // The strided variant's tile (row reductions that read a strided input at an element of the
  // row): shared memory per element of a row and its narrowest element; 0 when it has none.
  TileShape tile;
  // Row reductions: the bytes the inputs read at an element of a row (row_bytes_per_element);
  // the split variants run for rows whose bytes times looping_passes() reach
  // bundle::kSplitMinRowBytes.
  int64_t row_bytes_per_element = 0;
  // Row reductions: whether their element stores read an input the same for every row (a
  // norm's weight: reduction::row_invariant_loads).
  bool reads_row_invariant = false;
  // For those: (a tier's limit, the variant that replaces it on rows at most the SMs: config.h
  // row_few_rows_config), ascending; empty for other steps.
  std::vector<std::pair<int64_t, int>> few_rows;

  std::vector<PlannedVariant> variants;  // the configuration space, in manifest order
  int default_variant = 0;
  // Steps that read a strided input: the variant that reads it through the strides given at
  // launch (64-bit offsets) for rows of any length, last among the variants; -1 for other
  // steps. Before it, a row reduction's strided variants for shorter rows (their max_reduced,
  // bundle/rule.h strided_variant).
  // The rule: a launch whose strides are the contiguous ones (bundle/rule.h: contiguous_strides)
  // runs the step as if nothing were strided (tuned winner, tiers, vectors); any other launch
  // runs a strided variant. Every entry of a kernel with strided inputs takes their strides.
  int strided_variant = -1;
  std::vector<TuneRange> tune_ranges;

  /// Scans: whether the scanned index is the contiguous one (a row scan, else an outer scan).
  bool row_scan() const;
  /// How the rule runs rows that loop (config.h LoopedFusion): `many` when fusing leaves them
  /// one pass, `largest` for two passes whose fusions are all online max+sum over elements of
  /// 4 bytes or more (max_vec <= 4), else `none`.
  LoopedFusion looped_fusion() const;
  /// Row reductions whose tiers of 2048 .. 8192 are spread (config.h row_heuristic_limit): one
  /// pass over the row, no element stores, 4-byte vectors of 4 (f32 and 32-bit integers).
  bool spread_tiers() const;
  /// Row reductions: the passes over a row of the tier the rule runs for rows too long to hold
  /// (the fused tier's passes.looped unless looped_fusion() is none, else passes.held).
  int looping_passes() const;
};

/// What `config` is as a variant of `step`: the fields the manifest records and the rule
/// reads (block, rows per block, tier limit, split and staging layouts).
PlannedVariant plan_variant(const StepPlan& step, const AnyConfig& config);

/// A variant's manifest entry, `id`, named `entry`, with images for `archs` not yet built.
bundle::Variant manifest_variant(const PlannedVariant& v, int id, const std::string& entry,
                                 const std::vector<std::string>& archs);

/// A configuration as people read it: "block=256 group=8 items=4 vec=4".
std::string config_text(const AnyConfig& c);

/// A spec kernel's plan. Steps point into `schedule` and `abis`: the plan is not copyable.
struct KernelPlan {
  const KernelDef* kernel = nullptr;
  Schedule schedule;
  std::deque<KernelDef> abis;  // one per scheduled kernel that needs an entry of its own
  std::vector<StepPlan> steps;

  KernelPlan() = default;
  KernelPlan(const KernelPlan&) = delete;
  KernelPlan& operator=(const KernelPlan&) = delete;
};

/// Plans a verified kernel (which must outlive the plan). Throws UserError for bodies the
/// code generator cannot place, and, at the parameter, for a strided input of a kernel with a
/// contraction or a scan reading it (not supported yet).
std::unique_ptr<KernelPlan> plan_kernel(const KernelDef& k);

/// The manifest entry of step `si`: its kind, space and every planned variant with its rule
/// fields, entries named `<kernel>_s<si>_v<id>`, images for `archs` not yet built
/// (`default_only`: the default variant, as id 0, its odd-row twin and the strided variant).
/// `planned`, when given, receives the plan index of each manifest variant.
bundle::Step manifest_step(const KernelPlan& plan, size_t si, const std::vector<std::string>& archs,
                           bool default_only = false, std::vector<int>* planned = nullptr);

/// The entry name of variant `variant` of step `step` of kernel `kernel`.
std::string entry_name(const std::string& kernel, size_t step, size_t variant);

/// The stable text of a plan (`kiln compile --emit=plan`), pinned by golden tests.
std::string print_plan(const KernelPlan& plan);

/// The rule of step `si` in words, for `kiln explain`: one line per tier, the split, the
/// fallback for misaligned pointers. Each line is indented by `indent`.
std::string explain_rule(const KernelPlan& plan, size_t si, const std::string& indent);

}  // namespace kiln
