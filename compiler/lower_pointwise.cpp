// Lowering a pointwise step to LLVM IR.
//
// The kernel walks the step's flattened iteration space [0, numel) with a grid-stride loop in
// chunks of block * vec * unroll elements. Thread t of a block owns, in each chunk, the
// `unroll` vectors starting at base + u * block * vec + t * vec, so a warp touches contiguous
// memory for every u. Algorithm:
//  1. Collect the distinct loads of all stored expressions. A load whose indices are the
//     step's variables in order is contiguous (its offset is the flat index) and is read with
//     <vec x T> vector loads; any other (broadcast, transposed) is gathered per element at an
//     offset computed from the element's coordinates.
//  2. numel <= INT32_MAX selects a copy of the loop whose coordinate arithmetic is 32-bit;
//     otherwise it runs in 64-bit. In the 32-bit copy of a step of three or more variables
//     (two or more divisions per coordinate set) the coordinates divide by the extents
//     through divisors made once per thread (Emitter::divisor: a multiply-high each) instead
//     of the emulated integer division; 2-D steps and the 64-bit copy divide. Measured on an
//     H200 (bench/results/2026-11-26-h200-epilogue-stores): [B, S, H, D] -> [B, H, S, D] 84.9
//     -> 74.6 us with divisors; a 2-D bias + tanh-GELU 129.7 -> 133.9 us (the divisor's chain
//     of dependent instructions before the first load), bias + erf-GELU 211.9 -> 205.9.
//     Every tensor a step reads is indexed by a subset of its variables, so no offset exceeds
//     numel.
//  3. A chunk that lies wholly inside [0, numel) issues every load of every vector first,
//     then computes and stores (several loads in flight per thread). The one chunk that
//     crosses numel runs a scalar loop with a bounds check per element.
//  4. When the innermost extent is a multiple of vec (checked at run time), a vector never
//     crosses a row: coordinates are computed once per vector, a load whose last index is the
//     innermost variable (a broadcast row such as `b[j]`) is a vector load too, and a load
//     that does not use the innermost variable is one scalar load shared by the lanes. So
//     is a gather whose last position is the innermost variable and whose other positions do
//     not depend on it (an embedding row, `w[ids[t], d]`): lane 0 computes its address, and
//     the lanes read one vector there. Index variables used as values (rand's counter) take
//     their coordinates from this form too, and a lane's coordinate is lane 0's plus a
//     constant, which lets the lanes share their Philox calls (compiler/emit.cpp).
//     rand(seed, offset)'s own counter, the row-major flat index of the step's variables, is
//     the lane's flat index itself: no coordinates, and a vector of >= 4 lanes starts at a
//     multiple of 4, so its lanes take the words of whole Philox blocks without selects.
//  5. A strided variant (cfg.strided, always scalar) reads each strided input at
//     sum(coord_d * stride_d) in 64 bits, the strides being kernel arguments; other variants
//     read strided inputs as the contiguous tensors the runtime checked them to be.
//  6. Two entries per variant but the strided one (bundle::GeneralForm). Its own entry holds
//     only the 32-bit copy, and of a step with the row-aligned form only that form: the
//     runtime launches it on steps of at most INT32_MAX elements whose innermost extent is a
//     multiple of vec. The general entry (`<entry>_general`) holds the rest: the 32-bit copy's
//     vectors that may cross rows and the whole 64-bit copy, and is correct on any launch.
//     One kernel holding every form took the registers of its costliest path, one that never
//     ran on the shapes it was timed on. Measured on an H200 in one call
//     (bench/results/2026-11-27-h200-pointwise-forms, call 1): an embedding lookup of 128K x
//     4096 bf16 63 -> 32 registers, 583.0 -> 510.8 us; rotary embedding 155 -> 64 registers,
//     136.8 -> 103.7 us; bias + erf-GELU in bf16 212.1 -> 201.0 us; dropout 161.3 -> 162.9.
// Values and math follow compiler/emit.h.
#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <tuple>
#include <unordered_map>

#include "compiler/codegen.h"
#include "compiler/emit.h"

