// The code generator of reduction kernels (compiler/lower_reduction.h), internal to it: one
// class, ReductionLowering, whose methods are defined by concept across compiler/lower/:
//   reduction_common.cpp  structure (branches, the counted loop), passes and their combines,
//                         stores, expressions and loads, the GPU's pieces; shared by:
//   reduction_rows.cpp    row kernels: persistent, looped and staged rows;
//   reduction_outer.cpp   outer kernels;
//   reduction_split.cpp   split kernels (rows and outer): one phase per launch, workspace records.
// lower_reduction.cpp sets the kernel up (run) and picks the emitter.
#pragma once

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <map>
#include <span>
#include <string>
#include <vector>

#include "compiler/emit.h"
#include "compiler/lower_reduction.h"
#include "compiler/reduction_analysis.h"

namespace kiln::reduction {

using llvm::BasicBlock;
using llvm::Type;
using llvm::Value;

// kUnalignedItems and kSteppedItems: compiler/reduction_analysis.h.
// Elements per iteration of a thread's loads through the strides when a tile does not fit.
inline constexpr int kStridedItems = 8;
// 16-byte vectors in flight per thread when a tile's copy reads columns (copy_columns).
inline constexpr int kTileVectors = 4;
// Bytes of each weight-like input a row block asks L1 for before its first pass
// (prefetch_weights): two of them (a weight and a bias) stay well inside an SM's L1.
inline constexpr int64_t kPrefetchWeightBytes = 64 * 1024;
// Records a lane of a split outer kernel's last phase loads at a time (fold_columns).
inline constexpr int kFoldAhead = 4;

// One element being computed: clamped (always valid) coordinates for loads, and whether it
// is really in range.
struct Point {
  std::vector<Value*> o;  // row coordinates (ix_)
  Value* r = nullptr;     // reduced coordinate (ix_); null at row level
  Value* ok = nullptr;    // i1
  int slot = 0;           // which of the thread's rows it belongs to (outer: 0..vec-1)
  ValueMemo memo;
  // With several reduced indices, their coordinates (ix_, outermost first) where the point's
  // were stepped from another's (step_axes); empty: coordinate() divides r.
  std::vector<Value*> axes;
  // Inputs' element offsets at the point, by load_key, where they were stepped from another
  // point's (outer_groups); offset_of computes the others.
  std::map<std::string, Value*> offsets;
};

// Reduced coordinates stepped from others (step_axes), and for each index but the outermost
// whether it wrapped (i1; null for the outermost).
struct Stepped {
  std::vector<Value*> axes, wraps;
};

// How an input's element offset changes over a step of the reduced coordinates (the offset is
// linear in them: offset_of): by `step` for the step's own coordinates, and by wrap[a] more
// where index a wraps (one less of R_a, one more of index a - 1).
struct OffsetStep {
  int param;
  std::vector<std::string> indices;
  Value* step;
  std::vector<Value*> wrap;
};

// How points over several reduced indices a fixed flat distance apart step from one to the
// next: the distance's coordinates (axes_of) and each input's offset step by load_key
// (plan_offset_steps). Empty axes: no stepping (one reduced index).
struct AxisSteps {
  std::vector<Value*> axes;
  std::map<std::string, OffsetStep> offsets;
};

// `vec` points whose `vary` coordinate is consecutive; `shared` when all their other
// coordinates are equal, `vector` when the first is a multiple of vec (16-byte accesses).
// `shifted` (row kernels, rows whose length is not a multiple of vec): the vector starts at a
// multiple of vec of the row's flat index (row x R + r), not of r, so only the tensors laid
// out like the row (aligned_with_row) are read and written as vectors.
struct Group {
  std::vector<Point> pts;
  bool shared = false;
  bool vector = false;
  bool shifted = false;
  std::map<std::string, std::vector<Value*>> loads;  // by access key: a vector or a scalar
  // Scalar loads of single points, by access key and point (prefetched_loads): while
  // `record`, load() notes the loads it emits; else it answers from here.
  std::map<std::pair<std::string, int>, Value*> ready;
  bool record = false;
};

// The loads of a chunk's groups, as prefetched_loads found them: where each came from (group,
// access key, and the point of a scalar load or the element of a cached one), and the values.
struct Prefetched {
  struct Slot {
    size_t group;
    std::string key;
    int at;
    bool cached;  // Group::loads (vectors, shared scalars); else Group::ready
    friend bool operator==(const Slot&, const Slot&) = default;
  };
  std::vector<Slot> slots;
  std::vector<Value*> values;
};

// reduction_math.h's arithmetic on f32 LLVM values.
struct IrMath {
  using V = Value*;
  llvm::IRBuilder<>& b;
  Emitter& em;
  V num(double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); }
  V add(V x, V y) { return b.CreateFAdd(x, y); }
  V sub(V x, V y) { return b.CreateFSub(x, y); }
  V mul(V x, V y) { return b.CreateFMul(x, y); }
  V div(V x, V y) { return b.CreateFDiv(x, y); }
  V max(V x, V y) { return em.combine(ReduceOp::max, x, y); }
  V exp(V x) { return em.fast_exp(x); }
  V eq(V x, V y) { return b.CreateFCmpOEQ(x, y); }
  V gt(V x, V y) { return b.CreateFCmpOGT(x, y); }
  V select(V c, V x, V y) { return b.CreateSelect(c, x, y); }
};

