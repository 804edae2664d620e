// Lowering a tiled pointwise step (a transpose, a permutation that moves the contiguous
// index) to LLVM IR. The plan (compiler/plan.h: PointwiseStep::tiling) names the step
// variable A that the tiled loads hold contiguous and the loads read through shared memory;
// I is the step's innermost variable (the output's contiguous index), V = cfg.vec, Ti x To =
// cfg.tile_in x cfg.tile_out, and the other variables are the batch. Variables the plan joins
// (Tiling::joined: every load reads them as consecutive dimensions) are one variable here, of
// extent their product: below, "variable" means a dimension of the tile loop. Algorithm:
//  1. The block walks tiles t = blockIdx.x, + gridDim.x, ... below batch x ceil(A / Ti) x
//     ceil(I / To), t = (batch * tiles_a + tile_a) * tiles_i + tile_i.
//  2. Load: the tile's (Ti / V) x (To / V) blocks of V x V elements are dealt to the threads,
//     consecutive threads along A. For each tiled load a thread loads its block's V rows
//     (I = i .. i + V - 1) as V-element vectors along A, so a warp reads whole rows of the
//     tile; it then writes the block's V columns into shared memory as vectors along I (the
//     V x V transpose is a renaming of registers).
//  3. Barrier.
//  4. Store: the tile's Ti x (To / V) chunks of V elements along I are dealt to the threads,
//     consecutive threads along I. A thread reads its chunk of each tiled load back, loads
//     its other loads as the flat kernel does (one vector for a load contiguous along I, one
//     scalar for a load without I, a gather otherwise), computes and stores V elements of
//     every output with one vector each (bf16 lanes widened from the chunk's words, so that a
//     copy stores the words as read: Emitter::widen_lane).
//  5. Barrier: the next tile overwrites shared memory.
// One function holds every path below; it asks ptxas for the blocks an SM that the registers
// of its hungriest path's loads in flight allow (Tiling::registers, blocks_per_sm).
// Shared memory holds, per tiled load, a Ti x To tile in its stored type: row a (along A) of
// To elements; chunk c (V elements along I) of row a sits at chunk c ^ ((a / V) % S), S the
// chunks per 128 bytes (at most To / V). In step 2 the threads of a quarter warp write
// rows of consecutive a / V, in step 4 consecutive chunks of one row: both fall in distinct
// banks (no padding, and rows stay 16-byte aligned for vector accesses).
// Bounds. The vector path runs when the extents of A and I are multiples of V (a vector is
// then wholly inside or outside the space, and every row starts aligned). Odd extents. Where A
// is a multiple of V and I is not, every input row starts aligned and the aligned-rows path runs
// (Tiling::aligned_rows; load_tile_rows below): the tiles of the shifted path, loaded as the
// vector path loads them, the output rows' shift taken as shared memory is read (H200,
// bench/results/2026-11-30-h200-aligned-rows, call 4: bf16 8191 x 8192 96.7 -> 86.9 us, f32
// 153.2 -> 144.2, f32 with a contiguous add 214.4 -> 198.7). Else
// the shifted path runs (below), or the scalar one where every load is a tiled load of 32-bit
// elements (Tiling::shifts, compiler/plan.h: measured faster there,
// bench/results/2026-11-30-h200-shifted-transpose). Shifted: tile t owns, of output row a, the To
// elements from i0 - s'(a), s'(a) the row's offset above a multiple of V, so each of its chunks is
// an aligned vector (one more tile along I); it loads input rows i0 - V .. i0 + To - 1, each as the
// Ti / V + 1 aligned vectors that cover its elements a0 .. a0 + Ti - 1, and stores them as loaded,
// a row of Ti + V elements per input row (vector q at chunk q ^ (r / V % S) below Ti / V); step 4
// reads a chunk's V lanes element by element (rows V apart, hence the swizzle) and stores one
// vector. Tiles at the space's edges check every vector and lane, 8 at a time (tiles inside the
// space along I check only each chunk's row). Measured on an H200: bf16 8191 x 8193 130 -> 98 us,
// f32 8191 x 8193 with a contiguous add 311 -> 209, [8, 2047, 32, 127] -> [8, 32, 127, 2047] 125 ->
// 118. Scalar: every global access is scalar, shared memory is used as in the vector path, and in
// step 4 a thread's V elements of a tile row are To / V apart (element rr + l To / V) rather than
// adjacent, so that each of a warp's scalar stores writes consecutive elements
// (bench/results/2026-11-29-h200-odd-transpose: bf16 8191 x 8193 313 -> 132 us; the same for step
// 2's loads was 5% slower on f32: the loads' V elements of a thread share sectors, which L1
// serves). A load outside the space reads element 0 (or a constant of zeros) instead (a select, so
// the loads stay free of branches), a store outside is skipped, and an element outside is never
// computed. Both barriers are outside every bound check, and the tile loop and the path depend only
// on the block and the extents: every thread of a block reaches every barrier. Index arithmetic is
// 32-bit when the space has at most INT32_MAX elements (no offset of any tensor exceeds its
// elements), else 64-bit.
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <unordered_map>

#include "compiler/codegen.h"
#include "compiler/emit.h"

namespace kiln {
namespace {

using llvm::BasicBlock;
using llvm::Type;
using llvm::Value;

// The tile loop's forms: 16-byte vectors (extents multiples of V), aligned input rows (A a
// multiple of V, I not), shifted vectors and element by element (extents that are not).
enum class Path { vec, rows, shifted, scalar };

// How a distinct load is read in step 4.
enum class Read {
  tiled,       // from shared memory
  contiguous,  // indexed by the step's variables in order: at the output's offset
  row,         // distinct variables, the last one I: V consecutive elements
  uniform,     // without I: one element for the chunk
  gather,      // anything else: element by element
};

struct Access {
  int param = 0;
  std::vector<int> vars;  // step variable positions, one per dimension
  DType stored = DType::f32;
  Read read = Read::gather;
  int64_t smem_offset = 0;   // tiled: its region of shared memory, in bytes
  std::vector<Value*> step;  // per step variable: the element stride (null: 0), per loop
};

// One element of a chunk in step 4.
struct Lane {
  std::vector<Value*> loaded;  // per access, widened to its compute type
  std::vector<Value*> coords;  // per step variable, in the index type
  std::unordered_map<const ExprNode*, Value*> memo;
};

class TiledLowering {
 public:
  TiledLowering(llvm::Module& m, const KernelDef& k, const PointwiseStep& step,
                const PointwiseConfig& cfg)
      : m_(m),
        ctx_(m.getContext()),
        b_(ctx_),
        em_(m, b_),
        k_(k),
        step_(step),
        cfg_(cfg),
        params_(k.params()),
        symbols_(k.symbols()),
        dims_(step.tiling.dims(static_cast<int>(step.vars.size()))),
        dim_of_(dim_positions(dims_)),
        rank_(static_cast<int>(dims_.size())),
        across_(dim_of_[static_cast<size_t>(step.tiling.across)]),
        inner_(rank_ - 1) {
    em_.set_fast_functions(step.fast_functions);
  }

  void run(const std::string& entry, VariantLayout* layout) {
    const int V = cfg_.vec;
    internal_check(step_.tiling.tiled() && cfg_.tiled() && across_ < inner_,
                   "lower_tiled: not a tiled step and config");
    auto pow2 = [](int x) { return x > 0 && (x & (x - 1)) == 0; };
    internal_check(pow2(V) && pow2(cfg_.tile_in) && pow2(cfg_.tile_out) && cfg_.tile_in % V == 0 &&
                       cfg_.tile_out % V == 0 && blocks_per_tile() % cfg_.block == 0,
                   "lower_tiled: invalid tile (compiler/config.h)");
    collect_accesses();
    build_function(entry);
    if (layout) *layout = layout_;
  }

 private:
  int64_t blocks_per_tile() const {
    return int64_t{cfg_.tile_in / cfg_.vec} * (cfg_.tile_out / cfg_.vec);
  }

  // ---- analysis -------------------------------------------------------------------------

  int param_index(const std::string& name) const {
    for (size_t i = 0; i < params_.size(); ++i) {
      if (params_[i]->name == name) return static_cast<int>(i);
    }
    throw InternalError("lower_tiled: load of unknown tensor " + name);
  }