namespace kiln {

// See codegen.h (step 4).
bool is_flat_index(const PointwiseStep& step, const Expr& e) {
  auto is_var = [&](const Expr& x, size_t d) {
    const IndexRef* r = x.as<IndexRef>();
    return r && r->name == step.vars[d];
  };
  auto is_extent = [&](const Expr& x, const Dim& d) {
    if (const Const* c = x.as<Const>()) return d.is_fixed() && c->value == double(d.value());
    const SymRef* r = x.as<SymRef>();
    return r && !d.is_fixed() && r->name == d.name();
  };
  auto match = [&](auto&& self, const Expr& x, size_t d) -> bool {
    if (d == 0) {
      const Cast* c = x.as<Cast>();
      return c && c->to == DType::i64 && is_var(wrap(c->a), 0);
    }
    const Binary* add = x.as<Binary>();
    if (!add || add->op != BinaryOp::add || !is_var(wrap(add->b), d)) return false;
    const Binary* mul = wrap(add->a).as<Binary>();
    return mul && mul->op == BinaryOp::mul && is_extent(wrap(mul->b), step.space[d]) &&
           self(self, wrap(mul->a), d - 1);
  };
  return !step.vars.empty() && match(match, e, step.vars.size() - 1);
}

namespace {

using llvm::BasicBlock;
using llvm::Type;
using llvm::Value;

// A distinct tensor read: tensor parameter, the step variables it is indexed with.
struct Access {
  int param = 0;
  std::vector<int> vars;  // positions in the step's variable list, one per dimension
  DType stored = DType::f32;
  bool contiguous = false;  // indexed by all the step's variables in order: offset = flat
  // Within a vector that does not cross a row (step 4 above):
  bool row_vector = false;  // last index is the innermost variable: lanes are consecutive
  bool uniform = false;     // does not use the innermost variable: the same for every lane
  bool strided = false;     // a strided input read through its strides (step 5)
};

// The loads, coordinates and memoized values of one element being computed.
struct Lane {
  std::vector<Value*> loaded;  // per access, widened to its compute type (null if unused)
  std::vector<Value*> coords;  // per step variable, in the index type (lazily filled)
  Value* flat = nullptr;       // flat index in the index type
  std::unordered_map<const ExprNode*, Value*> memo;
};

// Which launches a function serves (step 6).
enum class Form {
  whole,    // every launch: a strided variant's one entry
  fast,     // 32-bit indices; only the row-aligned form when the step has one
  general,  // every launch, the fast entry's launches in its slower forms
};

class PointwiseLowering {
 public:
  PointwiseLowering(llvm::Module& m, const KernelDef& k, const PointwiseStep& step,
                    const PointwiseConfig& cfg)
      : ctx_(m.getContext()),
        b_(ctx_),
        em_(m, b_),
        k_(k),
        step_(step),
        cfg_(cfg),
        params_(k.params()),
        symbols_(k.symbols()) {}

  void run(const std::string& entry, VariantLayout* layout) {
    collect_accesses();
    rows_form_ = cfg_.vec > 1 && has_row_aligned_form(step_);
    if (cfg_.strided) {
      build_function(entry, Form::whole);
    } else {
      build_function(entry, Form::fast);
      layout_.general_entry = general_entry_name(entry);
      layout_.row_multiple = rows_form_ ? cfg_.vec : 0;
      build_function(layout_.general_entry, Form::general);
    }
    if (layout) *layout = layout_;
  }

 private:
  // ---- analysis -------------------------------------------------------------------------

  int param_index(const std::string& name) const {
    for (size_t i = 0; i < params_.size(); ++i) {
      if (params_[i]->name == name) return static_cast<int>(i);
    }
    throw InternalError("lower_pointwise: load of unknown tensor " + name);
  }

  int var_index(const std::string& name) const {
    for (size_t i = 0; i < step_.vars.size(); ++i) {
      if (step_.vars[i] == name) return static_cast<int>(i);
    }
    throw InternalError("lower_pointwise: unknown index variable " + name);
  }

