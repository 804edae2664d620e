// The analysis of a scheduled reduction kernel (compiler/schedule.h), before any code: its
// placed statements in canonical form, grouped into passes over the reduced index
// (canonicalize), the fusions of looped rows (online max+sum, Welford), the phases of split
// kernels (plan_split) and the inputs that staging keeps in shared memory (plan_stage). The
// rules are at the top of reduction_analysis.cpp. The public functions answer the compiler and
// the tools (shapes, widths, passes, sizes); the rest is for the emitters (compiler/lower/).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/config.h"
#include "compiler/schedule.h"

namespace kiln {

/// The widest useful vector (in elements): 16 bytes of the narrowest tensor the kernel reads
/// or writes along its vectorized index.
int reduction_vector_width(const ScheduledKernel& sk);

/// How a split variant of row reduction `sk` runs (bundle/manifest.h): launches per kernel
/// launch, and 32-bit workspace words per (row, block).
struct SplitShape {
  int phases = 0;
  int slots = 0;
  bool last_only_stores = false;  // SplitPlan::last_only_stores
};
SplitShape split_shape(const KernelDef& abi, const ScheduledKernel& sk);

/// The passes that a row reduction kernel (kind row_reduction) makes over each row: `held`
/// when the row is persistent (and in a split variant), `looped` when it loops, fewer where a
/// reduction is computed in an earlier reduction's pass (the rules open reduction_analysis.cpp).
/// Row-level stores are not passes over the row. `fused` says which and how, in statement
/// order: "s: online max+sum with mx", "_r1: welford with _r0". For tests and tools.
struct RowPasses {
  int held = 0, looped = 0;
  std::vector<std::string> fused;
  bool welford = false;  // some fusion is a Welford mean+variance (else all are online max+sum)
  bool stores_elements = false;  // some statement stores an output at each element of a row
};
RowPasses row_passes(const KernelDef& abi, const ScheduledKernel& sk);

/// The dynamic shared memory a staging variant of row reduction `sk` uses per element of a row
/// (the element sizes of the inputs it stages), or 0 when no input is read by two passes
/// (staging would keep nothing; the compiler then makes no staging variant).
int64_t stage_bytes_per_element(const KernelDef& abi, const ScheduledKernel& sk);

/// The shared memory per element of a row that the tile of a strided variant of row reduction
/// `sk` holds (reduction::plan_tile), and the narrowest of its elements; {0, 0} when it reads no
/// strided input at an element of the row (its strided variant then has no tile).
struct TileShape {
  int64_t bytes_per_element = 0;
  int narrowest = 0;
};
TileShape tile_shape(const KernelDef& abi, const ScheduledKernel& sk);

/// Whether reduction `sk` (over several indices) reads an input at coordinates of the reduced
/// indices other than the flat index (`_s<a>`, `_a<a>`: reduction::divides_reduced), whose
/// offsets its looped and split rows and outer kernels step rather than divide
/// (lower/reduction_rows.cpp row_groups). False for other kinds.
bool steps_reduced_axes(const KernelDef& abi, const ScheduledKernel& sk);

/// The reduced indices that start the trailing runs a row reduction's vectors stay inside
/// (reduction::suffix_runs of its program, which the lowering reads from the program it
/// already holds): its rows walk vectors only where R and the length of each such run (the
/// product of the reduced extents from it on) are multiples of the vector
/// (compiler/lower_reduction.cpp), as `kiln explain` says. Empty for other kinds.
std::vector<int> vector_runs(const KernelDef& abi, const ScheduledKernel& sk);

/// Where such a kernel steps some reduced indices as one coordinate
/// (reduction::stepped_axis_groups), what it steps, for `kiln explain` and the plan: "N, H*W
/// (H and W as one: ...)"; empty where it steps each index (or does not step).
std::string stepped_axes_text(const KernelDef& abi, const ScheduledKernel& sk);

/// The bytes row reduction `sk` reads from its inputs at an element of a row (each input read
/// as x[o.., r] counted once, whatever the passes): a row's bytes are R times this. 0 when it
/// reads no input along the row, and for other kinds.
int64_t row_bytes_per_element(const KernelDef& abi, const ScheduledKernel& sk);

/// Whether row reduction `sk`'s element stores read an input that is the same for every row
/// (reduction::row_invariant_loads: a norm's weight or bias); false for other kinds.
bool reads_row_invariant_inputs(const KernelDef& abi, const ScheduledKernel& sk);

/// Rows (elements of sk.space) one block covers.
int64_t rows_per_block(StepKind kind, const ReductionConfig& cfg);

/// Whether a variant of a reduction step of `kind` with `cfg` has two entries (lower_reduction,
/// bundle::GeneralForm): its own computing indices, extents and offsets in 32 bits, for
/// launches of at most 2^31 - 1 rows x reduced elements (and workspace words), and a general
/// one in 64 bits for every launch. Outer kernels that do not read through launch strides:
/// the index arithmetic of a chunk's steps is what bounds them over reduced indices apart
/// (bench/results/2026-12-01-h200-stepped-axes, call 4), and a 64-bit add, compare or select
/// is two instructions.
bool has_index32_entry(StepKind kind, const ReductionConfig& cfg);

namespace reduction {

// Elements per iteration of a thread's scalar accesses in a vectorized row variant (rows, or
// their trailing runs, not a multiple of vec; compiler/lower/reduction_rows.cpp emit_rows), and
// the same where a looped row over several reduced indices steps its points' offsets
// (steps_reduced_axes). `kiln explain` counts a looped row's scalar chunks with them.
inline constexpr int kUnalignedItems = 4;
inline constexpr int kSteppedItems = 8;
/// A looped (not held) row's scalar walk in a vectorized variant, by whether it steps.
inline int looped_scalar_items(bool steps) {
  return steps ? kSteppedItems : kUnalignedItems;
}

/// The canonical name of the reduced index, and of row dimension d (`_o<d>`). A reduction
/// over several indices runs as one flat index `_r` of R elements (their product, the first
/// outermost); in a tensor that holds them all as one run, in order (x[b, c, h, w] reduced
/// over h, w), the run reads as that flat index: its outer positions become kFolded (no
/// coordinate of their own; their extents still scale the strides) and its last `_r`. In a
/// tensor whose innermost indices are the last reduced indices a, .., m - 1, in order (x[n, c,
/// h, w] reduced over n, h, w: h, w), that trailing run reads as `_s<a>` (suffix_var), the flat
/// index modulo their product: consecutive in memory, so a vector of it is one access. Every
/// other use of reduced index a is `_a<a>` (reduced_axis_var). Both are recomputed from `_r`
/// by division.
inline const char* const kReduced = "_r";
inline const char* const kFolded = "_rf";
std::string row_var(int d);
std::string reduced_axis_var(int a);
std::string suffix_var(int a);
/// The first reduced index of a trailing run `_s<a>`, or -1 for another name.
int suffix_start(const std::string& v);
/// Whether canonical index `v` depends on the reduced index: `_r`, kFolded, `_s<a>` or `_a<a>`.
bool is_reduced(const std::string& v);
/// Whether canonical index `v` is a row dimension (`_o<d>`, row_var).
bool is_row_var(const std::string& v);
/// Whether canonical indices name any index that depends on the reduced one.
bool uses_reduced(const std::vector<std::string>& idx);

/// How a reduction of a looped row joins the pass of an earlier one, its lead (step 3).
enum class Fusion { none, online, welford };

/// A placed statement after canonicalization.
struct Item {
  enum Kind { reduction, row_store, element_store } kind;
  std::string target;
  Expr value;                        // reductions: the body
  ReduceOp op = ReduceOp::sum;       // reductions
  DType type = DType::f32;           // reductions: the accumulator's compute type
  int param = -1;                    // the abi parameter it stores to, or -1
  std::vector<std::string> indices;  // canonical left-hand side
  std::set<int> reads;               // reductions (item indices) whose results it reads
  Fusion fusion = Fusion::none;      // reductions: how it joins `lead`'s pass on looped rows
  int lead = -1;
};

struct Program {
  std::vector<Item> items;
  std::vector<std::vector<int>> passes;  // item indices; a row store is a pass of its own
  // Row kernels: the passes of rows that loop, each fused reduction right after its lead
  // (and the lead's earlier followers). `passes` never holds a follower with its lead.
  std::vector<std::vector<int>> looped;
};

/// Steps 1 to 3. `fuse`: whether looped rows fuse (ReductionConfig::fuse), else p.looped ==
/// p.passes.
Program canonicalize(const KernelDef& abi, const ScheduledKernel& sk, bool fuse);

/// The first reduced index of each trailing run (`_s<a>`) that the program's loads and stores
/// read or write.
std::set<int> suffix_runs(const Program& p);

/// Whether p stores an output at each element (an element store: t[o, r] = f(o, r)).
bool stores_elements(const Program& p);

/// Whether canonical indices name `v`; whether they name a row dimension (`_o<d>`).
bool uses(const std::vector<std::string>& idx, const std::string& v);
bool uses_row(const std::vector<std::string>& idx);

/// Split row kernels run once per phase: a pass's reductions complete, through the workspace,
/// at the start of the next phase, so a phase ends after each pass with reductions. Row stores
/// and passes that need no reduction of their own phase share it.
struct SplitPlan {
  std::vector<int> phase_of;   // per pass
  std::map<int, int> slot_of;  // reduction item -> its workspace word in a (row, block) record
  int phases = 0;
  int slots = 0;
  // No pass of the last phase walks the row (it folds the records and stores, as after a
  // plain sum): a split row kernel runs it in the row's first block alone.
  bool last_only_stores = false;
};
SplitPlan plan_split(const Program& p);

/// Staging (step 4b): the inputs kept in a row's dynamic shared memory area, by load key
/// (load_key). A row's area holds, for each staged input in turn (widest elements first), R
/// elements of its stored type; rows of a block follow each other.
struct StagePlan {
  struct Region {
    Load load;             // the input's load (canonical indices)
    std::set<int> passes;  // the passes that read it; the first loads it and stores it
    int64_t offset = 0;    // bytes per element of the regions before it: it starts at R * offset
  };
  std::map<std::string, Region> regions;
  int64_t bytes_per_element = 0;  // of all regions: a row's area is R * bytes_per_element
  int narrowest = 0;              // the narrowest region's element size; 0 without regions
};
StagePlan plan_stage(const Program& p, const std::vector<const TensorDecl*>& params);

/// A strided variant's tile (lower/reduction_rows.cpp, branch_tiled): the strided inputs read
/// at an element of the row, x[o.., r] (canonical indices ending in the reduced one), whose
/// rows a block copies into dynamic shared memory before its passes, whatever their strides.
/// Laid out as a StagePlan's row areas (widest elements first; `passes` unused), each row's
/// area padded to a multiple of kTileRowAlign bytes (bundle/manifest.h: StageInfo::row_align).
StagePlan plan_tile(const Program& p, const std::vector<const TensorDecl*>& params);
/// Every input read at an element of the row (strided or not), laid out as plan_tile's rows
/// (without the padding): what a block reads of a row, per element (row_bytes_per_element).
StagePlan plan_row(const Program& p, const std::vector<const TensorDecl*>& params);
inline constexpr int64_t kTileRowAlign = 128;

/// The loads of p's element stores that read an input along the row but the same for every
/// row (a norm's weight and bias, w[j]: indices that use the reduced index and no row
/// dimension), one per load_key, each with its parameter (an index into `params`), in the
/// order the stores first read them. The lowering prefetches them (lower/reduction_rows.cpp)
/// and the plan gives their steps wider blocks for few rows (config.h row_few_rows_config).
std::vector<std::pair<int, const Load*>> row_invariant_loads(
    const Program& p, const std::vector<const TensorDecl*>& params);

/// Whether an input of p is read at coordinates of the reduced indices other than the flat
/// index (`_s<a>`, `_a<a>`): each is divided out of it (or stepped). A tensor that holds every
/// reduced index as one run reads the flat index as it is.
bool divides_reduced(const Program& p, const std::vector<const TensorDecl*>& params);

/// The reduced indices of a kernel that steps them (lower/reduction_common.cpp step_axes) in
/// groups of consecutive ones, [first, last] each, in order: a group steps as one coordinate,
/// whose wrap is the only one among its indices that changes any input's offset. Indices a - 1
/// and a share a group when every input reads them as one run (the flat index or a trailing
/// run `_s<b>` holding both; `_a<a-1>` just before `_a<a>` or before a run starting at a,
/// over a dimension of a's extent; or neither), no element is stored at the reduced indices
/// and no expression reads their coordinates (those come from each index's own). So
/// batchnorm's x[n, c, h, w] steps (n, h * w): one wrap a point, not two.
std::vector<std::pair<int, int>> stepped_axis_groups(const Program& p,
                                                     const std::vector<const TensorDecl*>& params,
                                                     const std::vector<Dim>& reduced);

/// The key of a load among a group's loads: its tensor and canonical indices.
std::string load_key(const Load& ld);
std::string load_key(const std::string& tensor, const std::vector<std::string>& indices);

/// Calls f(load, its parameter's index in `params`) for each load of an input in `e` whose node
/// is not in `seen` (a node the DAG shares, once), adding the nodes it walks to `seen`.
void for_each_input_load(const Expr& e, const std::vector<const TensorDecl*>& params,
                         std::set<const ExprNode*>& seen,
                         const std::function<void(const Load&, int)>& f);

}  // namespace reduction
}  // namespace kiln