  // Per step variable, the position of its dimension of the tile loop (Tiling::dims).
  static std::vector<int> dim_positions(const std::vector<std::vector<int>>& dims) {
    std::vector<int> of;
    for (size_t d = 0; d < dims.size(); ++d) of.insert(of.end(), dims[d].size(), d);
    return of;
  }

  int step_var(const std::string& name) const {
    auto it = std::find(step_.vars.begin(), step_.vars.end(), name);
    internal_check(it != step_.vars.end(), "lower_tiled: unknown index variable");
    return static_cast<int>(it - step_.vars.begin());
  }

  // The dimensions (of the tile loop) of a load indexed by the step variables `vars`: a joined
  // variable follows its run's previous one in every load (Tiling::joined), so its run counts once.
  std::vector<int> dims_of(const std::vector<int>& vars) const {
    std::vector<int> out;
    for (int v : vars) {
      if (dims_[static_cast<size_t>(dim_of_[v])].front() == v) out.push_back(dim_of_[v]);
    }
    return out;
  }

  std::vector<int> vars_of(const Load& ld) const {
    std::vector<int> vars;
    for (const std::string& v : ld.indices) vars.push_back(step_var(v));
    return dims_of(vars);
  }

  // The dimension of a variable whose index a value reads: never a joined one (plan_tiling).
  int var_index(const std::string& name) const {
    const int d = dim_of_[static_cast<size_t>(step_var(name))];
    internal_check(dims_[static_cast<size_t>(d)].size() == 1, "lower_tiled: a joined index read");
    return d;
  }

  int access_index(const Load& ld) const {
    const int p = param_index(ld.tensor);
    const std::vector<int> vars = vars_of(ld);
    for (size_t i = 0; i < accesses_.size(); ++i) {
      if (accesses_[i].param == p && accesses_[i].vars == vars) return static_cast<int>(i);
    }
    throw InternalError("lower_tiled: access not collected");
  }

  void collect_accesses() {
    std::unordered_map<const ExprNode*, bool> seen;
    auto visit = [&](auto&& self, const Expr& e) -> void {
      if (!seen.emplace(e.ptr().get(), true).second) return;
      if (const Load* ld = e.as<Load>()) add_access(*ld);
      for_each_child(e, [&](const Expr& c) { self(self, c); });
    };
    for (const StepStore& s : step_.stores) visit(visit, s.value);

    const int V = cfg_.vec;
    // The largest of the paths' tiles: the aligned rows' has V more columns, the shifted path's V
    // more rows of V more.
    int64_t elems = int64_t{cfg_.tile_in} * cfg_.tile_out;
    if (rows_path()) elems = std::max(elems, rows_pitch() * cfg_.tile_in);
    if (odd_path() == Path::shifted) elems = std::max(elems, shifted_pitch() * shifted_rows());
    for (Access& a : accesses_) {
      if (a.read != Read::tiled) continue;
      a.smem_offset = smem_bytes_;
      smem_bytes_ += (elems * size_of(a.stored) + 15) / 16 * 16;
    }
    internal_check(smem_bytes_ > 0, "lower_tiled: a tiling without tiled loads");
    if (V == 1) return;
    auto align = [&](DType t) { return std::min<int>(16, V * size_of(t)); };
    for (const Access& a : accesses_) {
      if (a.read != Read::tiled && a.read != Read::contiguous && a.read != Read::row) continue;
      layout_.align_bytes = std::max(layout_.align_bytes, align(a.stored));
      layout_.aligned_params.push_back(a.param);
    }
    for (const StepStore& s : step_.stores) {
      layout_.align_bytes = std::max(layout_.align_bytes, align(params_[s.param]->dtype));
      layout_.aligned_params.push_back(s.param);
    }
    std::sort(layout_.aligned_params.begin(), layout_.aligned_params.end());
    layout_.aligned_params.erase(
        std::unique(layout_.aligned_params.begin(), layout_.aligned_params.end()),
        layout_.aligned_params.end());
  }

  void add_access(const Load& ld) {
    Access a;
    a.param = param_index(ld.tensor);
    a.vars = vars_of(ld);
    a.stored = ld.stored;
    for (const Access& b : accesses_) {
      if (b.param == a.param && b.vars == a.vars) return;
    }
    std::vector<int> sorted = a.vars;
    std::sort(sorted.begin(), sorted.end());
    const bool distinct = std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
    const bool uses_inner = std::find(a.vars.begin(), a.vars.end(), inner_) != a.vars.end();
    const std::vector<TiledLoad>& tiled = step_.tiling.loads;
    const bool is_tiled = std::any_of(tiled.begin(), tiled.end(), [&](const TiledLoad& t) {
      return t.tensor == ld.tensor && t.stored == ld.stored && dims_of(t.vars) == a.vars;
    });
    if (is_tiled) {
      a.read = Read::tiled;
    } else if (static_cast<int>(a.vars.size()) == rank_ && distinct &&
               std::is_sorted(a.vars.begin(), a.vars.end())) {
      a.read = Read::contiguous;
    } else if (distinct && !a.vars.empty() && a.vars.back() == inner_) {
      a.read = Read::row;
    } else if (!uses_inner) {
      a.read = Read::uniform;
    } else {
      a.read = Read::gather;
    }
    accesses_.push_back(std::move(a));
  }

  // ---- the function -----------------------------------------------------------------------

  Value* dim_value(const Dim& d) {
    if (d.is_fixed()) return b_.getInt64(d.value());
    auto it = std::find(symbols_.begin(), symbols_.end(), d.name());
    internal_check(it != symbols_.end(), "lower_tiled: unknown symbol");
    return sym_args_[it - symbols_.begin()];
  }

  void build_function(const std::string& entry) {
    fn_ = em_.declare_kernel(k_, entry, cfg_.block);
    const Tiling& t = step_.tiling;
    if (const int blocks = t.blocks_per_sm(cfg_.vec, cfg_.tile_in, cfg_.tile_out, cfg_.block)) {
      em_.min_blocks_per_sm(fn_, blocks);
    }
    for (size_t i = 0; i < params_.size(); ++i) ptr_args_.push_back(fn_->getArg(i));
    for (size_t i = 0; i < symbols_.size(); ++i)
      sym_args_.push_back(fn_->getArg(params_.size() + i));

    auto* smem_ty = llvm::ArrayType::get(b_.getInt8Ty(), smem_bytes_);
    smem_ = new llvm::GlobalVariable(m_, smem_ty, false, llvm::GlobalValue::InternalLinkage,
                                     llvm::UndefValue::get(smem_ty), entry + ".tile", nullptr,
                                     llvm::GlobalValue::NotThreadLocal, 3);
    smem_->setAlignment(llvm::Align(16));

    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn_));
    tid64_ = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
    bid_ = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    nblocks_ = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
    Value* numel = b_.getInt64(1);
    for (const std::vector<int>& dim : dims_) {
      Value* extent = nullptr;
      for (int v : dim) {
        Value* e = dim_value(step_.space[static_cast<size_t>(v)]);
        extent = extent ? b_.CreateMul(extent, e, "joined") : e;
      }
      extents64_.push_back(extent);
      numel = b_.CreateMul(numel, extent, "numel");
    }
    auto tiles = [&](Value* extent, int tile) {
      return b_.CreateUDiv(b_.CreateAdd(extent, b_.getInt64(tile - 1)), b_.getInt64(tile));
    };
    tiles_a64_ = tiles(extents64_[across_], cfg_.tile_in);
    tiles_i64_ = tiles(extents64_[inner_], cfg_.tile_out);
    batch64_ = b_.getInt64(1);
    for (int v = 0; v < rank_; ++v) {
      if (v != across_ && v != inner_) batch64_ = b_.CreateMul(batch64_, extents64_[v], "batch");
    }
    ntiles_ = b_.CreateMul(b_.CreateMul(tiles_a64_, tiles_i64_), batch64_, "tiles");

