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
//  3. A step whose loads disagree with its output on the contiguous index is tiled
//     (plan_tiling): a load is transposed when it uses the step's innermost variable but its
//     own last index is another variable. The transposed loads whose last index is the one
//     variable that carries the most bytes of them ("across") are read through shared-memory
//     tiles of the (across, innermost) plane; every other load is read as the flat kernel
//     reads it. A load that repeats a variable (`x[i, i]`) is never tiled, and neither is a
//     step whose tiled loads would need more than 12 bytes of shared memory per tile
//     element (a 64 x 64 tile of each must fit 48 KiB). Consecutive variables that every
//     load reads as consecutive dimensions are one dimension of the tile loop
//     (Tiling::joined): [B, S, H, D] -> [B, H, D, S] is tiled as [B, S, H*D] -> [B, H*D, S].
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

/// A transposed load read through shared memory: tensor `tensor` indexed by the step
/// variables at positions `vars` (distinct; the last is Tiling::across).
struct TiledLoad {
  std::string tensor;
  std::vector<int> vars;
  DType stored = DType::f32;
  friend bool operator==(const TiledLoad&, const TiledLoad&) = default;
};

/// How a step's transposed loads are read: through tiles of the plane of step variables
/// `across` and the innermost one (compiler/config.h: PointwiseConfig::tile_in, tile_out).
struct Tiling {
  int across = -1;               // a step variable's position; -1: not tiled (flat)
  std::vector<TiledLoad> loads;  // the loads read through tiles, in order of first use
  /// Extents that are not multiples of the vector run the aligned-rows path where the across
  /// extent is a multiple of it (aligned_rows), else shifted vectors (compiler/lower_tiled.cpp)
  /// unless every load of the step is a tiled load of 32-bit elements, where element by element
  /// measured faster (bench/results/2026-11-30-h200-shifted-transpose).
  bool odd_shifted = false;
  int other_bytes = 0;  // the element bytes of the step's loads that are not tiled, summed
  /// Per step variable (empty: none): whether the tile loop runs it as one dimension with the
  /// variable before it. Where every load indexes v right after v - 1 and neither elsewhere, and
  /// no value reads either's index, the two are one dimension of extent their product, as
  /// x[b, s, h, d] -> y[b, h, d, s] reads h and d: an odd d (127) of an h x d that is a multiple
  /// of the vector (4064) then runs the aligned vector path (plan_tiling).
  std::vector<bool> joined;
  bool tiled() const { return across >= 0; }
  /// The tile loop's dimensions: runs of the `rank` step variables, each joined one in its
  /// predecessor's run. `across` and the innermost variable are each the last of theirs.
  std::vector<std::vector<int>> dims(int rank) const;
  int smem_bytes_per_element() const;  // the loads' element sizes, summed
  /// Shared memory of the shifted path's tiles, (tile_out + vec) x (tile_in + vec) elements a
  /// load; and whether a config's odd extents run it where the aligned-rows path does not:
  /// odd_shifted, vectors, and its tiles fit the 48 KiB of static shared memory (the config
  /// space keeps tile_in x tile_out within it).
  int64_t shifted_smem_bytes(int vec, int tile_in, int tile_out) const;
  bool shifts(int vec, int tile_in, int tile_out) const;
  /// Shared memory of the aligned-rows path's tiles, tile_in x (tile_out + vec) elements a load;
  /// and whether a config runs it where the extent along `across` is a multiple of the vector
  /// and the innermost one is not (every input row starts aligned, the output rows do not:
  /// compiler/lower_tiled.cpp): vectors of whole 32-bit words, and its tiles fit the 48 KiB of
  /// static shared memory.
  int64_t rows_smem_bytes(int vec, int tile_in, int tile_out) const;
  bool aligned_rows(int vec, int tile_in, int tile_out) const;
  /// The registers a thread of a config's kernel is held to (0: ptxas's choice), where its
  /// vectors are wider than an element: the 32-bit words that the hungriest of its paths keeps
  /// in flight a thread, plus 32 for addresses and indices, a multiple of 8. Step 2: the vector
  /// path's tile_in x tile_out elements of every tiled load, the aligned-rows path's
  /// tile_in / vec x (tile_out / vec + 1) blocks, the shifted path's (tile_out + vec) x
  /// (tile_in / vec + 1) vectors of one load, or, where odd extents run element by element, the
  /// vector path's elements each with its 8-byte address (an upper bound, not what that path
  /// holds: it writes each element as it is loaded; the term keeps those kernels unheld, as
  /// measured best); step 4: its chunks' elements of every load, tiled or not (uniform and
  /// repeated loads counted as others: the estimate errs high). One kernel holds every path, and
  /// nvJitLink gave it the registers of the hungriest and more (bf16 tiles of 64 x 128, 128
  /// threads: 152, 3 blocks an SM). Held to these, tiles with odd extents ran faster and aligned
  /// ones level (but one: an f32 permute with a bias, 38.5 -> 40.3 us, call 4) on an H200
  /// (bench/results/2026-12-01-h200-tiled-registers, call 1: bf16 8191 x 8192 87.7 -> 75.3 us
  /// at 96 registers, 82.1 at 128; [8, 2047, 32, 127] -> [8, 32, 127, 2047] 95.9 -> 77.8), where
  /// tighter holds spilled or lost (f32 64 x 64 tiles with an add at 128 registers: 191.7 ->
  /// 298.9 us; f32 8193 x 8191, element by element, at 128: 157.2 -> 179.0).
  int registers(int vec, int tile_in, int tile_out, int block) const;
  /// The blocks of `block` threads an SM that registers() allow (each quarter of the SM's 64K
  /// registers holds whole warps), asked of ptxas (PTX .minnctapersm); 0 where registers() is
  /// 0 or where the blocks would allow a thread all of its 255.
  int blocks_per_sm(int vec, int tile_in, int tile_out, int block) const;
};