  void collect_accesses() {
    std::unordered_map<const ExprNode*, bool> seen;
    auto visit = [&](auto&& self, const Expr& e) -> void {
      if (!seen.emplace(e.ptr().get(), true).second) return;
      if (const Load* ld = e.as<Load>()) access_of(*ld);
      if (const Rand* r = e.as<Rand>(); r && is_flat_index(step_, wrap(r->counter))) {
        flat_counters_.push_back(r->counter.get());
        self(self, wrap(r->seed));
        self(self, wrap(r->offset));
        return;
      }
      if (e.as<Gather>() && row_vector_gather(e)) vector_gathers_.push_back(e);
      for_each_child(e, [&](const Expr& c) { self(self, c); });
    };
    for (const StepStore& s : step_.stores) visit(visit, s.value);

    int narrow = 4;
    for (const Access& a : accesses_) {
      if (a.contiguous) narrow = std::min<int>(narrow, size_of(a.stored));
    }
    if (cfg_.vec > 1) {
      auto align = [&](DType t) { return std::min<int>(16, cfg_.vec * size_of(t)); };
      for (const Access& a : accesses_) {
        if (!a.contiguous && !a.row_vector) continue;
        layout_.align_bytes = std::max(layout_.align_bytes, align(a.stored));
        layout_.aligned_params.push_back(a.param);
      }
      for (const StepStore& s : step_.stores) {
        layout_.align_bytes = std::max(layout_.align_bytes, align(params_[s.param]->dtype));
        layout_.aligned_params.push_back(s.param);
      }
      for (const Expr& e : vector_gathers_) {
        const Gather& g = *e.as<Gather>();
        layout_.align_bytes = std::max(layout_.align_bytes, align(g.stored));
        layout_.aligned_params.push_back(param_index(g.tensor));
      }
      std::sort(layout_.aligned_params.begin(), layout_.aligned_params.end());
      layout_.aligned_params.erase(
          std::unique(layout_.aligned_params.begin(), layout_.aligned_params.end()),
          layout_.aligned_params.end());
    }
  }

  // A lane at flat index `flat` (the index type) whose rand counters that are flat indices
  // take the value `counter` (i64; null when there are none).
  Lane make_lane(Value* flat, Value* counter) {
    Lane lane;
    lane.flat = flat;
    lane.coords.assign(step_.vars.size(), nullptr);
    lane.loaded.assign(accesses_.size(), nullptr);
    for (const ExprNode* c : flat_counters_) lane.memo[c] = counter;
    return lane;
  }

  // A gather read as one vector per row-aligned vector (step 4): its last position is the
  // innermost variable itself and no other position depends on it. Then the lanes read
  // consecutive elements of one row, at an offset that is a multiple of vec: every earlier
  // dimension's stride is a multiple of the last extent, the innermost extent.
  bool row_vector_gather(const Expr& e) const {
    const Gather& g = *e.as<Gather>();
    const std::string& inner = step_.vars.back();
    const IndexRef* last = g.indices.empty() ? nullptr : wrap(g.indices.back()).as<IndexRef>();
    if (!last || last->name != inner) return false;
    bool depends = false;
    auto visit = [&](auto&& self, const Expr& x) -> void {
      if (const IndexRef* r = x.as<IndexRef>()) depends |= r->name == inner;
      if (const Load* ld = x.as<Load>()) {
        depends |= std::find(ld->indices.begin(), ld->indices.end(), inner) != ld->indices.end();
      }
      for_each_child(x, [&](const Expr& c) { self(self, c); });
    };
    for (size_t d = 0; d + 1 < g.indices.size(); ++d) visit(visit, wrap(g.indices[d]));
    return !depends;
  }

  int access_of(const Load& ld) {
    Access a;
    a.param = param_index(ld.tensor);
    a.stored = ld.stored;
    for (const auto& v : ld.indices) a.vars.push_back(var_index(v));
    a.contiguous = a.vars.size() == step_.vars.size();
    for (size_t d = 0; a.contiguous && d < a.vars.size(); ++d) {
      a.contiguous = a.vars[d] == static_cast<int>(d);
    }
    const int inner = static_cast<int>(step_.vars.size()) - 1;
    a.row_vector = !a.contiguous && !a.vars.empty() && a.vars.back() == inner;
    a.uniform = std::find(a.vars.begin(), a.vars.end(), inner) == a.vars.end();
    if (cfg_.strided && params_[a.param]->strided) {
      internal_check(cfg_.vec == 1, "lower_pointwise: a strided variant is scalar");
      a.strided = true;
      a.contiguous = a.row_vector = false;
    }
    for (size_t i = 0; i < accesses_.size(); ++i) {
      if (accesses_[i].param == a.param && accesses_[i].vars == a.vars) return i;
    }
    accesses_.push_back(a);
    return accesses_.size() - 1;
  }