class ReductionLowering {
 public:
  /// `index32`: the kernel's indices, extents and offsets are 32-bit (an outer kernel's own
  /// entry, for launches whose every offset is below 2^31: lower_reduction); else 64-bit.
  ReductionLowering(llvm::Module& m, const KernelDef& abi, const ScheduledKernel& sk,
                    const ReductionConfig& cfg, bool index32 = false);
  /// Emits kernel `entry` into the module; sets *layout (when given) to its parameters' needs.
  void run(const std::string& entry, VariantLayout* layout);

 private:
  // The names of a counted loop's blocks (`done` unused when the loop's exit is given) and of
  // its index.
  struct LoopNames {
    const char *header, *body, *done, *index;
  };
  // A value carried around a counted loop: its value on entry, and its phi's name.
  struct Carried {
    Value* init;
    const char* name;
  };
  // Where a counted loop tests `index < end`: before each iteration, or after it (the loop then
  // runs at least once, in one block named names.header).
  enum class Test { top, bottom };

  // ---- reduction_common.cpp ------------------------------------------------------------
  // Structure.
  void branch2(Value* cond, llvm::function_ref<void(bool)> body);
  // The end of the whole chunks of `chunk` steps in [begin, end), or begin where !`walks`.
  Value* whole_chunks_end(Value* begin, Value* end, int64_t chunk, Value* walks);
  std::vector<Value*> counted_loop(
      const LoopNames& names, Value* begin, Value* end, llvm::function_ref<Value*()> step,
      const std::vector<Carried>& carried,
      llvm::function_ref<std::vector<Value*>(Value*, const std::vector<Value*>&)> body,
      Test test = Test::top, BasicBlock* exit = nullptr);
  std::vector<Value*> coords_of(Value* row);
  // Merge states: a reduction alone, or a lead with the reductions fused into it.
  std::vector<std::vector<int>> states_of(const std::vector<int>& pass) const;
  bool welford_state(const std::vector<int>& st) const;
  int state_width(const std::vector<int>& st) const;
  std::vector<Value*> merge_state(const std::vector<int>& st, const std::vector<Value*>& x,
                                  const std::vector<Value*>& y);
  // Passes: their accumulators, and the loop over a row in chunks.
  std::vector<int> reductions_of(const std::vector<int>& pass) const;
  Fusion fusion_in(int i, const std::vector<int>& pass) const;
  bool welford_lead(int i, const std::vector<int>& pass) const;
  int accumulators_per_reduction() const {
    return shape_ == StepKind::outer_reduction ? cfg_.vec : 1;
  }
  int width(int i, const std::vector<int>& pass) const;
  int offset(int i, const std::vector<int>& pass) const;
  Value* accumulated(int i, const std::vector<int>& pass, const std::vector<Value*>& acc);
  std::vector<Value*> initial(const std::vector<int>& pass);
  void fold(ReduceOp op, DType t, std::vector<Group>& groups, Value** acc,
            llvm::function_ref<Value*(Point&, Group&)> value, Value** comp = nullptr);
  std::vector<Value*> run_pass(const std::vector<int>& pass, std::vector<Group>& groups,
                               const std::vector<std::vector<Value*>>& results,
                               std::vector<Value*> acc, std::vector<Value*>* comp = nullptr);
  std::vector<Value*> chunk_loop(const std::vector<int>& pass,
                                 const std::vector<std::vector<Value*>>& results, Value* begin,
                                 Value* step, Value* end,
                                 llvm::function_ref<std::vector<Group>(Value*)> make_groups,
                                 std::vector<Value*> start = {}, bool prefetch = false);
  Prefetched prefetched_loads(const std::vector<int>& pass, std::vector<Group>& groups,
                              const std::vector<std::vector<Value*>>& results);
  static void install(const Prefetched& layout, std::span<Value* const> values,
                      std::vector<Group>& groups);
  Value* finish(int item, Value* v);
  // Stores.
  void store_reductions(const std::vector<int>& pass, const Point& p,
                        const std::vector<std::vector<Value*>>& results, Value* cond);
  void store_row_item(const Item& it, Point& p, const std::vector<std::vector<Value*>>& results,
                      Value* cond);
  void store_element_item(const Item& it, std::vector<Group>& groups,
                          const std::vector<std::vector<Value*>>& results);
  void store_if(Value* cond, int param, Value* offset, const std::vector<Value*>& vals);
  void when(Value* cond, const char* name, const char* after, llvm::function_ref<void()> body);
  // Expressions and loads.
  Value* eval(const Expr& e, Point& p, Group& g, const std::vector<std::vector<Value*>>& results);
  Value* coordinate(const std::string& var, const Point& p);
  /// n / suffix_[a] for 0 <= n < 2^50 (a flat reduced index), by Emitter::divmod: a few
  /// instructions where a 64-bit division is about 70.
  Value* divide(Value* n, int a);
  /// The coordinates at flat index r (ix_) that a kernel steps, outermost first, by division:
  /// one per group of reduced indices (step_groups_).
  std::vector<Value*> axes_of(Value* r);
  Value* axis_of(Value* r, int a);
  /// Whether some stepped coordinate is several reduced indices' (step_groups_): then a
  /// point's Point::axes stay empty, coordinate() dividing where asked (nothing is, by
  /// reduction::stepped_axis_groups' conditions, but a chunk's first offsets).
  bool joined_axes() const { return step_groups_.size() < reduced_extents_.size(); }
  /// Coordinates `c` (axes_of) advanced by the flat steps whose coordinates are `k`: a
  /// mixed-radix addition over step_extents_, one carry at most per coordinate, no division.
  Stepped step_axes(const std::vector<Value*>& c, const std::vector<Value*>& k);
  /// Canonical indices with folded runs (kFolded .. _r, kFolded .. _s<a>) spelled out as the
  /// reduced indices `_a<k>` they hold: for strided accesses, one coordinate per dimension.
  std::vector<std::string> unfolded(const std::vector<std::string>& indices) const;
  Value* offset_of(int param, const std::vector<std::string>& indices, const Point& p);
  int param_of(const std::string& name) const;
  Value* load(const Load& ld, Point& p, Group& g, const std::vector<std::vector<Value*>>& results);
  Value* load_scalar(int param, const Load& ld, const Point& p);
  Value* load_vector(int param, const Load& ld, const Point& first);
  bool vector_access(const Group& g, int param, const std::vector<std::string>& indices) const;
  bool aligned_with_row(int param, const std::vector<std::string>& indices) const;
  void note_aligned(int param, DType t);
  // The GPU's pieces.
  /// A constant of the kernel's index type (ix_); i64 for what is 64-bit in every kernel (a
  /// split's phase argument, byte addresses).
  Value* ix(int64_t v) { return llvm::ConstantInt::get(ix_, v); }
  Value* i64(int64_t v) { return b_.getInt64(v); }
  Value* dim_value(const Dim& d);
  Value* shuffle_xor(Value* v, int offset);
  void no_unroll(llvm::Instruction* latch);
  int64_t slot_base(const std::vector<std::vector<int>>& passes, int pass_index) const;
  void make_shared_memory();
  void store_shared(Value* slot, Value* v);
  Value* load_shared(Value* slot, Type* t);
  void barrier() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

