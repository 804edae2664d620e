// Lowering a tiled pointwise step (a transpose, a permutation that moves the contiguous
// index) to LLVM IR. The plan (compiler/plan.h: PointwiseStep::tiling) names the step
// variable A that the tiled loads hold contiguous and the loads read through shared memory;
// I is the step's innermost variable (the output's contiguous index), V = cfg.vec, Ti x To =
// cfg.tile_in x cfg.tile_out, and the other variables are the batch. Algorithm:
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
//     every output with one vector each.
//  5. Barrier: the next tile overwrites shared memory.
// Shared memory holds, per tiled load, a Ti x To tile in its stored type: row a (along A) of
// To elements; chunk c (V elements along I) of row a sits at chunk c ^ ((a / V) % S), S the
// chunks per 128 bytes (at most To / V). In step 2 the threads of a quarter warp write
// rows of consecutive a / V, in step 4 consecutive chunks of one row: both fall in distinct
// banks (no padding, and rows stay 16-byte aligned for vector accesses).
// Bounds. The vector path runs when the extents of A and I are multiples of V (a vector is
// then wholly inside or outside the space, and every row starts aligned); otherwise every
// global access is scalar, shared memory is used as before, and in step 4 a thread's V
// elements of a tile row are To / V apart (element rr + l To / V) rather than adjacent, so
// that each of a warp's scalar stores writes consecutive elements. Measured on an H200
// (bench/results/2026-11-29-h200-odd-transpose): bf16 8191 x 8193 313 -> 132 us, [8, 2047,
// 32, 127] -> [8, 32, 127, 2047] 317 -> 128, f32 4095 x 1001 0.93x, f32 8191 x 8193 level;
// the same for step 2's loads (each of a warp's scalar loads at consecutive elements) was 5%
// slower on f32 and did not help bf16: the loads' V elements of a thread share sectors, which
// L1 serves, while stores go to L2 a request per sector each. A load outside the space reads
// element 0 instead (a select, so the loads stay free of branches), a store outside is
// skipped, and an element outside is never computed. Both barriers are outside every bound
// check, and the tile loop and the path depend only on the block and the extents: every
// thread of a block reaches every barrier. Index arithmetic is 32-bit when the space has at
// most INT32_MAX elements (no offset of any tensor exceeds its elements), else 64-bit.
#include <llvm/IR/IRBuilder.h>
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
        rank_(static_cast<int>(step.vars.size())),
        across_(step.tiling.across),
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

  std::vector<int> vars_of(const Load& ld) const {
    std::vector<int> vars;
    for (const std::string& v : ld.indices) {
      auto it = std::find(step_.vars.begin(), step_.vars.end(), v);
      internal_check(it != step_.vars.end(), "lower_tiled: unknown index variable");
      vars.push_back(static_cast<int>(it - step_.vars.begin()));
    }
    return vars;
  }

  int var_index(const std::string& name) const {
    auto it = std::find(step_.vars.begin(), step_.vars.end(), name);
    internal_check(it != step_.vars.end(), "lower_tiled: unknown index variable");
    return static_cast<int>(it - step_.vars.begin());
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
    for (Access& a : accesses_) {
      if (a.read != Read::tiled) continue;
      a.smem_offset = smem_bytes_;
      smem_bytes_ += (int64_t{cfg_.tile_in} * cfg_.tile_out * size_of(a.stored) + 15) / 16 * 16;
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
    const TiledLoad key{ld.tensor, a.vars, ld.stored};
    const std::vector<TiledLoad>& tiled = step_.tiling.loads;
    if (std::find(tiled.begin(), tiled.end(), key) != tiled.end()) {
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
    for (const Dim& d : step_.space) {
      extents64_.push_back(dim_value(d));
      numel = b_.CreateMul(numel, extents64_.back(), "numel");
    }
    auto tiles = [&](Value* extent, int tile) {
      return b_.CreateUDiv(b_.CreateAdd(extent, b_.getInt64(tile - 1)), b_.getInt64(tile));
    };
    tiles_a64_ = tiles(extents64_[across_], cfg_.tile_in);
    tiles_i64_ = tiles(extents64_[inner_], cfg_.tile_out);
    ntiles_ = b_.CreateMul(tiles_a64_, tiles_i64_, "tiles");
    for (int v = 0; v < rank_; ++v) {
      if (v != across_ && v != inner_) ntiles_ = b_.CreateMul(ntiles_, extents64_[v], "tiles");
    }

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

  // The vector and scalar tile loops in index type `idx`, chosen by the extents.
  void emit_paths(Type* idx) {
    idx_ty_ = idx;
    ext_.clear();
    for (Value* e : extents64_) ext_.push_back(b_.CreateTrunc(e, idx));
    tiles_a_ = b_.CreateTrunc(tiles_a64_, idx);
    tiles_i_ = b_.CreateTrunc(tiles_i64_, idx);
    tid_ = b_.CreateTrunc(tid64_, idx);
    // Element strides of every tensor along every step variable.
    for (Access& a : accesses_) a.step = strides(a.vars);
    std::vector<int> all(rank_);
    for (int v = 0; v < rank_; ++v) all[v] = v;
    out_strides_ = strides(all);
    if (cfg_.vec == 1) {
      emit_tile_loop(false);
      return;
    }
    BasicBlock* vec = BasicBlock::Create(ctx_, "tiles.vec", fn_);
    BasicBlock* scalar = BasicBlock::Create(ctx_, "tiles.scalar", fn_);
    Value* ok =
        b_.CreateAnd(b_.CreateICmpEQ(b_.CreateURem(ext_[across_], idx_of(cfg_.vec)), idx_of(0)),
                     b_.CreateICmpEQ(b_.CreateURem(ext_[inner_], idx_of(cfg_.vec)), idx_of(0)));
    b_.CreateCondBr(ok, vec, scalar);
    b_.SetInsertPoint(vec);
    emit_tile_loop(true);
    b_.SetInsertPoint(scalar);
    emit_tile_loop(false);
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

  // The tile loop: steps 1-5 of the file comment, ending in a branch to exit_.
  void emit_tile_loop(bool vec) {
    const int V = cfg_.vec, Ti = cfg_.tile_in, To = cfg_.tile_out;
    BasicBlock* pre = b_.GetInsertBlock();
    BasicBlock* header = BasicBlock::Create(ctx_, vec ? "tile.vec" : "tile.scalar", fn_);
    BasicBlock* body = BasicBlock::Create(ctx_, "tile.body", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* t64 = b_.CreatePHI(b_.getInt64Ty(), 2, "tile");
    t64->addIncoming(bid_, pre);
    b_.CreateCondBr(b_.CreateICmpULT(t64, ntiles_), body, exit_);
    b_.SetInsertPoint(body);

    // 1. The tile's coordinates: batch variables, then the first a and i of the tile.
    Value* t = b_.CreateTrunc(t64, idx_ty_);
    std::vector<Value*> coords(rank_, nullptr);
    Value* i0 = b_.CreateMul(b_.CreateURem(t, tiles_i_), idx_of(To), "i0");
    Value* rest = b_.CreateUDiv(t, tiles_i_);
    Value* a0 = b_.CreateMul(b_.CreateURem(rest, tiles_a_), idx_of(Ti), "a0");
    rest = b_.CreateUDiv(rest, tiles_a_);
    std::vector<int> batch;
    for (int v = 0; v < rank_; ++v) {
      if (v != across_ && v != inner_) batch.push_back(v);
    }
    for (int j = static_cast<int>(batch.size()) - 1; j >= 0; --j) {
      const int v = batch[j];
      if (j == 0) {
        coords[v] = rest;
      } else {
        coords[v] = b_.CreateURem(rest, ext_[v]);
        rest = b_.CreateUDiv(rest, ext_[v]);
      }
    }
    std::vector<Value*> base;  // per access: the offset of the batch point
    for (const Access& a : accesses_) base.push_back(offset(a.step, coords, batch, nullptr));
    Value* out_base = offset(out_strides_, coords, batch, nullptr);

    // 2. Load the tiled loads' blocks, then write them transposed into shared memory.
    const int per_thread = static_cast<int>(blocks_per_tile() / cfg_.block);
    const int qs = Ti / V;  // blocks along A
    struct Block {
      Value *q, *r;
      std::vector<std::vector<std::vector<Value*>>> raw;  // per access, [u][v]: row i + u, a + v
    };
    std::vector<Block> blocks;
    for (int k = 0; k < per_thread; ++k) {
      Block blk;
      Value* m = b_.CreateAdd(tid_, idx_of(int64_t{k} * cfg_.block));
      blk.q = b_.CreateURem(m, idx_of(qs));
      blk.r = b_.CreateUDiv(m, idx_of(qs));
      Value* a = b_.CreateAdd(a0, b_.CreateMul(blk.q, idx_of(V)));
      blk.raw.resize(accesses_.size());
      for (size_t ai = 0; ai < accesses_.size(); ++ai) {
        const Access& acc = accesses_[ai];
        if (acc.read != Read::tiled) continue;
        for (int u = 0; u < V; ++u) {
          Value* i = b_.CreateAdd(i0, b_.CreateAdd(b_.CreateMul(blk.r, idx_of(V)), idx_of(u)));
          Value* in_i = b_.CreateICmpULT(i, ext_[inner_]);
          // The tiled load's stride along A is 1: A is its last index.
          Value* row = b_.CreateAdd(base[ai], b_.CreateMul(i, acc.step[inner_]));
          if (vec) {  // the vector is wholly inside or outside the space
            Value* ok = b_.CreateAnd(in_i, b_.CreateICmpULT(a, ext_[across_]));
            Value* off = b_.CreateSelect(ok, b_.CreateAdd(row, a), idx_of(0));
            blk.raw[ai].push_back(load_raw(acc, off, V));
            continue;
          }
          // Scalar: each element goes to its place in shared memory as soon as it is loaded
          // (a V x V block of scalars held at once would double the kernel's registers).
          for (int v = 0; v < V; ++v) {
            Value* av = b_.CreateAdd(a, idx_of(v));
            Value* ok = b_.CreateAnd(in_i, b_.CreateICmpULT(av, ext_[across_]));
            Value* off = b_.CreateSelect(ok, b_.CreateAdd(row, av), idx_of(0));
            Value* elem = b_.CreateAdd(tile_chunk(acc, blk.q, blk.r, v), idx_of(u));
            store_shared(acc, elem, load_raw(acc, off, 1));
          }
        }
      }
      blocks.push_back(std::move(blk));
    }
    for (const Block& blk : blocks) {
      for (size_t ai = 0; ai < accesses_.size(); ++ai) {
        if (blk.raw[ai].empty()) continue;  // not tiled, or written already (scalar)
        for (int v = 0; v < V; ++v) {
          std::vector<Value*> column;
          for (int u = 0; u < V; ++u) column.push_back(blk.raw[ai][u][v]);
          store_shared(accesses_[ai], tile_chunk(accesses_[ai], blk.q, blk.r, v), column);
        }
      }
    }
    barrier();

    // 4. Each thread's chunks: read, load, compute, store.
    const int chunks = static_cast<int>(int64_t{Ti} * (To / V) / cfg_.block);
    // The vector path's lane l of chunk rr of a tile row is element rr V + l of the row; the
    // scalar path's is element rr + l To / V, so that each of a warp's V scalar stores writes
    // consecutive elements (To / V threads take a row).
    const int64_t lane_step = vec ? 1 : To / V;
    struct Chunk {
      Value *a, *i, *ok;        // ok: lane 0 is inside the space
      std::vector<Value*> oks;  // scalar path: per lane
      Value* out = nullptr;     // the output offset of lane 0
      std::vector<Lane> lanes;
    };
    std::vector<Chunk> work;
    for (int k = 0; k < chunks; ++k) {
      Chunk c;
      Value* m = b_.CreateAdd(tid_, idx_of(int64_t{k} * cfg_.block));
      Value* rr = b_.CreateURem(m, idx_of(To / V));
      Value* da = b_.CreateUDiv(m, idx_of(To / V));
      c.a = b_.CreateAdd(a0, da);
      c.i = b_.CreateAdd(i0, vec ? b_.CreateMul(rr, idx_of(V)) : rr);
      Value* in_a = b_.CreateICmpULT(c.a, ext_[across_]);
      c.ok = b_.CreateAnd(in_a, b_.CreateICmpULT(c.i, ext_[inner_]));
      c.lanes.resize(V);
      for (int l = 0; l < V; ++l) {
        Lane& lane = c.lanes[l];
        lane.coords = coords;
        lane.coords[across_] = c.a;
        lane.coords[inner_] = l == 0 ? c.i : b_.CreateAdd(c.i, idx_of(l * lane_step));
        lane.loaded.assign(accesses_.size(), nullptr);
        c.oks.push_back(
            l == 0 ? c.ok
                   : b_.CreateAnd(in_a, b_.CreateICmpULT(lane.coords[inner_], ext_[inner_])));
      }
      c.out = offset(out_strides_, c.lanes[0].coords, {across_, inner_}, out_base);
      for (size_t ai = 0; ai < accesses_.size(); ++ai) {
        const Access& acc = accesses_[ai];
        std::vector<Value*> vals;
        switch (acc.read) {
          case Read::tiled: {
            // Row da = q V + v: what tile_chunk wrote for v, swizzled by the row's own q.
            Value* key = b_.CreateUDiv(da, idx_of(V));
            if (!vec) {
              for (int l = 0; l < V; ++l) {
                Value* e = b_.CreateAdd(rr, idx_of(l * lane_step));
                vals.push_back(
                    load_shared_element(acc, tile_place(acc, da, key, b_.CreateUDiv(e, idx_of(V)),
                                                        b_.CreateURem(e, idx_of(V)))));
              }
              break;
            }
            vals = load_shared(acc, tile_place(acc, da, key, rr));
            break;
          }
          case Read::uniform: {
            Value* off = offset(acc.step, c.lanes[0].coords, {across_, inner_}, base[ai]);
            Value* v = load_raw(acc, b_.CreateSelect(c.ok, off, idx_of(0)), 1)[0];
            vals.assign(V, v);
            break;
          }
          case Read::contiguous:
          case Read::row:
            if (vec) {
              Value* off = acc.read == Read::contiguous
                               ? c.out
                               : offset(acc.step, c.lanes[0].coords, {across_, inner_}, base[ai]);
              vals = load_raw(acc, b_.CreateSelect(c.ok, off, idx_of(0)), V);
              break;
            }
            [[fallthrough]];
          case Read::gather:
            for (int l = 0; l < V; ++l) {
              Value* off = offset(acc.step, c.lanes[l].coords, {across_, inner_}, base[ai]);
              Value* ok = vec ? c.ok : c.oks[l];
              vals.push_back(load_raw(acc, b_.CreateSelect(ok, off, idx_of(0)), 1)[0]);
            }
            break;
        }
        for (int l = 0; l < V; ++l) c.lanes[l].loaded[ai] = em_.widen(vals[l], acc.stored);
      }
      work.push_back(std::move(c));
    }
    for (Chunk& c : work) {
      if (vec) {  // the chunk is wholly inside or outside
        guarded(c.ok, [&] {
          for (const StepStore& s : step_.stores) {
            std::vector<Value*> vals;
            for (Lane& lane : c.lanes) vals.push_back(eval(s.value, lane));
            em_.store(em_.element_ptr(ptr_args_[s.param], params_[s.param]->dtype, c.out),
                      params_[s.param]->dtype, vals);
          }
        });
        continue;
      }
      for (int l = 0; l < V; ++l) {
        guarded(c.oks[l], [&] {
          Value* off = l == 0 ? c.out : b_.CreateAdd(c.out, idx_of(l * lane_step));
          for (const StepStore& s : step_.stores) {
            em_.store(em_.element_ptr(ptr_args_[s.param], params_[s.param]->dtype, off),
                      params_[s.param]->dtype, {eval(s.value, c.lanes[l])});
          }
        });
      }
    }
    // 5. Every thread is done reading the tile before the next one is written.
    barrier();
    Value* next = b_.CreateAdd(t64, nblocks_, "tile.next");
    t64->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(header);
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

  // Runs `body` where `cond` holds; continues after it.
  template <class F>
  void guarded(Value* cond, F&& body) {
    BasicBlock* then = BasicBlock::Create(ctx_, "store", fn_);
    BasicBlock* done = BasicBlock::Create(ctx_, "store.done", fn_);
    b_.CreateCondBr(cond, then, done);
    b_.SetInsertPoint(then);
    body();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
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

  std::vector<Value*> load_shared(const Access& a, Value* elem) {
    if (cfg_.vec == 1) return {load_shared_element(a, elem)};
    Value* ptr = shared_ptr(a, elem);
    Type* st = em_.storage_type(a.stored);
    Value* v = b_.CreateAlignedLoad(llvm::FixedVectorType::get(st, cfg_.vec), ptr, chunk_align(a));
    std::vector<Value*> out;
    for (int l = 0; l < cfg_.vec; ++l) out.push_back(b_.CreateExtractElement(v, l));
    return out;
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
  const int rank_, across_, inner_;
  std::vector<Access> accesses_;
  int64_t smem_bytes_ = 0;
  VariantLayout layout_;

  llvm::Function* fn_ = nullptr;
  llvm::GlobalVariable* smem_ = nullptr;
  std::vector<Value*> ptr_args_, sym_args_;
  Value *tid64_ = nullptr, *bid_ = nullptr, *nblocks_ = nullptr, *ntiles_ = nullptr;
  Value *tiles_a64_ = nullptr, *tiles_i64_ = nullptr;
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