  int access_index(const Load& ld) const {
    int p = param_index(ld.tensor);
    std::vector<int> vars;
    for (const auto& v : ld.indices) vars.push_back(var_index(v));
    for (size_t i = 0; i < accesses_.size(); ++i) {
      if (accesses_[i].param == p && accesses_[i].vars == vars) return i;
    }
    throw InternalError("lower_pointwise: access not collected");
  }

  // ---- types and the function -------------------------------------------------------------

  Value* widen(Value* v, DType t) { return em_.widen(v, t); }
  Value* sreg(llvm::Intrinsic::ID id) { return em_.sreg(id); }

  Value* dim_value(const Dim& d) {
    if (d.is_fixed()) return b_.getInt64(d.value());
    auto it = std::find(symbols_.begin(), symbols_.end(), d.name());
    internal_check(it != symbols_.end(), "lower_pointwise: unknown symbol");
    return sym_args_[it - symbols_.begin()];
  }

  void build_function(const std::string& entry, Form form) {
    form_ = form;
    ptr_args_.clear();
    sym_args_.clear();
    extents64_.clear();
    fn_ = em_.declare_kernel(k_, entry, cfg_.block);
    em_.set_read_strides(cfg_.strided);
    em_.set_fast_functions(step_.fast_functions);
    for (size_t i = 0; i < params_.size(); ++i) ptr_args_.push_back(fn_->getArg(i));
    for (size_t i = 0; i < symbols_.size(); ++i)
      sym_args_.push_back(fn_->getArg(params_.size() + i));

    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn_));
    tid_ = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
    Value* bid = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    Value* nblocks = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
    numel_ = b_.getInt64(1);
    for (const Dim& d : step_.space) {
      extents64_.push_back(dim_value(d));
      numel_ = b_.CreateMul(numel_, extents64_.back(), "numel");
    }
    chunk_ = b_.getInt64(cfg_.elements_per_block());
    first_ = b_.CreateMul(bid, chunk_, "first");
    stride_ = b_.CreateMul(nblocks, chunk_, "stride");

    exit_ = BasicBlock::Create(ctx_, "exit", fn_);
    if (form == Form::fast) {  // the runtime launches it on at most INT32_MAX elements
      emit_loop(b_.getInt32Ty());
    } else {
      BasicBlock* loop32 = BasicBlock::Create(ctx_, "idx32", fn_);
      BasicBlock* loop64 = BasicBlock::Create(ctx_, "idx64", fn_);
      b_.CreateCondBr(b_.CreateICmpULE(numel_, b_.getInt64(INT32_MAX)), loop32, loop64);
      b_.SetInsertPoint(loop32);
      emit_loop(b_.getInt32Ty());
      b_.SetInsertPoint(loop64);
      emit_loop(b_.getInt64Ty());
    }
    b_.SetInsertPoint(exit_);
    b_.CreateRetVoid();
  }

  // ---- the loop ---------------------------------------------------------------------------