  // ---- reduction_rows.cpp ----------------------------------------------------------------
  // The thread's groups of a row chunk from element `base` on (i64), for `items` x `vec`
  // elements `threads` apart per group: elements at or past `limit` are out of range (they
  // load a clamped, valid address and contribute nothing), as are all when !valid. With a
  // `shift` (i64), the vectors start `shift` elements later (shifted groups).
  // With `steps` (RowSteps), each point takes its coordinates and the inputs' offsets from
  // the point before it (step_axes), not by division.
  struct RowSteps {
    AxisSteps group, point;  // threads x vec flat indices (a group's first point from the
                             // group before), and 1 (a point from the one before)
  };
  // `whole`: every point of the chunk is in the row (a whole chunk, walk_chunks) and the
  // row exists: no point is masked, clamped or compared with `limit`.
  struct Walk {
    int items, threads, vec;
    bool vector;
    Value* shift = nullptr;
    const RowSteps* steps = nullptr;
    bool whole = false;
  };
  /// Elements per iteration of a thread's scalar accesses in a vectorized variant (rows not a
  /// multiple of vec): kUnalignedItems, or 8 through the strides or where the (not `held`)
  /// row's offsets are stepped.
  int scalar_items(bool held) const;
  /// The steps of a walk of `threads` x `vec` flat indices a group, emitted here; empty (no
  /// stepping) for a held row, which divides once per element and keeps no offsets across its
  /// passes, and where the kernel has one reduced index.
  RowSteps row_steps(int64_t threads_by_vec, bool held);
  /// The accumulators of `pass` over a row's chunks [begin, end) (begin a multiple of `chunk`
  /// from the row's start): in a kernel that steps its offsets (divides_), for a pass that
  /// stores no elements, its whole chunks with make_groups(base, true), unmasked, where the
  /// row exists (`valid`), then the rest (less than a chunk); else every chunk, masked, with
  /// make_groups(base, false).
  std::vector<Value*> walk_chunks(const std::vector<int>& pass,
                                  const std::vector<std::vector<Value*>>& results, Value* begin,
                                  int64_t chunk, Value* end, Value* valid,
                                  llvm::function_ref<std::vector<Group>(Value*, bool)> make_groups);
  void branch_rows(Value* fits, Value* vec_ok);
  void branch_staged();
  void emit_rows(bool persistent, bool vector, bool staged = false, bool shifted = false);
  std::vector<Group> row_groups(Value* base, Value* limit, Walk w, Value* lane, Value* valid,
                                const std::vector<Value*>& o);
  Group row_edges(Value* shift, Value* body_end, Value* live, Value* lane, Value* valid,
                  const std::vector<Value*>& o);
  // A shifted row (step 4) of row `row` (i64): its vectors start `shift` elements in, where
  // the flat index (row x R + r) is a multiple of vec; its body is `walked` elements of whole
  // vectors, up to `body_end`. Its edges are the head before `shift` and the tail from
  // body_end on (row_edges).
  struct ShiftedRow {
    Value *shift, *walked, *body_end;
  };
  ShiftedRow shifted_row(Value* row);
  std::vector<Value*> combine_rows(const std::vector<std::vector<int>>& states,
                                   std::vector<Value*> partial, Value* lane, Value* grp,
                                   int64_t base);
  std::vector<Value*> fold_warps(const std::vector<int>& st, int64_t base, int at, int n,
                                 Value* grp, const std::vector<Value*>& partial);
  void rematerialize(std::vector<Group>& groups, int pass);
  Value* opaque_copy(Value* v, int tag);
  Value* opaque_index(Value* v);
  void prefetch(std::vector<Group>& groups);
  void prefetch_weights();
  void stage_groups(std::vector<Group>& groups);
  Value* dynamic_smem_size();
  llvm::GlobalVariable* stage_smem();
  // A strided variant's tile (step 4c): its fallback, the copy into shared memory, its reads.
  void branch_tiled(Value* vec_ok);
  void load_tile();
  void copy_columns(const StagePlan::Region& reg, Value* first);
  void copy_walk(const StagePlan::Region& reg, const std::vector<Value*>& o, Value* c0,
                 int64_t spacing, int count, Type* vt, const std::string& name,
                 llvm::function_ref<void(int, Value*, Value*)> put);
  Value* tile_address(const StagePlan::Region& reg, Value* kr, Value* r, int64_t k = 0);
  Value* load_tiled(const StagePlan::Region& reg, Point& p, Group& g);
  Value* stride_arg(const std::string& tensor, size_t d);