/// The registers a thread may take where `blocks` blocks of `block` threads share an SM: each
/// quarter of its 64K registers holds whole warps of 32 threads, given in multiples of 8.
int registers_allowed(int blocks, int block);

/// The absolute error the approximate functions of 16-bit steps may have (fast_functions): for
/// tanh.approx.f32, the PTX ISA's 2^-10.987, rounded up to a power of two (measured on an H200
/// over every f32 input: 2^-16.93 at most, bench/experiments/tanh_approx); erf, as tanh.approx.f32
/// of an odd polynomial (Emitter::approx_erf), adds the polynomial's 2^-18.4 and stays under it
/// (docs/language.md). The manifest carries it (bundle::Step::approx_error) for the harness's
/// tolerance.
inline constexpr double kApproxError = 0x1p-10;

struct PointwiseStep {
  std::vector<std::string> vars;  // "s0", "s1", ...
  std::vector<Dim> space;         // extent of each var
  std::vector<StepStore> stores;
  Tiling tiling;  // plan_tiling
  /// tanh and erf run on approximations (Emitter::approx_tanh, approx_erf): the step evaluates
  /// one of them and every store is f16 or bf16, whose rounding (2^-8, 2^-11 relative) is of
  /// the order of their error (kApproxError). plan_pointwise sets it (fast_functions).
  bool fast_functions = false;
  /// The step's estimated instructions per byte it moves (pointwise_work_per_byte); plan_pointwise
  /// sets it. Steps of kHeavyWorkPerByte or more keep more vectors in flight on large launches
  /// (compiler/config.h: heavy_pointwise_config).
  double work_per_byte = 0;
};

using Rename = std::map<std::string, std::string>;

/// Whether statement `st` of `k` defines a pointwise temporary, which its readers recompute
/// (the scheduler inlines it; Inliner's usual predicate): a temporary whose value is no
/// reduction or scan, stored at the type it computes. One stored narrower (a lifted contraction
/// operand: compiler/contraction.h) or a lifted operand cut to tf32 (TensorDecl::tf32) is read
/// from memory instead.
bool recomputed_temp(const KernelDef& k, const Stmt& st);

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

/// The values of `k`'s statements, in order.
std::vector<Expr> statement_values(const KernelDef& k);

/// Whether one of `values` holds a node for which `pred` holds.
bool any_node(const std::vector<Expr>& values, const std::function<bool(const Expr&)>& pred);

/// Whether values that only `stored` types keep may evaluate tanh and erf approximately
/// (kApproxError): every stored type is f16 or bf16 and one of `values` evaluates tanh or
/// erf. Pointwise steps (PointwiseStep::fast_functions) and contraction epilogues
/// (StepPlan::fast_functions) decide by it.
bool fast_functions(const std::vector<DType>& stored, const std::vector<Expr>& values);

/// The functions fast_functions approximates that `values` evaluate: "tanh", "erf", "tanh and
/// erf" (for `kiln explain`); empty when none.
std::string approximated_functions(const std::vector<Expr>& values);

/// An estimate of the instructions `step` issues per byte of DRAM traffic: per element, the
/// instructions of each distinct node its stores evaluate (a table of costs, plan.cpp: an add
/// 1, exp 2, a division 10, erf 20, a random number 16, a 16-bit load or store 2 with its
/// conversion, ...) over the bytes of its stores and of its loads that vary with every step
/// variable (a broadcast such as a bias is read from cache). Gathers count their element's
/// bytes; structurally equal nodes count once and launch-invariant ones (ir/expr.h) not at all.
/// Against Nsight Compute's executed instructions on an H200 (bench/results/2026-11-27-h200-
/// ahead, call 2; estimated / executed per byte): bias + erf-GELU bf16 7.8 / 9.2, dropout bf16
/// 7.2 / 5.9, bias + tanh-GELU bf16 4.0 / 4.2, dropout's mask 3.4 / 4.2, silu * b 3.5 / 3.5,
/// dropout f32 3.4 / 3.6, tanh f32 2.6 / 3.0, a cast 0.8 / 1.1, add f32 0.3 / 0.8.
double pointwise_work_per_byte(const KernelDef& k, const PointwiseStep& step);

/// The tiling of `step`'s transposed loads (step 3 above); plan_pointwise sets it.
Tiling plan_tiling(const PointwiseStep& step);

}  // namespace kiln