    BasicBlock* loop32 = BasicBlock::Create(ctx_, "idx32", fn_);
    BasicBlock* loop64 = BasicBlock::Create(ctx_, "idx64", fn_);
    exit_ = BasicBlock::Create(ctx_, "exit", fn_);
    b_.CreateCondBr(b_.CreateICmpULE(numel, b_.getInt64(INT32_MAX)), loop32, loop64);
    b_.SetInsertPoint(loop32);
    emit_paths(b_.getInt32Ty());
    b_.SetInsertPoint(loop64);
    emit_paths(b_.getInt64Ty());
    b_.SetInsertPoint(exit_);
    b_.CreateRetVoid();
  }

  // The tile loops in index type `idx` (vector, aligned-rows, shifted or scalar), chosen by the
  // extents.
  void emit_paths(Type* idx) {
    idx_ty_ = idx;
    ext_.clear();
    for (Value* e : extents64_) ext_.push_back(b_.CreateTrunc(e, idx));
    tiles_a_ = b_.CreateTrunc(tiles_a64_, idx);
    tiles_i_ = b_.CreateTrunc(tiles_i64_, idx);
    tid_ = b_.CreateTrunc(tid64_, idx);
    // Element strides of every tensor along every step variable.
    for (Access& a : accesses_) a.step = strides(a.vars);
    out_strides_ = strides(all_vars());
    if (cfg_.vec == 1) {  // the vector path's order: every element loaded before one is written
      emit_tile_loop(Path::vec);
      return;
    }
    BasicBlock* vec = BasicBlock::Create(ctx_, "tiles.vec", fn_);
    BasicBlock* odd = BasicBlock::Create(ctx_, "tiles.odd", fn_);
    Value* ok =
        b_.CreateAnd(b_.CreateICmpEQ(b_.CreateURem(ext_[across_], idx_of(cfg_.vec)), idx_of(0)),
                     b_.CreateICmpEQ(b_.CreateURem(ext_[inner_], idx_of(cfg_.vec)), idx_of(0)));
    b_.CreateCondBr(ok, vec, odd);
    b_.SetInsertPoint(vec);
    emit_tile_loop(Path::vec);
    b_.SetInsertPoint(odd);
    if (rows_path()) {  // every input row aligned: A a multiple of V (and I not)
      BasicBlock* rows = BasicBlock::Create(ctx_, "tiles.rows", fn_);
      BasicBlock* other = BasicBlock::Create(ctx_, "tiles.other", fn_);
      b_.CreateCondBr(b_.CreateICmpEQ(b_.CreateURem(ext_[across_], idx_of(cfg_.vec)), idx_of(0)),
                      rows, other);
      b_.SetInsertPoint(rows);
      emit_tile_loop(Path::rows);
      b_.SetInsertPoint(other);
    }
    emit_tile_loop(odd_path());
  }

  // Whether the config runs the aligned-rows path where A is a multiple of V
  // (Tiling::aligned_rows).
  bool rows_path() const {
    return step_.tiling.aligned_rows(cfg_.vec, cfg_.tile_in, cfg_.tile_out);
  }

  // The path of extents that are not multiples of V (file comment, "Odd extents"), as the
  // plan decides it (Tiling::shifts).
  Path odd_path() const {
    return step_.tiling.shifts(cfg_.vec, cfg_.tile_in, cfg_.tile_out) ? Path::shifted
                                                                      : Path::scalar;
  }

  // Per step variable, the element stride of a row-major tensor indexed by `vars` (null: the
  // tensor does not use it; a repeated variable sums its dimensions' strides).
  std::vector<Value*> strides(const std::vector<int>& vars) {
    std::vector<Value*> s(rank_, nullptr);
    Value* stride = nullptr;
    for (int d = static_cast<int>(vars.size()) - 1; d >= 0; --d) {
      Value* here = stride ? stride : idx_of(1);
      s[vars[d]] = s[vars[d]] ? b_.CreateAdd(s[vars[d]], here) : here;
      stride = stride ? b_.CreateMul(stride, ext_[vars[d]]) : ext_[vars[d]];
    }
    return s;
  }

  Value* idx_of(int64_t v) { return llvm::ConstantInt::get(idx_ty_, v); }

  // sum of coords[v] * strides[v] over the variables in `which` (null coords are skipped).
  Value* offset(const std::vector<Value*>& strides, const std::vector<Value*>& coords,
                const std::vector<int>& which, Value* start) {
    Value* off = start;
    for (int v : which) {
      if (!strides[v]) continue;
      Value* term = b_.CreateMul(coords[v], strides[v]);
      off = off ? b_.CreateAdd(off, term) : term;
    }
    return off ? off : idx_of(0);
  }

  // The tile's coordinates (step 1): the first a and i, every batch variable, and the offsets
  // of the batch point in each access and in the outputs.
  struct Origin {
    Value *a0, *i0;
    std::vector<Value*> coords;  // batch variables set, A and I null
    std::vector<Value*> base;    // per access
    Value* out_base;
  };

  Origin tile_origin(Value* t, Value* tiles_i) {
    Origin o;
    o.coords.assign(rank_, nullptr);
    o.i0 = b_.CreateMul(b_.CreateURem(t, tiles_i), idx_of(cfg_.tile_out), "i0");
    Value* rest = b_.CreateUDiv(t, tiles_i);
    o.a0 = b_.CreateMul(b_.CreateURem(rest, tiles_a_), idx_of(cfg_.tile_in), "a0");
    rest = b_.CreateUDiv(rest, tiles_a_);
    const std::vector<int> batch = batch_vars();
    for (int j = static_cast<int>(batch.size()) - 1; j >= 0; --j) {
      const int v = batch[j];
      if (j == 0) {
        o.coords[v] = rest;
      } else {
        o.coords[v] = b_.CreateURem(rest, ext_[v]);
        rest = b_.CreateUDiv(rest, ext_[v]);
      }
    }
    for (const Access& a : accesses_) o.base.push_back(offset(a.step, o.coords, batch, nullptr));
    o.out_base = offset(out_strides_, o.coords, batch, nullptr);
    return o;
  }

  std::vector<int> batch_vars() const {
    std::vector<int> batch;
    for (int v = 0; v < rank_; ++v) {
      if (v != across_ && v != inner_) batch.push_back(v);
    }
    return batch;
  }