  // Emits the grid-stride loop with coordinate arithmetic in `idx` (i32 or i64) at the
  // current insertion point, ending in a branch to exit_.
  void emit_loop(Type* idx) {
    idx_ty_ = idx;
    extents_.clear();
    for (Value* e : extents64_) extents_.push_back(b_.CreateTrunc(e, idx));
    // Once per thread, before the loop (the outermost extent divides nothing).
    divisors_.clear();
    for (size_t d = 0; d < extents_.size(); ++d) {
      const bool used = d > 0 && idx->isIntegerTy(32) && extents_.size() >= 3;
      divisors_.push_back(used ? em_.divisor(extents_[d]) : Divisor{});
    }
    BasicBlock* pre = b_.GetInsertBlock();
    BasicBlock* header = BasicBlock::Create(ctx_, "chunk", fn_);
    BasicBlock* full = BasicBlock::Create(ctx_, "full", fn_);
    BasicBlock* tail = BasicBlock::Create(ctx_, "tail", fn_);
    BasicBlock* latch = BasicBlock::Create(ctx_, "next", fn_);
    b_.CreateBr(header);

    b_.SetInsertPoint(header);
    llvm::PHINode* base = b_.CreatePHI(b_.getInt64Ty(), 2, "base");
    base->addIncoming(first_, pre);
    BasicBlock* body = BasicBlock::Create(ctx_, "body", fn_);
    b_.CreateCondBr(b_.CreateICmpULT(base, numel_), body, exit_);
    b_.SetInsertPoint(body);
    b_.CreateCondBr(b_.CreateICmpULE(b_.CreateAdd(base, chunk_), numel_), full, tail);

    b_.SetInsertPoint(full);
    emit_full_chunk(base);
    b_.CreateBr(latch);

    b_.SetInsertPoint(tail);
    emit_tail_chunk(base);
    b_.CreateBr(latch);

    b_.SetInsertPoint(latch);
    Value* next = b_.CreateAdd(base, stride_, "base.next");
    base->addIncoming(next, latch);
    b_.CreateBr(header);
  }

  // First element of vector u of this thread in the chunk at `base` (i64).
  Value* vector_start(Value* base, int u) {
    Value* off = b_.CreateAdd(b_.getInt64(int64_t{u} * cfg_.block * cfg_.vec),
                              b_.CreateMul(tid_, b_.getInt64(cfg_.vec)));
    return b_.CreateAdd(base, off);
  }