  // ---- reduction_outer.cpp ---------------------------------------------------------------
  // The columns of an outer kernel's thread: its `vec` consecutive rows of the kernel from
  // `first` (the block's first) + tx * vec, each clamped to an existing one, whether it exists,
  // and its coordinates.
  struct OuterColumns {
    std::vector<Value*> valid;
    std::vector<std::vector<Value*>> o;
    std::vector<Point> points;  // for row-level stores
  };
  void block_loop(int64_t per_block, llvm::function_ref<void(Value*)> body);
  OuterColumns outer_columns(Value* first, Value* tx, bool vector);
  std::vector<Group> outer_groups(const OuterColumns& c, Value* base, Value* ty, Value* end,
                                  bool vector, int items, bool masked);
  std::map<std::string, OffsetStep> plan_offset_steps(const std::vector<Value*>& distance);
  /// The steps of `distance` flat reduced indices (AxisSteps), emitted here; none where the
  /// kernel has one reduced index or no input's offset divides (divides_).
  AxisSteps axis_steps(int64_t distance);
  std::vector<Value*> outer_chunks(const std::vector<int>& pass,
                                   const std::vector<std::vector<Value*>>& results,
                                   const OuterColumns& c, Value* ty, Value* begin, Value* end,
                                   bool vector);
  void emit_outer(bool vector);
  void combine_outer(const std::vector<int>& reds, const std::vector<Value*>& partial, Value* tx,
                     Value* ty, std::vector<std::vector<Value*>>& results, bool finished);