  // The tile loop of `path`: steps 1-5 of the file comment, ending in a branch to exit_.
  void emit_tile_loop(Path path) {
    const bool aligned = path == Path::vec || path == Path::scalar;
    BasicBlock* pre = b_.GetInsertBlock();
    BasicBlock* header = BasicBlock::Create(ctx_, "tile", fn_);
    BasicBlock* body = BasicBlock::Create(ctx_, "tile.body", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* t64 = b_.CreatePHI(b_.getInt64Ty(), 2, "tile");
    t64->addIncoming(bid_, pre);
    // The shifted and aligned-rows paths' tiles own To elements of a row from i0 - s', s' < V:
    // one more tile along I where the last would leave up to V - 1 elements.
    Value* tiles_i = tiles_i_;
    Value* ntiles = ntiles_;
    if (!aligned) {
      const int To = cfg_.tile_out;
      tiles_i =
          b_.CreateUDiv(b_.CreateAdd(ext_[inner_], idx_of(cfg_.vec - 1 + To - 1)), idx_of(To));
      ntiles =
          b_.CreateMul(b_.CreateMul(tiles_a64_, b_.CreateZExt(tiles_i, b_.getInt64Ty())), batch64_);
    }
    b_.CreateCondBr(b_.CreateICmpULT(t64, ntiles), body, exit_);
    b_.SetInsertPoint(body);
    const Origin o = tile_origin(b_.CreateTrunc(t64, idx_ty_), tiles_i);
    if (aligned) {
      load_tile_aligned(o, path == Path::vec);
      barrier();
      store_aligned(o, path == Path::vec);
    } else {
      // The thread's places in the tile, computed again for each tile from a copy of the thread
      // index the optimizer cannot see through: hoisted out of the tile loop, 17 vectors' and
      // 17 chunks' places held for the whole kernel took 220 of its registers.
      Value* tid = tid_;
      auto* fty = llvm::FunctionType::get(idx_ty_, {idx_ty_}, false);
      const bool wide = idx_ty_->isIntegerTy(64);
      tid_ = b_.CreateCall(
          llvm::InlineAsm::get(fty,
                               wide ? "mov.b64 $0, $1; // per tile" : "mov.b32 $0, $1; // per tile",
                               wide ? "=l,l" : "=r,r", /*hasSideEffects=*/true),
          {tid});
      if (path == Path::rows) {
        load_tile_rows(o);
      } else {  // tiles away from the space's edges (nearly all) need no bounds but the tile's own
        em_.if_else(
            load_interior(o), [&] { load_tile_shifted(o, true); },
            [&] { load_tile_shifted(o, false); });
      }
      barrier();
      // Step 4's lanes need no bounds where the tile is inside the space along I (rows past A,
      // a bound per chunk: [8, 2047, 32, 127] -> [8, 32, 127, 2047] has no tile inside along A).
      Value* interior =
          b_.CreateAnd(b_.CreateICmpUGE(o.i0, idx_of(cfg_.vec)),
                       b_.CreateICmpULE(b_.CreateAdd(o.i0, idx_of(cfg_.tile_out)), ext_[inner_]));
      const bool rows = path == Path::rows;
      em_.if_else(
          interior, [&] { store_shifted(o, true, rows); }, [&] { store_shifted(o, false, rows); });
      tid_ = tid;
    }
    // 5. Every thread is done reading the tile before the next one is written.
    barrier();
    Value* next = b_.CreateAdd(t64, nblocks_, "tile.next");
    t64->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(header);
  }

  // Step 2 of the vector path: each thread's V x V blocks of every tiled load, as V row
  // vectors, written into shared memory as V column vectors (load_blocks). The scalar path
  // loads the same blocks element by element.
  void load_tile_aligned(const Origin& o, bool vec) {
    if (vec) {
      load_blocks(o, o.i0, blocks_per_tile(), [&](const Access& acc, Value* q, Value* r, int v) {
        return tile_chunk(acc, q, r, v);
      });
      return;
    }
    const int V = cfg_.vec, qs = cfg_.tile_in / V;
    for (int64_t k = 0; k < blocks_per_tile() / cfg_.block; ++k) {
      Value* m = b_.CreateAdd(tid_, idx_of(k * cfg_.block));
      Value* q = b_.CreateURem(m, idx_of(qs));
      Value* r = b_.CreateUDiv(m, idx_of(qs));
      Value* a = b_.CreateAdd(o.a0, b_.CreateMul(q, idx_of(V)));
      for (size_t ai = 0; ai < accesses_.size(); ++ai) {
        const Access& acc = accesses_[ai];
        if (acc.read != Read::tiled) continue;
        for (int u = 0; u < V; ++u) {
          Value* i = b_.CreateAdd(o.i0, b_.CreateAdd(b_.CreateMul(r, idx_of(V)), idx_of(u)));
          Value* row = b_.CreateAdd(o.base[ai], b_.CreateMul(i, acc.step[inner_]));
          Value* in_i = b_.CreateICmpULT(i, ext_[inner_]);
          // Each element goes to its place in shared memory as soon as it is loaded (a V x V
          // block of scalars held at once would double the kernel's registers).
          for (int v = 0; v < V; ++v) {
            Value* av = b_.CreateAdd(a, idx_of(v));
            Value* ok = b_.CreateAnd(in_i, b_.CreateICmpULT(av, ext_[across_]));
            Value* off = b_.CreateSelect(ok, b_.CreateAdd(row, av), idx_of(0));
            Value* elem = b_.CreateAdd(tile_chunk(acc, q, r, v), idx_of(u));
            store_shared(acc, elem, load_raw(acc, off, 1));
          }
        }
      }
    }
  }

  // Step 2 of the vector and aligned-rows paths: the tile's `total` V x V blocks of every tiled
  // load, block m = tid + k B at columns a0 + q V (q = m % (Ti / V)) and input rows first + r V
  // .. + V - 1 (r = m / (Ti / V)), loaded as V row vectors (a row outside the space, columns
  // past A or a block past `total` read element 0), transposed in registers and written as V
  // column vectors at place(acc, q, r, v), the first element of tile row q V + v's chunk r.
  // Every block's loads are issued before the first is written: one wait for global memory a
  // tile (the aligned-rows path's To / V + 1 block rows written a round at a time put a second
  // wait in every tile: H200, bench/results/2026-11-30-h200-aligned-rows, calls 1 and 3, f32
  // 8191 x 8192, tiles of 64 x 32, 157.3 -> 143.0 us).
  template <class Place>
  void load_blocks(const Origin& o, Value* first, int64_t total, Place place) {
    const int V = cfg_.vec, qs = cfg_.tile_in / V;
    const int64_t per_thread = (total + cfg_.block - 1) / cfg_.block;
    struct Block {
      Value *q, *r, *in_tile;
      std::vector<std::vector<std::vector<Value*>>> raw;  // per access, [u][v]: row r V + u, a + v
    };
    std::vector<Block> blocks;
    for (int64_t k = 0; k < per_thread; ++k) {
      Block blk;
      Value* m = b_.CreateAdd(tid_, idx_of(k * cfg_.block));
      blk.q = b_.CreateURem(m, idx_of(qs));
      blk.r = b_.CreateUDiv(m, idx_of(qs));
      const bool last_partial = (k + 1) * cfg_.block > total;
      blk.in_tile = last_partial ? b_.CreateICmpULT(m, idx_of(total)) : nullptr;
      Value* a = b_.CreateAdd(o.a0, b_.CreateMul(blk.q, idx_of(V)));
      Value* in_a = b_.CreateICmpULT(a, ext_[across_]);
      if (blk.in_tile) in_a = b_.CreateAnd(blk.in_tile, in_a);
      blk.raw.resize(accesses_.size());
      for (size_t ai = 0; ai < accesses_.size(); ++ai) {
        const Access& acc = accesses_[ai];
        if (acc.read != Read::tiled) continue;
        for (int u = 0; u < V; ++u) {
          Value* i = b_.CreateAdd(first, b_.CreateAdd(b_.CreateMul(blk.r, idx_of(V)), idx_of(u)));
          // The tiled load's stride along A is 1: A is its last index.
          Value* row = b_.CreateAdd(o.base[ai], b_.CreateMul(i, acc.step[inner_]));
          Value* ok = b_.CreateAnd(b_.CreateICmpULT(i, ext_[inner_]), in_a);
          blk.raw[ai].push_back(
              load_raw(acc, b_.CreateSelect(ok, b_.CreateAdd(row, a), idx_of(0)), V));
        }
      }
      blocks.push_back(std::move(blk));
    }
    for (const Block& blk : blocks) {
      auto write = [&] {
        for (size_t ai = 0; ai < accesses_.size(); ++ai) {
          if (blk.raw[ai].empty()) continue;
          for (int v = 0; v < V; ++v) {
            std::vector<Value*> column;
            for (int u = 0; u < V; ++u) column.push_back(blk.raw[ai][u][v]);
            store_shared(accesses_[ai], place(accesses_[ai], blk.q, blk.r, v), column);
          }
        }
      };
      if (blk.in_tile) {
        em_.if_then(blk.in_tile, write);
      } else {
        write();
      }
    }
  }

  // Step 4 of the vector path: each thread's chunks of V elements along I, wholly inside or
  // outside the space.
  void store_aligned(const Origin& o, bool vec) {
    const int V = cfg_.vec, Ti = cfg_.tile_in, To = cfg_.tile_out;
    const int chunks = static_cast<int>(int64_t{Ti} * (To / V) / cfg_.block);
    // The vector path's lane l of chunk rr of a tile row is element rr V + l of the row; the
    // scalar path's is element rr + l To / V, so that each of a warp's V scalar stores writes
    // consecutive elements (To / V threads take a row).
    const int64_t lane_step = vec ? 1 : To / V;
    struct Chunk {
      Value *ok, *out;          // lane 0 is inside the space; its output offset
      std::vector<Value*> oks;  // per lane
      std::vector<Lane> lanes;
    };
    std::vector<Chunk> work;
    for (int k = 0; k < chunks; ++k) {
      Chunk c;
      Value* m = b_.CreateAdd(tid_, idx_of(int64_t{k} * cfg_.block));
      Value* rr = b_.CreateURem(m, idx_of(To / V));
      Value* da = b_.CreateUDiv(m, idx_of(To / V));
      Value* a = b_.CreateAdd(o.a0, da);
      Value* i = b_.CreateAdd(o.i0, vec ? b_.CreateMul(rr, idx_of(V)) : rr);
      Value* in_a = b_.CreateICmpULT(a, ext_[across_]);
      c.ok = b_.CreateAnd(in_a, b_.CreateICmpULT(i, ext_[inner_]));
      c.lanes = make_lanes(o, a, i, lane_step);
      for (int l = 0; l < V; ++l) {
        c.oks.push_back(
            vec || l == 0
                ? c.ok
                : b_.CreateAnd(in_a, b_.CreateICmpULT(c.lanes[l].coords[inner_], ext_[inner_])));
      }
      c.out = offset(out_strides_, c.lanes[0].coords, {across_, inner_}, o.out_base);
      for (size_t ai = 0; ai < accesses_.size(); ++ai) {
        const Access& acc = accesses_[ai];
        std::vector<Value*> vals;
        // Row da = q V + v: what tile_chunk wrote for v, swizzled by the row's own q.
        Value* key = b_.CreateUDiv(da, idx_of(V));
        switch (acc.read) {
          case Read::tiled:
            if (vec) {  // lanes widened from the vector's words: a copy stores them as read
              Value* chunk = load_shared_vector(acc, tile_place(acc, da, key, rr));
              for (int l = 0; l < V; ++l)
                c.lanes[l].loaded[ai] = em_.widen_lane(chunk, l, acc.stored);
              continue;
            }
            for (int l = 0; l < V; ++l) {
              Value* e = b_.CreateAdd(rr, idx_of(l * lane_step));
              vals.push_back(
                  load_shared_element(acc, tile_place(acc, da, key, b_.CreateUDiv(e, idx_of(V)),
                                                      b_.CreateURem(e, idx_of(V)))));
            }
            break;
          case Read::uniform:
            vals.assign(V, load_uniform(acc, o.base[ai], c.lanes[0], c.ok));
            break;
          case Read::contiguous:
          case Read::row:
            if (vec) {
              Value* off = acc.read == Read::contiguous
                               ? c.out
                               : offset(acc.step, c.lanes[0].coords, {across_, inner_}, o.base[ai]);
              vals = load_raw(acc, b_.CreateSelect(c.ok, off, idx_of(0)), V);
              break;
            }
            [[fallthrough]];
          case Read::gather:
            vals = load_gather(acc, o.base[ai], c.lanes, c.oks);
            break;
        }
        for (int l = 0; l < V; ++l) c.lanes[l].loaded[ai] = em_.widen(vals[l], acc.stored);
      }
      work.push_back(std::move(c));
    }
    for (Chunk& c : work) {
      if (vec) {  // the chunk is wholly inside or outside
        em_.if_then(c.ok, [&] { store_lanes(c.out, c.lanes); });
        continue;
      }
      for (int l = 0; l < V; ++l) {
        em_.if_then(c.oks[l], [&] {
          store_lane(l == 0 ? c.out : b_.CreateAdd(c.out, idx_of(l * lane_step)), c.lanes[l]);
        });
      }
    }
  }

  // The shifted path, for extents that are not multiples of V (file comment, "Odd extents").
  // Tile t owns, of output row a, the To elements from i0 - s'(a), s'(a) the row's shift
  // above a multiple of V, so that each of its chunks is an aligned vector; it reads input rows
  // i0 - V .. i0 + To - 1, each as the Ti / V + 1 aligned vectors that cover its Ti elements
  // from a0 (up to V - 1 elements before a0). Shared memory holds row r (input row i0 - V + r)
  // as loaded, P = Ti + V elements a row, its vector q at chunk q ^ key(r) (q < Ti / V), the
  // aligned path's swizzle keyed by r / V: a warp's reads of lane l are of rows V apart.
  int64_t shifted_pitch() const { return cfg_.tile_in + cfg_.vec; }
  int64_t shifted_rows() const { return cfg_.tile_out + cfg_.vec; }
  // Vectors (or chunks) a thread keeps in flight in an edge tile, whose bounds take registers:
  // all of them at once took 220; one at a time, the edge tiles were the critical path of small
  // shapes (bf16 1000 x 3001 22.3 us, 8 at a time 16.0: bench/results/
  // 2026-11-30-h200-shifted-transpose, calls 4 and 5).
  static constexpr int kEdgeBatch = 8;

  // The chunk holding element `col` of tile row r, swizzled (col < Ti) or not (the last one).
  Value* shifted_place(const Access& acc, Value* r, Value* col) {
    const int V = cfg_.vec;
    Value* key = b_.CreateAnd(r, idx_of(int64_t{swizzle(acc) - 1} * V));  // (r / V % S) V
    Value* swizzled = b_.CreateXor(col, key);
    col = b_.CreateSelect(b_.CreateICmpULT(col, idx_of(cfg_.tile_in)), swizzled, col);
    return b_.CreateAdd(b_.CreateMul(r, idx_of(shifted_pitch())), col);
  }

  // Step 2': the vectors, one global load and one shared store each; consecutive threads take
  // consecutive vectors of a row. Tiles at the space's edges (or at the end of a tensor whose
  // size is not a multiple of V) go kEdgeBatch vectors at a time, checking each.
  void load_tile_shifted(const Origin& o, bool interior) {
    const int V = cfg_.vec;
    const int per_row = cfg_.tile_in / V + 1;
    const int64_t total = shifted_rows() * per_row;
    const int per_thread = static_cast<int>((total + cfg_.block - 1) / cfg_.block);
    Value* first = b_.CreateSub(o.i0, idx_of(V));  // the input row of tile row 0 (wraps)
    for (size_t ai = 0; ai < accesses_.size(); ++ai) {
      const Access& acc = accesses_[ai];
      if (acc.read != Read::tiled) continue;
      Value* numel = numel_of(acc.vars);
      struct Item {
        Value *i, *x, *place, *in_tile;  // input row, element offset, place, m below total
      };
      auto item = [&](int k) {
        Item it;
        Value* m = b_.CreateAdd(tid_, idx_of(int64_t{k} * cfg_.block));
        Value* r = b_.CreateUDiv(m, idx_of(per_row));
        Value* q = b_.CreateURem(m, idx_of(per_row));
        it.in_tile = (k + 1) * int64_t{cfg_.block} > total ? b_.CreateICmpULT(m, idx_of(total))
                                                           : b_.getTrue();
        it.i = b_.CreateAdd(first, r);
        Value* start = row_start(acc, o, o.base[ai], it.i);  // of (i, a0)
        Value* shift = b_.CreateAnd(start, idx_of(V - 1));
        it.x = b_.CreateAdd(b_.CreateSub(start, shift), b_.CreateMul(q, idx_of(V)));
        it.place = shifted_place(acc, r, b_.CreateMul(q, idx_of(V)));
        return it;
      };
      auto write = [&](const Item& it, Value* vec) {
        b_.CreateAlignedStore(vec, shared_ptr(acc, it.place), chunk_align(acc));
      };
      if (interior) {  // every vector loaded before the first is written
        std::vector<Item> items;
        std::vector<Value*> vecs;
        for (int k = 0; k < per_thread; ++k) {
          items.push_back(item(k));
          vecs.push_back(load_span(acc, items.back().x, items.back().in_tile));
        }
        for (int k = 0; k < per_thread; ++k) {
          em_.if_then(items[k].in_tile, [&] { write(items[k], vecs[k]); });
        }
        continue;
      }
      // At the space's edges, kEdgeBatch vectors at a time: each loaded where its row is in the
      // space and it lies in its tensor (else zeros), then written; one that ends past its
      // tensor (the last elements, when its size is not a multiple of V) element by element.
      for (int k0 = 0; k0 < per_thread; k0 += kEdgeBatch) {
        const int k1 = std::min(per_thread, k0 + kEdgeBatch);
        std::vector<Item> items;
        std::vector<Value*> row_oks, insides, vecs;
        for (int k = k0; k < k1; ++k) {
          items.push_back(item(k));
          const Item& it = items.back();
          row_oks.push_back(b_.CreateAnd(it.in_tile, b_.CreateICmpULT(it.i, ext_[inner_])));
          insides.push_back(
              b_.CreateAnd(row_oks.back(), b_.CreateICmpULE(b_.CreateAdd(it.x, idx_of(V)), numel)));
          vecs.push_back(load_span(acc, it.x, insides.back()));
        }
        for (size_t j = 0; j < items.size(); ++j) {
          const Item& it = items[j];
          em_.if_then(row_oks[j], [&] {
            em_.if_else(
                insides[j], [&] { write(it, vecs[j]); },
                [&] {
                  write(it, load_alone(acc, it.x, [&](int v) {
                          return b_.CreateICmpULT(b_.CreateAdd(it.x, idx_of(v)), numel);
                        }));
                });
          });
        }
      }
    }
  }

  // Whether every input row the tile reads is in the space (i0 - V .. i0 + To - 1) and every
  // vector in its tensor: the last row's last vector ends at most Ti + V elements after the
  // row's start.
  Value* load_interior(const Origin& o) {
    const int V = cfg_.vec;
    Value* ok =
        b_.CreateAnd(b_.CreateICmpUGE(o.i0, idx_of(V)),
                     b_.CreateICmpULE(b_.CreateAdd(o.i0, idx_of(cfg_.tile_out)), ext_[inner_]));
    for (size_t ai = 0; ai < accesses_.size(); ++ai) {
      const Access& acc = accesses_[ai];
      if (acc.read != Read::tiled) continue;
      Value* numel = numel_of(acc.vars);
      Value* last = row_start(acc, o, o.base[ai], b_.CreateAdd(o.i0, idx_of(cfg_.tile_out - 1)));
      Value* end = b_.CreateAdd(last, idx_of(cfg_.tile_in + V));
      ok = b_.CreateAnd(ok, b_.CreateICmpULE(end, numel));
    }
    return ok;
  }

  // The aligned-rows path, for A a multiple of V and I not (file comment, "Odd extents"): the
  // tiles of the shifted path (chunk rr of output row a is the aligned vector of I from
  // i0 - s'(a) + rr V), but every input row starts aligned, so step 2 is the vector path's: input
  // rows i0 - V .. i0 + To - 1 as (To / V + 1) x (Ti / V) blocks of V x V, each transposed in
  // registers and written output-major. Shared memory holds row da (along A) of To + V elements
  // (tile row r: input row i0 - V + r), its chunk c at slot (c + key) mod (To / V + 1), key =
  // (da / V) % S: step 2's writes of a quarter warp (rows V apart) and step 4's reads (chunks of
  // one row) fall in distinct banks but where a slot past 128 bytes meets the row's first.
  // Step 4 reads the two chunks that hold its V elements as vectors and joins them with selects
  // and funnel shifts (rows_chunk).
  int64_t rows_pitch() const { return cfg_.tile_out + cfg_.vec; }

  // The first element of chunk c (of To / V + 1) of tile row da, rotated by the row's key.
  Value* rows_place(const Access& acc, Value* da, Value* c) {
    const int64_t n = cfg_.tile_out / cfg_.vec + 1;
    Value* key = b_.CreateAnd(b_.CreateUDiv(da, idx_of(cfg_.vec)), idx_of(swizzle(acc) - 1));
    Value* slot = b_.CreateAdd(c, key);
    slot = b_.CreateSelect(b_.CreateICmpUGE(slot, idx_of(n)), b_.CreateSub(slot, idx_of(n)), slot);
    return b_.CreateAdd(b_.CreateMul(da, idx_of(rows_pitch())),
                        b_.CreateMul(slot, idx_of(cfg_.vec)));
  }

  // Step 2 of the aligned-rows path: the vector path's blocks over input rows i0 - V ..
  // i0 + To - 1 ((To / V + 1) x (Ti / V) blocks), placed output-major by rows_place.
  void load_tile_rows(const Origin& o) {
    const int V = cfg_.vec;
    const int64_t total = int64_t{cfg_.tile_in / V} * (cfg_.tile_out / V + 1);
    Value* first = b_.CreateSub(o.i0, idx_of(V));  // the input row of tile row 0 (wraps)
    load_blocks(o, first, total, [&](const Access& acc, Value* q, Value* r, int v) {
      return rows_place(acc, b_.CreateAdd(b_.CreateMul(q, idx_of(V)), idx_of(v)), r);
    });
  }

  // Step 4 of the aligned-rows path: the V elements of tile row da from tile row r (unaligned),
  // as a vector of the stored type. They lie in chunks r / V and, unless r is a multiple of V,
  // the next: both are read as W = V x (element bytes) / 4 words, the words from
  // (r % V) x (element bytes) / 4 picked by selects, one stage per bit, and joined by funnel
  // shifts of the bytes left over (shf.r.wrap: LLVM 19 lowers llvm.fshr to four instructions).
  Value* rows_chunk(const Access& acc, Value* da, Value* r) {
    const int V = cfg_.vec, es = static_cast<int>(size_of(acc.stored)), W = V * es / 4;
    Type* i32 = b_.getInt32Ty();
    Type* words_ty = llvm::FixedVectorType::get(i32, W);
    Value* lo = b_.CreateUDiv(r, idx_of(V));
    Value* off = b_.CreateURem(r, idx_of(V));
    Value* hi = b_.CreateAdd(lo, b_.CreateZExt(b_.CreateICmpNE(off, idx_of(0)), idx_ty_));
    std::vector<Value*> w;
    for (Value* c : {lo, hi}) {
      Value* v =
          b_.CreateAlignedLoad(words_ty, shared_ptr(acc, rows_place(acc, da, c)), chunk_align(acc));
      for (int j = 0; j < W; ++j) w.push_back(b_.CreateExtractElement(v, j));
    }
    Value* bytes = b_.CreateTrunc(b_.CreateMul(off, idx_of(es)), i32);
    Value* word = b_.CreateLShr(bytes, 2);
    for (int bit = 1; bit < W; bit *= 2) {  // 2W words -> W + 1
      Value* take = b_.CreateICmpNE(b_.CreateAnd(word, bit), b_.getInt32(0));
      std::vector<Value*> next;
      for (size_t j = 0; j + bit < w.size(); ++j)
        next.push_back(b_.CreateSelect(take, w[j + bit], w[j]));
      w = std::move(next);
    }
    Value* shift = b_.CreateShl(b_.CreateAnd(bytes, 3), 3);
    auto* shf = llvm::InlineAsm::get(llvm::FunctionType::get(i32, {i32, i32, i32}, false),
                                     "shf.r.wrap.b32 $0, $1, $2, $3;", "=r,r,r,r",
                                     /*hasSideEffects=*/false);
    Value* joined = llvm::PoisonValue::get(words_ty);
    for (int j = 0; j < W; ++j) {  // whole words where the elements are (es % 4 == 0)
      Value* x = es % 4 == 0 ? w[j] : b_.CreateCall(shf, {w[j], w[j + 1], shift});
      joined = b_.CreateInsertElement(joined, x, j);
    }
    return b_.CreateBitCast(joined, llvm::FixedVectorType::get(em_.storage_type(acc.stored), V));
  }

  // The elements of a tensor indexed by the step variables `vars`, in the index type.
  Value* numel_of(const std::vector<int>& vars) {
    Value* numel = idx_of(1);
    for (int v : vars) numel = b_.CreateMul(numel, ext_[v]);
    return numel;
  }

  std::vector<int> all_vars() const {
    std::vector<int> all(rank_);
    for (int v = 0; v < rank_; ++v) all[v] = v;
    return all;
  }

  // The offset of (i, a0) in a tiled load: its stride along A is 1 (A is its last index).
  Value* row_start(const Access& acc, const Origin& o, Value* base, Value* i) {
    return b_.CreateAdd(base, b_.CreateAdd(b_.CreateMul(i, acc.step[inner_]), o.a0));
  }

  // Step 4 of the shifted and aligned-rows paths: the tile's Ti x (To / V) chunks, consecutive
  // threads along a row as in the vector path; chunk rr of row da is the aligned vector of I
  // from i0 - s'(a) + rr V. Lane l is element da of tile row V - s'(a) + rr V + l, read alone
  // (shifted) or with the chunk's other lanes from row da of the tile (rows: rows_chunk).
  // Inside the space (in tiles inside it along I: every lane of a row in it) a chunk stores one
  // vector, else lane by lane.
  void store_shifted(const Origin& o, bool interior, bool rows) {
    const int V = cfg_.vec, Ti = cfg_.tile_in, To = cfg_.tile_out;
    const int chunks = static_cast<int>(int64_t{Ti} * (To / V) / cfg_.block);
    Value* numel = numel_of(all_vars());
    struct Chunk {
      Value *da, *r, *i, *a_ok;  // lane 0's tile row and input row (i wraps below 0)
      Value* out;                // lane 0's offset, aligned
      std::vector<Lane> lanes;
    };
    auto lane_ok = [&](const Chunk& c, int l) {
      if (interior) return c.a_ok;
      return b_.CreateAnd(c.a_ok, b_.CreateICmpULT(b_.CreateAdd(c.i, idx_of(l)), ext_[inner_]));
    };
    // The chunk's geometry and its loads of global memory.
    auto chunk = [&](int k) {
      Chunk c;
      Value* m = b_.CreateAdd(tid_, idx_of(int64_t{k} * cfg_.block));
      Value* rr = b_.CreateURem(m, idx_of(To / V));
      c.da = b_.CreateUDiv(m, idx_of(To / V));
      Value* a = b_.CreateAdd(o.a0, c.da);
      c.a_ok = b_.CreateICmpULT(a, ext_[across_]);
      std::vector<Value*> row = o.coords;
      row[across_] = a;
      row[inner_] = o.i0;
      Value* start = offset(out_strides_, row, {across_, inner_}, o.out_base);
      Value* shift = b_.CreateAnd(start, idx_of(V - 1));
      Value* rv = b_.CreateMul(rr, idx_of(V));
      c.r = b_.CreateAdd(b_.CreateSub(idx_of(V), shift), rv);
      c.i = b_.CreateAdd(b_.CreateSub(o.i0, shift), rv);
      c.out = b_.CreateAdd(b_.CreateSub(start, shift), rv);
      c.lanes = make_lanes(o, a, c.i);
      std::vector<Value*> oks;
      for (int l = 0; l < V; ++l) oks.push_back(lane_ok(c, l));
      for (size_t ai = 0; ai < accesses_.size(); ++ai) {
        const Access& acc = accesses_[ai];
        std::vector<Value*> vals;
        switch (acc.read) {
          case Read::tiled:
            continue;  // below, as the chunk is stored
          case Read::uniform:
            vals.assign(V, load_uniform(acc, o.base[ai], c.lanes[0], c.a_ok));
            break;
          case Read::contiguous: {  // at the output's offsets: aligned as the output is
            if (interior) {
              vals = elements(load_span(acc, c.out, c.a_ok));
              break;
            }
            Value* inside =
                b_.CreateAnd(c.a_ok, b_.CreateICmpULE(b_.CreateAdd(c.out, idx_of(V)), numel));
            vals = elements(patch_span(
                acc, inside, c.out, [&](int l) { return oks[l]; }, load_span(acc, c.out, inside)));
            break;
          }
          case Read::row:
          case Read::gather:
            vals = load_gather(acc, o.base[ai], c.lanes, oks);
            break;
        }
        for (int l = 0; l < V; ++l) c.lanes[l].loaded[ai] = em_.widen(vals[l], acc.stored);
      }
      return c;
    };
    // The tile's elements of the chunk, computed and stored.
    auto store = [&](Chunk& c) {
      std::vector<Value*> oks;
      for (int l = 0; l < V; ++l) oks.push_back(lane_ok(c, l));
      for (size_t ai = 0; ai < accesses_.size(); ++ai) {
        const Access& acc = accesses_[ai];
        if (acc.read != Read::tiled) continue;
        if (rows) {  // both chunks lie in the tile: no bounds
          Value* vec = rows_chunk(acc, c.da, c.r);
          for (int l = 0; l < V; ++l) c.lanes[l].loaded[ai] = em_.widen_lane(vec, l, acc.stored);
          continue;
        }
        for (int l = 0; l < V; ++l) {
          Value* r = b_.CreateAdd(c.r, idx_of(l));
          Value* shift = b_.CreateAnd(row_start(acc, o, o.base[ai], b_.CreateAdd(c.i, idx_of(l))),
                                      idx_of(V - 1));
          Value* col = b_.CreateAdd(c.da, shift);
          if (!interior) {  // an element outside reads tile row V, element 0
            r = b_.CreateSelect(oks[l], r, idx_of(V));
            col = b_.CreateSelect(oks[l], col, idx_of(0));
          }
          Value* elem = shifted_place(acc, r, col);
          c.lanes[l].loaded[ai] = em_.widen(load_shared_element(acc, elem), acc.stored);
        }
      }
      if (interior) {
        em_.if_then(c.a_ok, [&] { store_lanes(c.out, c.lanes); });
        return;
      }
      // Copies of the lanes in each branch: values computed in one do not reach the other.
      em_.if_else(
          b_.CreateAnd(oks[0], oks[V - 1]),  // the lanes are consecutive
          [&] {
            std::vector<Lane> lanes = c.lanes;
            store_lanes(c.out, lanes);
          },
          [&] {
            for (int l = 0; l < V; ++l) {
              em_.if_then(oks[l], [&] {
                store_lane(l == 0 ? c.out : b_.CreateAdd(c.out, idx_of(l)), Lane(c.lanes[l]));
              });
            }
          });
    };
    if (interior) {  // every chunk's global loads issued before the first store
      std::vector<Chunk> work;
      for (int k = 0; k < chunks; ++k) work.push_back(chunk(k));
      for (Chunk& c : work) store(c);
      return;
    }
    for (int k0 = 0; k0 < chunks; k0 += kEdgeBatch) {  // at the space's edges, in batches
      std::vector<Chunk> work;
      for (int k = k0; k < std::min(chunks, k0 + kEdgeBatch); ++k) work.push_back(chunk(k));
      for (Chunk& c : work) store(c);
    }
  }

  // A chunk's lanes at row a, lane l at i + l step.
  std::vector<Lane> make_lanes(const Origin& o, Value* a, Value* i, int64_t step = 1) {
    std::vector<Lane> lanes(cfg_.vec);
    for (int l = 0; l < cfg_.vec; ++l) {
      lanes[l].coords = o.coords;
      lanes[l].coords[across_] = a;
      lanes[l].coords[inner_] = l == 0 ? i : b_.CreateAdd(i, idx_of(l * step));
      lanes[l].loaded.assign(accesses_.size(), nullptr);
    }
    return lanes;
  }

  // Every output's V lanes as one vector at `out`.
  void store_lanes(Value* out, std::vector<Lane>& lanes) {
    for (const StepStore& s : step_.stores) {
      std::vector<Value*> vals;
      for (Lane& lane : lanes) vals.push_back(eval(s.value, lane));
      em_.store(em_.element_ptr(ptr_args_[s.param], params_[s.param]->dtype, out),
                params_[s.param]->dtype, vals);
    }
  }

  // Every output's value of one lane, stored at `out`.
  void store_lane(Value* out, Lane lane) {
    for (const StepStore& s : step_.stores) {
      em_.store(em_.element_ptr(ptr_args_[s.param], params_[s.param]->dtype, out),
                params_[s.param]->dtype, {eval(s.value, lane)});
    }
  }

  // A load without I: one element for the chunk, at its row (element 0 where !ok).
  Value* load_uniform(const Access& acc, Value* base, const Lane& lane0, Value* ok) {
    Value* off = offset(acc.step, lane0.coords, {across_, inner_}, base);
    return load_raw(acc, b_.CreateSelect(ok, off, idx_of(0)), 1)[0];
  }

  // Element by element, lane l where oks[l] holds (element 0 elsewhere).
  std::vector<Value*> load_gather(const Access& acc, Value* base, const std::vector<Lane>& lanes,
                                  const std::vector<Value*>& oks) {
    std::vector<Value*> vals;
    for (size_t l = 0; l < lanes.size(); ++l) {
      Value* off = offset(acc.step, lanes[l].coords, {across_, inner_}, base);
      vals.push_back(load_raw(acc, b_.CreateSelect(oks[l], off, idx_of(0)), 1)[0]);
    }
    return vals;
  }

  // V elements of `acc` from the aligned element `off` as one vector where `inside` (the
  // vector lies in the tensor), else from a constant of zeros.
  Value* load_span(const Access& acc, Value* off, Value* inside) {
    Value* ptr = b_.CreateSelect(inside, em_.element_ptr(ptr_args_[acc.param], acc.stored, off),
                                 em_.zeros());
    return em_.load_vector(ptr, acc.stored, cfg_.vec);
  }

  std::vector<Value*> elements(Value* vec) {
    std::vector<Value*> out;
    for (int l = 0; l < cfg_.vec; ++l) out.push_back(b_.CreateExtractElement(vec, l));
    return out;
  }

  // Where !inside, lane l of `vec` loaded alone from element off + l for each lane that ok(l)
  // marks (a branch few take). The merge is of whole vectors: a phi per lane would keep every
  // 16-bit lane in a register of its own.
  template <class Ok>
  Value* patch_span(const Access& acc, Value* inside, Value* off, Ok&& ok, Value* vec) {
    BasicBlock* from = b_.GetInsertBlock();
    BasicBlock* patch = BasicBlock::Create(ctx_, "span.patch", fn_);
    BasicBlock* done = BasicBlock::Create(ctx_, "span.done", fn_);
    b_.CreateCondBr(inside, done, patch);
    b_.SetInsertPoint(patch);
    Value* alone = load_alone(acc, off, ok);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    llvm::PHINode* phi = b_.CreatePHI(vec->getType(), 2);
    phi->addIncoming(vec, from);
    phi->addIncoming(alone, patch);
    return phi;
  }

  // The V elements from `off` as a vector, each loaded alone: element 0 where !ok(l).
  template <class Ok>
  Value* load_alone(const Access& acc, Value* off, Ok&& ok) {
    Value* vec =
        llvm::PoisonValue::get(llvm::FixedVectorType::get(em_.storage_type(acc.stored), cfg_.vec));
    for (int l = 0; l < cfg_.vec; ++l) {
      Value* at = b_.CreateAdd(off, idx_of(l));
      vec = b_.CreateInsertElement(vec, load_raw(acc, b_.CreateSelect(ok(l), at, idx_of(0)), 1)[0],
                                   l);
    }
    return vec;
  }

  // The first element of chunk r of tile row a = q V + v (row-relative a), swizzled by q.
  Value* tile_chunk(const Access& acc, Value* q, Value* r, int v) {
    Value* a = b_.CreateAdd(b_.CreateMul(q, idx_of(cfg_.vec)), idx_of(v));
    return tile_place(acc, a, q, r);
  }

  // Element `pos` (null: the first) of chunk r of tile row a (row-relative), placed at chunk
  // r ^ (key % S) of the row: the file comment's swizzle, key = a / V (passed in: step 2 has
  // it as q).
  Value* tile_place(const Access& acc, Value* a, Value* key, Value* r, Value* pos = nullptr) {
    Value* chunk = b_.CreateXor(r, b_.CreateAnd(key, idx_of(swizzle(acc) - 1)));
    Value* in_row = b_.CreateMul(chunk, idx_of(cfg_.vec));
    if (pos) in_row = b_.CreateAdd(in_row, pos);
    return b_.CreateAdd(b_.CreateMul(a, idx_of(cfg_.tile_out)), in_row);
  }

  void barrier() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

  // Chunks of V elements per 128 bytes of a tile row, at most the row's chunks (a power of 2).
  int swizzle(const Access& a) const {
    const int chunk_bytes = cfg_.vec * static_cast<int>(size_of(a.stored));
    return std::min(cfg_.tile_out / cfg_.vec, std::max(1, 128 / chunk_bytes));
  }

  // n consecutive stored values of `a` from element `off` (aligned when n > 1), unwidened.
  std::vector<Value*> load_raw(const Access& a, Value* off, int n) {
    Value* ptr = em_.element_ptr(ptr_args_[a.param], a.stored, off);
    if (n == 1) {
      return {
          b_.CreateAlignedLoad(em_.storage_type(a.stored), ptr, llvm::Align(size_of(a.stored)))};
    }
    Value* v = em_.load_vector(ptr, a.stored, n);
    std::vector<Value*> out;
    for (int l = 0; l < n; ++l) out.push_back(b_.CreateExtractElement(v, l));
    return out;
  }

  Value* shared_ptr(const Access& a, Value* elem) {
    Value* region = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), smem_, a.smem_offset);
    return b_.CreateInBoundsGEP(em_.storage_type(a.stored), region, elem);
  }

  llvm::Align chunk_align(const Access& a) const {
    return llvm::Align(std::min<int>(16, cfg_.vec * size_of(a.stored)));
  }

  void store_shared(const Access& a, Value* elem, const std::vector<Value*>& vals) {
    Value* ptr = shared_ptr(a, elem);
    if (vals.size() == 1) {
      b_.CreateAlignedStore(vals[0], ptr, llvm::Align(size_of(a.stored)));
      return;
    }
    Type* vt = llvm::FixedVectorType::get(em_.storage_type(a.stored), vals.size());
    Value* v = llvm::PoisonValue::get(vt);
    for (size_t l = 0; l < vals.size(); ++l) v = b_.CreateInsertElement(v, vals[l], l);
    b_.CreateAlignedStore(v, ptr, chunk_align(a));
  }

  // The chunk of V elements at `elem` as one vector of the stored type.
  Value* load_shared_vector(const Access& a, Value* elem) {
    Type* st = em_.storage_type(a.stored);
    return b_.CreateAlignedLoad(llvm::FixedVectorType::get(st, cfg_.vec), shared_ptr(a, elem),
                                chunk_align(a));
  }

  Value* load_shared_element(const Access& a, Value* elem) {
    return b_.CreateAlignedLoad(em_.storage_type(a.stored), shared_ptr(a, elem),
                                llvm::Align(size_of(a.stored)));
  }

  Value* eval(const Expr& e, Lane& lane) {
    return em_.eval(e, lane.memo, [&](const Expr& leaf) -> Value* {
      if (const Load* ld = leaf.as<Load>()) return lane.loaded[access_index(*ld)];
      if (const IndexRef* r = leaf.as<IndexRef>())
        return em_.int_as(lane.coords[var_index(r->name)], leaf.type(), false);
      if (const SymRef* sr = leaf.as<SymRef>())
        return em_.int_as(dim_value(Dim::symbol(sr->name)), leaf.type(), true);
      throw UserError(leaf.loc(), "reductions are not supported by the pointwise code generator");
    });
  }

  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  Emitter em_;
  const KernelDef& k_;
  const PointwiseStep& step_;
  PointwiseConfig cfg_;
  std::vector<const TensorDecl*> params_;
  std::vector<std::string> symbols_;
  const std::vector<std::vector<int>> dims_;  // the tile loop's dimensions (Tiling::dims)
  const std::vector<int> dim_of_;             // per step variable, its dimension
  const int rank_, across_, inner_;           // in dimensions
  std::vector<Access> accesses_;
  int64_t smem_bytes_ = 0;
  VariantLayout layout_;

  llvm::Function* fn_ = nullptr;
  llvm::GlobalVariable* smem_ = nullptr;
  std::vector<Value*> ptr_args_, sym_args_;
  Value *tid64_ = nullptr, *bid_ = nullptr, *nblocks_ = nullptr, *ntiles_ = nullptr;
  Value *tiles_a64_ = nullptr, *tiles_i64_ = nullptr, *batch64_ = nullptr;
  std::vector<Value*> extents64_;
  BasicBlock* exit_ = nullptr;
  // Per index type (emit_paths):
  Type* idx_ty_ = nullptr;
  std::vector<Value*> ext_, out_strides_;
  Value *tiles_a_ = nullptr, *tiles_i_ = nullptr, *tid_ = nullptr;
};

}  // namespace

void lower_tiled(llvm::Module& m, const KernelDef& k, const PointwiseStep& step,
                 const PointwiseConfig& cfg, const std::string& entry, VariantLayout* layout) {
  TiledLowering(m, k, step, cfg).run(entry, layout);
}

}  // namespace kiln