  // A chunk wholly inside [0, numel). With vectors and a load that is neither contiguous nor
  // a scalar, it branches on `innermost extent % vec == 0` to the row-aligned form (step 4).
  void emit_full_chunk(Value* base) {
    if (!rows_form_) {
      emit_chunk_body(base, false, 0, cfg_.unroll);
      return;
    }
    // The fast entry runs only on rows a multiple of vec; the general entry's 32-bit copy
    // only on the others (the runtime's choice, bundle::GeneralForm).
    if (form_ == Form::fast) {
      emit_chunk_body(base, true, 0, cfg_.unroll);
      return;
    }
    if (form_ == Form::general && idx_ty_->isIntegerTy(32)) {
      emit_general_vectors(base);
      return;
    }
    BasicBlock* aligned = BasicBlock::Create(ctx_, "full.rows", fn_);
    BasicBlock* general = BasicBlock::Create(ctx_, "full.any", fn_);
    BasicBlock* done = BasicBlock::Create(ctx_, "full.done", fn_);
    Value* rem = b_.CreateURem(extents_.back(), idx(cfg_.vec));
    b_.CreateCondBr(b_.CreateICmpEQ(rem, idx(0)), aligned, general);
    b_.SetInsertPoint(aligned);
    emit_chunk_body(base, true, 0, cfg_.unroll);
    b_.CreateBr(done);
    b_.SetInsertPoint(general);
    emit_general_vectors(base);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  // The full chunk's vectors when they may cross rows, one vector at a time: its lanes' loads
  // are per lane here, and all of the chunk's in flight at once would hold enough registers to
  // cost the 64-bit row-aligned form beside it occupancy (a kernel's register count is its
  // costliest path's).
  void emit_general_vectors(Value* base) {
    for (int u = 0; u < cfg_.unroll; ++u) emit_chunk_body(base, false, u, u + 1);
  }

  // Vectors u0 .. u1 - 1 of the chunk at `base`.
  void emit_chunk_body(Value* base, bool rows, int u0, int u1) {
    const int V = cfg_.vec, U = cfg_.unroll;
    const int inner = static_cast<int>(step_.vars.size()) - 1;
    std::vector<std::vector<Lane>> lanes(U, std::vector<Lane>(V));
    std::vector<Value*> starts(U, nullptr);
    for (int u = u0; u < u1; ++u) {
      starts[u] = b_.CreateTrunc(vector_start(base, u), idx_ty_);
      // The vector starts at a multiple of vec; the mask tells the optimizer, which then folds
      // each lane's choice of Philox word (emit.cpp's philox_uniform) to a constant.
      Value* counter = nullptr;
      if (!flat_counters_.empty()) {
        counter = b_.CreateZExt(starts[u], b_.getInt64Ty());
        if (V >= 4) counter = b_.CreateAnd(counter, b_.getInt64(~int64_t{3}));
      }
      for (int l = 0; l < V; ++l) {
        // Inside [0, numel): no wrap (emit.cpp's philox_uniform relies on the flags).
        lanes[u][l] = make_lane(
            l == 0 ? starts[u] : b_.CreateAdd(starts[u], idx(l), "", true, true),
            l == 0 || !counter ? counter : b_.CreateAdd(counter, b_.getInt64(l), "", true, true));
      }
      if (!rows) continue;
      // The vector lies in one row: lane l differs from lane 0 only in the innermost
      // coordinate, by l.
      Lane& first = lanes[u][0];
      for (int v = 0; v <= inner; ++v) coord(first, v);
      for (int l = 1; l < V; ++l) {
        lanes[u][l].coords = first.coords;
        lanes[u][l].coords[inner] = b_.CreateAdd(first.coords[inner], idx(l), "", true, true);
      }
    }
    // 1. every load of every vector
    for (size_t a = 0; a < accesses_.size(); ++a) {
      const Access& acc = accesses_[a];
      for (int u = u0; u < u1; ++u) {
        std::vector<Lane>& ls = lanes[u];
        if (V > 1 && (acc.contiguous || (rows && acc.row_vector))) {
          std::vector<Value*> elems = load_vector(acc, offset_of(acc, ls[0]));
          for (int l = 0; l < V; ++l) ls[l].loaded[a] = elems[l];
        } else if (rows && acc.uniform) {
          Value* v = load_scalar(acc, ls[0]);
          for (int l = 0; l < V; ++l) ls[l].loaded[a] = v;
        } else {
          for (int l = 0; l < V; ++l) ls[l].loaded[a] = load_scalar(acc, ls[l]);
        }
      }
    }
    // Gathers of whole vectors (rows only): lane 0's address, one vector, a lane each.
    for (int u = u0; rows && V > 1 && u < u1; ++u) {
      for (const Expr& e : vector_gathers_) {
        const Gather& g = *e.as<Gather>();
        Value* v = em_.load_vector(em_.gather_pointer(e, lanes[u][0].memo, leaf_fn(lanes[u][0])),
                                   g.stored, V);
        for (int l = 0; l < V; ++l)
          lanes[u][l].memo[e.ptr().get()] = em_.widen_lane(v, l, g.stored);
      }
    }
    // 2. compute and store
    for (const StepStore& s : step_.stores) {
      for (int u = u0; u < u1; ++u) {
        std::vector<Value*> vals;
        for (int l = 0; l < V; ++l) vals.push_back(eval(s.value, lanes[u][l]));
        store_vector(s.param, starts[u], vals);
      }
    }
  }

  void emit_tail_chunk(Value* base) {
    const int V = cfg_.vec, U = cfg_.unroll;
    BasicBlock* pre = b_.GetInsertBlock();
    BasicBlock* loop = BasicBlock::Create(ctx_, "tail.elem", fn_);
    BasicBlock* work = BasicBlock::Create(ctx_, "tail.work", fn_);
    BasicBlock* next = BasicBlock::Create(ctx_, "tail.next", fn_);
    BasicBlock* done = BasicBlock::Create(ctx_, "tail.done", fn_);
    b_.CreateBr(loop);

    b_.SetInsertPoint(loop);
    llvm::PHINode* k = b_.CreatePHI(b_.getInt64Ty(), 2, "k");
    k->addIncoming(b_.getInt64(0), pre);
    Value* u = b_.CreateUDiv(k, b_.getInt64(V));
    Value* l = b_.CreateURem(k, b_.getInt64(V));
    Value* e =
        b_.CreateAdd(b_.CreateAdd(base, b_.CreateMul(u, b_.getInt64(int64_t{cfg_.block} * V))),
                     b_.CreateAdd(b_.CreateMul(tid_, b_.getInt64(V)), l));
    b_.CreateCondBr(b_.CreateICmpULT(e, numel_), work, next);

    b_.SetInsertPoint(work);
    Lane lane = make_lane(b_.CreateTrunc(e, idx_ty_), e);
    for (size_t a = 0; a < accesses_.size(); ++a) lane.loaded[a] = load_scalar(accesses_[a], lane);
    for (const StepStore& s : step_.stores) {
      em_.store(element_ptr(s.param, lane.flat), params_[s.param]->dtype, {eval(s.value, lane)});
    }
    b_.CreateBr(next);

    b_.SetInsertPoint(next);
    Value* k1 = b_.CreateAdd(k, b_.getInt64(1));
    k->addIncoming(k1, next);
    b_.CreateCondBr(b_.CreateICmpULT(k1, b_.getInt64(int64_t{U} * V)), loop, done);
    b_.SetInsertPoint(done);
  }

  // ---- memory -----------------------------------------------------------------------------

  Value* idx(int64_t v) { return llvm::ConstantInt::get(idx_ty_, v); }

  Value* element_ptr(int param, Value* offset) {
    return em_.element_ptr(ptr_args_[param], params_[param]->dtype, offset);
  }

  // Coordinate of step variable v for the lane's flat index. The coordinates are peeled off
  // the flat index from the innermost outwards, one division by an extent each (the
  // optimizer drops those no access reads).
  Value* coord(Lane& lane, int v) {
    if (lane.coords[v]) return lane.coords[v];
    Value* q = lane.flat;
    for (int d = static_cast<int>(step_.vars.size()) - 1; d > 0; --d) {
      if (divisors_[static_cast<size_t>(d)].d) {
        std::tie(q, lane.coords[d]) = em_.divmod(q, divisors_[static_cast<size_t>(d)]);
      } else {
        // 2-D steps and the 64-bit copy divide as the hardware does (step 2; in 64 bits
        // Emitter::divmod's double-precision estimate and corrections for every lane of a
        // vector took the 4-D permutation's kernel, heads_first with 8 lanes of bf16, from 96
        // to 188 registers, this 72).
        Value* quotient = b_.CreateUDiv(q, extents_[d]);
        lane.coords[d] = b_.CreateSub(q, b_.CreateMul(quotient, extents_[d]));
        q = quotient;
      }
    }
    lane.coords[0] = q;
    return lane.coords[v];
  }

  // Element offset of access `a` for the lane.
  Value* offset_of(const Access& a, Lane& lane) {
    if (a.contiguous) return lane.flat;
    if (a.strided) {
      std::vector<Value*> coords;
      for (int v : a.vars) coords.push_back(coord(lane, v));
      Value* off = em_.strided_offset(params_[a.param]->name, coords);
      internal_check(off != nullptr, "lower_pointwise: a strided input without strides");
      return off;
    }
    Value* off = nullptr;
    {
      // Row-major offset: sum over dims of coord * (product of the later dims' extents).
      Value* stride = nullptr;
      for (int d = static_cast<int>(a.vars.size()) - 1; d >= 0; --d) {
        Value* c = coord(lane, a.vars[d]);
        Value* term = stride ? b_.CreateMul(c, stride) : c;
        off = off ? b_.CreateAdd(off, term) : term;
        stride = stride ? b_.CreateMul(stride, extents_[a.vars[d]]) : extents_[a.vars[d]];
      }
      if (!off) off = idx(0);  // rank-0 tensor
    }
    return off;
  }

  Value* load_scalar(const Access& a, Lane& lane) {
    return em_.load(em_.element_ptr(ptr_args_[a.param], a.stored, offset_of(a, lane)), a.stored);
  }

  // `vec` consecutive elements of `a` from element offset `start` (a multiple of vec).
  std::vector<Value*> load_vector(const Access& a, Value* start) {
    Value* v =
        em_.load_vector(em_.element_ptr(ptr_args_[a.param], a.stored, start), a.stored, cfg_.vec);
    std::vector<Value*> out;
    for (int l = 0; l < cfg_.vec; ++l) out.push_back(em_.widen_lane(v, l, a.stored));
    return out;
  }

  void store_vector(int param, Value* start, const std::vector<Value*>& vals) {
    em_.store(element_ptr(param, start), params_[param]->dtype, vals);
  }

  // ---- expressions ------------------------------------------------------------------------

  LeafFn leaf_fn(Lane& lane) {
    return [this, &lane](const Expr& leaf) -> Value* {
      if (const Load* ld = leaf.as<Load>()) return lane.loaded[access_index(*ld)];
      if (const IndexRef* r = leaf.as<IndexRef>())
        return em_.int_as(coord(lane, var_index(r->name)), leaf.type(), false);
      if (const SymRef* sr = leaf.as<SymRef>())
        return em_.int_as(dim_value(Dim::symbol(sr->name)), leaf.type(), true);
      throw UserError(leaf.loc(), "reductions are not supported by the pointwise code generator");
    };
  }

  Value* eval(const Expr& e, Lane& lane) { return em_.eval(e, lane.memo, leaf_fn(lane)); }

  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  Emitter em_;
  const KernelDef& k_;
  const PointwiseStep& step_;
  PointwiseConfig cfg_;
  std::vector<const TensorDecl*> params_;
  std::vector<std::string> symbols_;
  std::vector<Access> accesses_;
  std::vector<Expr> vector_gathers_;            // read as vectors in row-aligned vectors (step 4)
  std::vector<const ExprNode*> flat_counters_;  // rand counters that are the flat index
  VariantLayout layout_;

  // Whether full chunks take the row-aligned form (step 4) when the innermost extent is a
  // multiple of vec: has_row_aligned_form, once per variant.
  bool rows_form_ = false;
  Form form_ = Form::whole;
  llvm::Function* fn_ = nullptr;
  std::vector<Value*> ptr_args_, sym_args_;
  Value *tid_ = nullptr, *numel_ = nullptr, *chunk_ = nullptr, *first_ = nullptr,
        *stride_ = nullptr;
  std::vector<Value*> extents64_, extents_;
  std::vector<Divisor> divisors_;  // by the extents_, in the loop's index type
  Type* idx_ty_ = nullptr;
  BasicBlock* exit_ = nullptr;
};

}  // namespace