  // ---- reduction_split.cpp ---------------------------------------------------------------
  void emit_split(Value* vec_ok);
  void walk_to_exit(Value* vec_ok, llvm::function_ref<void(bool)> walk);
  Value* record_word(Value* record, const SplitPlan& plan, int item);
  void store_record(Value* cond, Value* record, const SplitPlan& plan, int item, Value* v);
  std::vector<Value*> fold_loop(const std::vector<int>& done, int per, Value* first, int64_t stride,
                                Value* end, llvm::function_ref<Value*(Value*, size_t)> word,
                                int ahead = 1);
  void fold_records(const std::vector<int>& done, const SplitPlan& plan, Value* record0, Value* S,
                    std::vector<std::vector<Value*>>& results);
  void fold_columns(const std::vector<int>& done, int phase, const SplitPlan& plan, Value* first,
                    Value* record0, Value* S, Value* slice, Value* tile_ok);
  void emit_outer_split(Value* vec_ok);

  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  Emitter em_;
  IrMath math_;
  const KernelDef& abi_;
  const ScheduledKernel& sk_;
  ReductionConfig cfg_;
  StepKind shape_;  // row_reduction or outer_reduction
  // The type of indices, extents and element offsets: i32 or i64 (the constructor's index32).
  // Row kernels (reduction_rows.cpp) are 64-bit only.
  Type* ix_ = nullptr;
  std::vector<const TensorDecl*> params_;
  std::vector<std::string> symbols_;
  Program prog_;
  // Whether an input's offset divides the flat reduced index (reduction::divides_reduced): the
  // kernel steps its coordinates and offsets (axis_steps) and its stepped scalar path keeps
  // kSteppedItems loads in flight (scalar_items).
  bool divides_ = false;
  StagePlan stage_plan_;
  StagePlan tile_plan_;  // a strided variant's tile (cfg.strided && cfg.stage): plan_tile
  int rank_ = 0;
  std::string vary_;
  VariantLayout layout_;
  llvm::Function* fn_ = nullptr;
  llvm::GlobalVariable* smem_ = nullptr;
  llvm::GlobalVariable* stage_smem_ = nullptr;  // staging configs: the dynamic shared memory
  Value* keep_policy_ = nullptr;                // in emit_rows: the L2 policy of load_vector_kept
  Value* stage_row_ = nullptr;   // on a staged path: the byte offset (i64) of the row's area
  Value* tile_pitch_ = nullptr;  // on a tiled path: the bytes of a row's area (i64)
  Value* tile_kr_ = nullptr;     // on a tiled path, in emit_rows: the thread's row in the tile
  int pass_ = 0;                 // row kernels: the pass being emitted
  std::vector<Value*> ptrs_, syms_, row_extents_;
  std::vector<Value*> reduced_extents_;  // of each reduced index; R_ is their product
  // suffix_[a]: the product of reduced_extents_[a..] (suffix_[m] = 1), and it prepared as a
  // divisor, both computed once in the entry block for divide().
  std::vector<Value*> suffix_;
  std::vector<Divisor> suffix_div_;
  // The reduced indices stepped as one coordinate each ([first, last]:
  // reduction::stepped_axis_groups; one index each in a strided variant, whose offsets come
  // from launch strides) and each group's extent, the product of its indices'.
  std::vector<std::pair<int, int>> step_groups_;
  std::vector<Value*> step_extents_;
  // Outer kernels with several reduced indices: the steps of `group` flat indices, the
  // distance between a thread's steps in a chunk (outer_groups).
  AxisSteps group_steps_;
  Value *tid_ = nullptr, *bid_ = nullptr, *nblocks_ = nullptr, *rows_ = nullptr, *R_ = nullptr;
  Value *workspace_ = nullptr, *phase_ = nullptr;  // split kernels
  BasicBlock* exit_ = nullptr;
};

}  // namespace kiln::reduction