std::string general_entry_name(const std::string& entry) {
  return entry + "_general";
}

bool has_row_aligned_form(const PointwiseStep& step) {
  if (step.vars.size() < 2) return false;
  bool coords = false;
  std::unordered_map<const ExprNode*, bool> seen;
  auto visit = [&](auto&& self, const Expr& e) -> void {
    if (coords || !seen.emplace(e.ptr().get(), true).second) return;
    if (const Load* ld = e.as<Load>()) coords = !ld->indices.empty() && ld->indices != step.vars;
    if (e.as<IndexRef>() || e.as<Gather>()) coords = true;
    if (const Rand* r = e.as<Rand>(); r && is_flat_index(step, wrap(r->counter))) {
      self(self, wrap(r->seed));  // its counter is the flat index: no coordinates
      self(self, wrap(r->offset));
      return;
    }
    for_each_child(e, [&](const Expr& c) { self(self, c); });
  };
  for (const StepStore& st : step.stores) visit(visit, st.value);
  return coords;
}

int max_vector_width(const KernelDef& k, const PointwiseStep& step) {
  size_t narrow = 4;
  std::vector<const TensorDecl*> params = k.params();
  for (const StepStore& s : step.stores) narrow = std::min(narrow, size_of(params[s.param]->dtype));
  std::unordered_map<const ExprNode*, bool> seen;
  auto visit = [&](auto&& self, const Expr& e) -> void {
    if (!seen.emplace(e.ptr().get(), true).second) return;
    if (const Load* ld = e.as<Load>(); ld && ld->indices == step.vars) {
      narrow = std::min(narrow, size_of(ld->stored));
    }
    for_each_child(e, [&](const Expr& c) { self(self, c); });
  };
  for (const StepStore& s : step.stores) visit(visit, s.value);
  // A tiled load moves vectors along its own contiguous index (lower_tiled.cpp).
  for (const TiledLoad& t : step.tiling.loads) narrow = std::min(narrow, size_of(t.stored));
  return static_cast<int>(16 / narrow);
}

void lower_pointwise(llvm::Module& m, const KernelDef& k, const PointwiseStep& step,
                     const PointwiseConfig& cfg, const std::string& entry, VariantLayout* layout) {
  if (cfg.tiled()) {
    lower_tiled(m, k, step, cfg, entry, layout);
    return;
  }
  PointwiseLowering(m, k, step, cfg).run(entry, layout);
}

}  // namespace kiln
