// Lowering a scan kernel to LLVM IR.
//
// A scan kernel computes `t[.., j, ..] = cumop(body, j)` (inclusive, along one index of its
// left-hand side) and its epilogue: pointwise statements over the same space that read t at
// their own point (compiler/schedule.h). Every statement is first rewritten over canonical
// coordinates (one per position of the left-hand side), with the kernel's pointwise
// temporaries inlined, so that a point's values are one expression DAG over its coordinates;
// a read of t is the scan's value at the point. The scanned extent is L, the other extents
// are the rows.
//
// Row scans (j is the innermost index, the contiguous one of the output):
//  1. `group` threads share a row: a warp (several rows per block) or the whole block.
//  2. The row is walked in chunks of group * vec elements, `items` chunks per step of the
//     loop, whose loads and body values all come first; each thread evaluates the body at
//     `vec` consecutive elements (16-byte vector loads of the reads contiguous in j when L is
//     a multiple of vec, scalar loads otherwise; positions past the row are clamped for the
//     loads and count as the identity).
//  3. The chunk is scanned in three levels: each thread's elements in registers, the threads'
//     totals across the warp with shuffles (Hillis-Steele, log2(32) steps), and the warps'
//     totals through shared memory (every thread folds the totals of the warps before its
//     own, in warp order, from a buffer of two halves that alternate over the block's
//     chunks: one barrier per chunk).
//  4. The value at an element is carry (op) warps before (op) lanes before (op) own elements
//     up to it, where carry is the total of the earlier chunks; the chunk's total joins the
//     carry for the next chunk (f32 sums compensated, as looped reductions are: the carry is
//     a sequential sum over the chunks, and so is a split row's fold of its slices' totals).
//     The epilogue is evaluated and stored at each element.
// Split row scans (few, very long rows) spread a row over S blocks of whole chunks, launched
// twice: phase 0 walks a block's slice without storing and writes its total to the
// workspace; phase 1 folds the totals of the slices before its own, in slice order (every
// block the same way, so the result does not depend on timing), and walks its slice again
// from there, storing. The row is read twice; a single-pass decoupled look-back is not built.
// Outer scans (j is not innermost): a block covers block * vec consecutive columns (the
// flattened indices but j), interleaved so that each warp's loads and stores are contiguous;
// each thread walks down j, `items` steps loaded ahead, carrying one prefix per column.
//
// The order of accumulation therefore differs from the interpreter's sequential one for sums
// and products (f32 on the GPU, f64 in the interpreter); max and min are exact, and propagate
// NaN as reductions do (Emitter::combine).
#include "compiler/lower_scan.h"

#include <fmt/format.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "compiler/emit.h"
#include "compiler/lower/reduction_lowering.h"
#include "compiler/reduction_math.h"

namespace kiln {
namespace {

using llvm::BasicBlock;
using llvm::Type;
using llvm::Value;

std::string coord_name(size_t d) {
  return fmt::format("#{}", d);  // not an identifier: never clashes with the spec's names
}

class ScanLowering {
 public:
  ScanLowering(llvm::Module& m, const KernelDef& abi, const ScheduledKernel& sk,
               const ScanConfig& cfg)
      : m_(m), b_(m.getContext()), em_(m, b_), math_{b_, em_}, abi_(abi), sk_(sk), cfg_(cfg) {}

  void run(const std::string& entry, VariantLayout* layout);

 private:
  /// One point being computed: its coordinates, and its scan value once known.
  struct Point {
    std::vector<Value*> coord;
    Value* scan = nullptr;
    std::unordered_map<Expr, Value*> vec_lane;  // reads served from a lane of a vector load
    ValueMemo memo;
  };
  struct Store {
    int param;
    DType dtype;
    Expr value;
  };

  // ---- canonical statements ----
  Expr canonical(const Expr& e, const std::map<std::string, std::string>& rename);
  void prepare();

  // ---- pieces ----
  Value* i64(int64_t v) { return b_.getInt64(v); }
  int param_index(const std::string& name) const;
  Value* offset_of(const Load& ld, const std::vector<Value*>& coord);
  Value* leaf(const Expr& e, Point& p);
  Value* eval(const Expr& e, Point& p) {
    return em_.eval(e, p.memo, [&](const Expr& l) { return leaf(l, p); });
  }
  std::vector<Value*> coords_of(Value* flat, const std::vector<size_t>& dims);
  Value* min64(Value* a, Value* b) { return b_.CreateSelect(b_.CreateICmpSLT(a, b), a, b); }
  void loop(Value* begin, Value* end, Value* step, const std::function<void(Value*)>& body);
  void when(Value* cond, const std::function<void()>& body);
  Value* var(Value* init, const char* name);
  Value* get(Value* slot) { return b_.CreateLoad(acc_type_, slot); }
  /// f32 sums carry their running total compensated (Kahan, reduction_math.h): the carry
  /// across chunks and slices is a sequential sum.
  bool compensated() const { return op_ == ReduceOp::sum && acc_type_->isFloatTy(); }
  /// *slot = *slot (op) v, compensated through *comp when compensated().
  void add_to(Value* slot, Value* comp, Value* v) {
    if (!comp) {
      b_.CreateStore(em_.combine(op_, get(slot), v), slot);
      return;
    }
    Value *s = get(slot), *c = get(comp);
    reduction_math::kahan_add(math_, s, c, v);
    b_.CreateStore(s, slot);
    b_.CreateStore(c, comp);
  }
  Value* shfl(llvm::Intrinsic::ID f, llvm::Intrinsic::ID i, Value* v, Value* arg, int c);
  void note_aligned(int param, DType t);

  // ---- kernels ----
  void emit_rows(bool vector);
  void emit_split(bool vector);
  Value* scan_row(const std::vector<Value*>& row, Value* j_begin, Value* j_end, Value* carry0,
                  bool vector, bool store);
  void emit_outer();

  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  Emitter em_;
  reduction::IrMath math_;
  const KernelDef& abi_;
  const ScheduledKernel& sk_;
  const ScanConfig& cfg_;

  llvm::Function* fn_ = nullptr;
  std::vector<const TensorDecl*> params_;
  std::vector<Value*> ptrs_;
  std::map<std::string, std::vector<Value*>> strides_;  // per tensor read, per dimension
  Value* workspace_ = nullptr;
  Value* phase_ = nullptr;
  Value *tid_ = nullptr, *bid_ = nullptr, *nblocks_ = nullptr;
  llvm::GlobalVariable* smem_ = nullptr;
  Value* chunks_ = nullptr;  // chunks scanned by the block so far (the shared-memory half)
  Type* acc_type_ = nullptr;

  const Stmt* scan_stmt_ = nullptr;
  ReduceOp op_ = ReduceOp::sum;
  size_t rank_ = 0, axis_ = 0;
  std::vector<Value*> extents_;  // of the space, by position
  Value* L_ = nullptr;           // the scanned extent
  std::map<std::string, const Stmt*> defs_;
  Expr body_;                    // the scan's body, canonical
  std::vector<Store> stores_;    // every store of a point, canonical
  std::vector<Expr> row_loads_;  // loads that can be read as vectors along a row
  VariantLayout layout_;
};

// e over the canonical coordinates: index variables renamed by `rename`, reads of the
// kernel's own statements (but the scan) replaced by their definitions.
Expr ScanLowering::canonical(const Expr& e, const std::map<std::string, std::string>& rename) {
  auto name = [&](const std::string& v) {
    auto it = rename.find(v);
    internal_check(it != rename.end(), "lower_scan: an unbound index variable");
    return it->second;
  };
  if (const IndexRef* r = e.as<IndexRef>()) return make_index(name(r->name), e.type(), e.loc());
  if (const Load* ld = e.as<Load>()) {
    std::vector<std::string> idx;
    for (const auto& i : ld->indices) idx.push_back(name(i));
    auto def = defs_.find(ld->tensor);
    if (def == defs_.end()) return make_load(ld->tensor, idx, ld->stored, e.loc());
    std::map<std::string, std::string> inner;
    for (size_t d = 0; d < def->second->indices.size(); ++d)
      inner[def->second->indices[d]] = idx[d];
    Expr v = canonical(def->second->value, inner);
    // A temporary holds its compute value; an output read back holds its stored one.
    const TensorDecl* t = sk_.def.find_tensor(ld->tensor);
    if (t && t->role != TensorRole::temp && (t->dtype == DType::f16 || t->dtype == DType::bf16)) {
      v = make_cast(t->dtype, v, e.loc());
    }
    return v;
  }
  if (e.as<Reduce>() || e.as<Scan>()) {
    throw InternalError("lower_scan: a reduction or scan inside a scan kernel's statement");
  }
  return map_children(e, [&](const Expr& c) { return canonical(c, rename); });
}

void ScanLowering::prepare() {
  scan_stmt_ = &scan_statement(sk_);
  const Scan& scan = *scan_stmt_->value.as<Scan>();
  op_ = scan.op;
  rank_ = sk_.space.size();
  axis_ = static_cast<size_t>(*sk_.scan_axis);
  for (const Stmt& st : sk_.def.body) {
    if (&st != scan_stmt_) defs_[st.target] = &st;
  }
  auto rename_of = [&](const Stmt& st) {
    std::map<std::string, std::string> r;
    for (size_t d = 0; d < st.indices.size(); ++d) r[st.indices[d]] = coord_name(d);
    return r;
  };
  body_ = canonical(wrap(scan.body), rename_of(*scan_stmt_));
  std::set<std::string> written;
  for (const TensorDecl& t : sk_.def.outputs) written.insert(t.name);
  for (const Stmt& st : sk_.def.body) {
    if (!written.count(st.target)) continue;
    const int p = param_index(st.target);
    std::vector<std::string> own;
    for (size_t d = 0; d < rank_; ++d) own.push_back(coord_name(d));
    Expr v = &st == scan_stmt_ ? make_load(st.target, own, scan_stmt_->value.type())
                               : canonical(st.value, rename_of(st));
    stores_.push_back({p, params_[static_cast<size_t>(p)]->dtype, v});
  }
  // Reads whose last index is the scanned coordinate, and only there, are contiguous along a
  // row: a row scan reads them as vectors.
  const std::string along = coord_name(axis_);
  std::function<void(const Expr&)> find = [&](const Expr& e) {
    if (const Load* ld = e.as<Load>(); ld && ld->tensor != scan_stmt_->target) {
      const auto& idx = ld->indices;
      if (!idx.empty() && idx.back() == along && std::count(idx.begin(), idx.end(), along) == 1 &&
          std::find(row_loads_.begin(), row_loads_.end(), e) == row_loads_.end()) {
        row_loads_.push_back(e);
      }
    }
    if (!e.as<Gather>()) for_each_child(e, find);
  };
  find(body_);
  for (const Store& s : stores_) find(s.value);
}

int ScanLowering::param_index(const std::string& name) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i]->name == name) return static_cast<int>(i);
  }
  throw InternalError(fmt::format("lower_scan: '{}' is not a parameter of the step", name));
}

Value* ScanLowering::offset_of(const Load& ld, const std::vector<Value*>& coord) {
  const std::vector<Value*>& strides = strides_.at(ld.tensor);
  Value* off = i64(0);
  for (size_t d = 0; d < ld.indices.size(); ++d) {
    const size_t c = static_cast<size_t>(std::stoi(ld.indices[d].substr(1)));
    off = b_.CreateAdd(off, b_.CreateMul(coord[c], strides[d]));
  }
  return off;
}

Value* ScanLowering::leaf(const Expr& e, Point& p) {
  if (const Load* ld = e.as<Load>()) {
    if (ld->tensor == scan_stmt_->target) {
      internal_check(p.scan != nullptr, "lower_scan: the scan's value read before it is known");
      return p.scan;
    }
    if (auto it = p.vec_lane.find(e); it != p.vec_lane.end()) return it->second;
    const int param = param_index(ld->tensor);
    Value* ptr =
        em_.element_ptr(ptrs_[static_cast<size_t>(param)], ld->stored, offset_of(*ld, p.coord));
    return em_.load(ptr, ld->stored);
  }
  if (const IndexRef* r = e.as<IndexRef>()) {
    return em_.int_as(p.coord[static_cast<size_t>(std::stoi(r->name.substr(1)))], e.type(), false);
  }
  if (const SymRef* s = e.as<SymRef>()) {
    return em_.int_as(em_.dim_value(Dim::symbol(s->name)), e.type(), true);
  }
  throw InternalError("lower_scan: an unexpected leaf");
}

// The coordinates of `flat`, a row-major position over the extents at `dims`.
std::vector<Value*> ScanLowering::coords_of(Value* flat, const std::vector<size_t>& dims) {
  std::vector<Value*> out(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    Value* e = extents_[dims[i]];
    out[i] = i == 0 ? flat : b_.CreateURem(flat, e);
    if (i > 0) flat = b_.CreateUDiv(flat, e);
  }
  return out;
}

Value* ScanLowering::var(Value* init, const char* name) {
  llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  Value* slot = entry.CreateAlloca(init->getType(), nullptr, name);
  b_.CreateStore(init, slot);
  return slot;
}

// for (iv = begin; iv < end; iv += step) body(iv), signed i64.
void ScanLowering::loop(Value* begin, Value* end, Value* step,
                        const std::function<void(Value*)>& body) {
  Value* iv = var(begin, "iv");
  auto* head = BasicBlock::Create(m_.getContext(), "loop", fn_);
  auto* work = BasicBlock::Create(m_.getContext(), "loop.body", fn_);
  auto* done = BasicBlock::Create(m_.getContext(), "loop.done", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  Value* i = b_.CreateLoad(b_.getInt64Ty(), iv);
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), work, done);
  b_.SetInsertPoint(work);
  body(i);
  b_.CreateStore(b_.CreateAdd(i, step), iv);
  b_.CreateBr(head);
  b_.SetInsertPoint(done);
}

void ScanLowering::when(Value* cond, const std::function<void()>& body) {
  auto* then = BasicBlock::Create(m_.getContext(), "then", fn_);
  auto* done = BasicBlock::Create(m_.getContext(), "then.done", fn_);
  b_.CreateCondBr(cond, then, done);
  b_.SetInsertPoint(then);
  body();
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

Value* ScanLowering::shfl(llvm::Intrinsic::ID f, llvm::Intrinsic::ID i, Value* v, Value* arg,
                          int c) {
  const bool is_float = v->getType()->isFloatTy();
  return b_.CreateIntrinsic(is_float ? f : i, {}, {b_.getInt32(-1), v, arg, b_.getInt32(c)});
}

void ScanLowering::note_aligned(int param, DType t) {
  layout_.align_bytes = std::max(layout_.align_bytes, std::min<int>(16, cfg_.vec * size_of(t)));
  auto& a = layout_.aligned_params;
  if (std::find(a.begin(), a.end(), param) == a.end()) {
    a.push_back(param);
    std::sort(a.begin(), a.end());
  }
}

void ScanLowering::run(const std::string& entry, VariantLayout* layout) {
  params_ = abi_.params();
  if (cfg_.split && cfg_.group != cfg_.block) {
    throw InternalError("lower_scan: a split config with group != block");
  }
  if (cfg_.group != 32 && cfg_.group != cfg_.block && *sk_.scan_axis + 1 == int(sk_.space.size())) {
    throw InternalError("lower_scan: a row config's group is neither a warp nor the block");
  }
  fn_ = em_.declare_kernel(abi_, entry, cfg_.block, cfg_.split);
  for (size_t i = 0; i < params_.size(); ++i)
    ptrs_.push_back(fn_->getArg(static_cast<unsigned>(i)));
  if (cfg_.split) {
    const unsigned first = static_cast<unsigned>(params_.size() + abi_.symbols().size());
    workspace_ = fn_->getArg(first);
    phase_ = fn_->getArg(first + 1);
  }
  b_.SetInsertPoint(BasicBlock::Create(m_.getContext(), "entry", fn_));
  prepare();
  acc_type_ = em_.compute_llvm_type(scan_stmt_->value.type());
  tid_ = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  bid_ = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  nblocks_ = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
  for (const Dim& d : sk_.space) extents_.push_back(em_.dim_value(d));
  L_ = extents_[axis_];
  for (const TensorDecl* t : params_) {
    std::vector<Value*> strides(t->shape.size());
    Value* s = i64(1);
    for (size_t d = t->shape.size(); d-- > 0;) {
      strides[d] = s;
      s = b_.CreateMul(s, em_.dim_value(t->shape[d]));
    }
    strides_[t->name] = strides;
  }
  const int warps = std::max(1, cfg_.block / 32);
  auto* ty = llvm::ArrayType::get(b_.getInt32Ty(), 2 * warps);
  smem_ = new llvm::GlobalVariable(m_, ty, false, llvm::GlobalValue::InternalLinkage,
                                   llvm::UndefValue::get(ty), fn_->getName() + ".smem", nullptr,
                                   llvm::GlobalValue::NotThreadLocal, 3);
  smem_->setAlignment(llvm::Align(16));
  chunks_ = var(i64(0), "chunks");

  auto* exit = BasicBlock::Create(m_.getContext(), "exit", fn_);
  const bool row = axis_ + 1 == rank_;
  if (!row) {
    emit_outer();
  } else {
    auto body = [&](bool vector) {
      if (cfg_.split) {
        emit_split(vector);
      } else {
        emit_rows(vector);
      }
    };
    if (cfg_.vec > 1) {
      auto* vec_bb = BasicBlock::Create(m_.getContext(), "vector", fn_);
      auto* scalar_bb = BasicBlock::Create(m_.getContext(), "scalar", fn_);
      b_.CreateCondBr(b_.CreateICmpEQ(b_.CreateURem(L_, i64(cfg_.vec)), i64(0)), vec_bb, scalar_bb);
      b_.SetInsertPoint(vec_bb);
      body(true);
      b_.CreateBr(exit);
      b_.SetInsertPoint(scalar_bb);
    }
    body(false);
  }
  b_.CreateBr(exit);
  b_.SetInsertPoint(exit);
  b_.CreateRetVoid();
  if (layout) *layout = layout_;
}

// Rows: group threads per row, block / group rows per block, a grid-stride loop over rows.
void ScanLowering::emit_rows(bool vector) {
  const int64_t per_block = cfg_.block / cfg_.group;
  Value* rows = i64(1);
  std::vector<size_t> row_dims;
  for (size_t d = 0; d + 1 < rank_; ++d) {
    row_dims.push_back(d);
    rows = b_.CreateMul(rows, extents_[d]);
  }
  Value* first =
      b_.CreateAdd(b_.CreateMul(bid_, i64(per_block)), b_.CreateUDiv(tid_, i64(cfg_.group)));
  loop(first, rows, b_.CreateMul(nblocks_, i64(per_block)), [&](Value* r) {
    scan_row(coords_of(r, row_dims), i64(0), L_, em_.identity(op_, scan_stmt_->value.type()),
             vector, true);
  });
}

// Split rows: block b walks slice b % S of row b / S (S = blocks / rows), whole chunks.
void ScanLowering::emit_split(bool vector) {
  Value* rows = i64(1);
  std::vector<size_t> row_dims;
  for (size_t d = 0; d + 1 < rank_; ++d) {
    row_dims.push_back(d);
    rows = b_.CreateMul(rows, extents_[d]);
  }
  Value* S = b_.CreateUDiv(nblocks_, rows, "S");
  Value* row = b_.CreateUDiv(bid_, S, "row");
  Value* slice = b_.CreateURem(bid_, S, "slice");
  const int64_t chunk = cfg_.chunk();
  Value* chunks = b_.CreateUDiv(b_.CreateAdd(L_, i64(chunk - 1)), i64(chunk));
  Value* per = b_.CreateUDiv(b_.CreateAdd(chunks, b_.CreateSub(S, i64(1))), S);
  Value* begin = min64(b_.CreateMul(b_.CreateMul(slice, per), i64(chunk)), L_);
  Value* end = min64(b_.CreateAdd(begin, b_.CreateMul(per, i64(chunk))), L_);
  Value* identity = em_.identity(op_, scan_stmt_->value.type());
  auto word = [&](Value* record) { return em_.element_ptr(workspace_, DType::i32, record); };
  when(b_.CreateICmpULT(row, rows), [&] {
    std::vector<Value*> coord = coords_of(row, row_dims);
    auto* phase0 = BasicBlock::Create(m_.getContext(), "phase0", fn_);
    auto* phase1 = BasicBlock::Create(m_.getContext(), "phase1", fn_);
    auto* done = BasicBlock::Create(m_.getContext(), "phases.done", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(phase_, i64(0)), phase0, phase1);
    b_.SetInsertPoint(phase0);
    Value* total = scan_row(coord, begin, end, identity, vector, false);
    when(b_.CreateICmpEQ(tid_, i64(0)),
         [&] { b_.CreateStore(b_.CreateBitCast(total, b_.getInt32Ty()), word(bid_)); });
    b_.CreateBr(done);
    b_.SetInsertPoint(phase1);
    Value* prefix = var(identity, "prefix");
    Value* prefix_c = compensated() ? var(math_.num(0), "prefix.c") : nullptr;
    Value* record0 = b_.CreateMul(row, S);
    loop(i64(0), slice, i64(1), [&](Value* s) {
      Value* t = b_.CreateBitCast(b_.CreateLoad(b_.getInt32Ty(), word(b_.CreateAdd(record0, s))),
                                  acc_type_);
      add_to(prefix, prefix_c, t);
    });
    scan_row(coord, begin, end, get(prefix), vector, true);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  });
}

// Scans elements [j_begin, j_end) of the row at `row` (its coordinates but the last) from
// carry0, storing every output when `store`; returns carry0 (op) the elements' total.
Value* ScanLowering::scan_row(const std::vector<Value*>& row, Value* j_begin, Value* j_end,
                              Value* carry0, bool vector, bool store) {
  const int G = cfg_.group, V = cfg_.vec;
  const int warps = G / 32;
  const DType t = scan_stmt_->value.type();
  Value* identity = em_.identity(op_, t);
  Value* gtid = b_.CreateURem(tid_, i64(G));
  Value* lane = b_.CreateURem(tid_, i64(32));
  Value* warp = b_.CreateUDiv(gtid, i64(32));
  Value* carry = var(carry0, "carry");
  Value* carry_c = compensated() ? var(math_.num(0), "carry.c") : nullptr;
  const int64_t chunk = int64_t{G} * V;
  const int I = std::max(1, cfg_.items);
  // Each step of the loop covers `items` chunks: every chunk's loads and body values first
  // (items x vec elements in flight per thread), then the chunks' scans in order.
  struct Chunk {
    Value* j0 = nullptr;
    Value* jv = nullptr;
    std::vector<Point> pts;
    std::vector<Value*> in, vals;
  };
  loop(j_begin, j_end, i64(chunk * I), [&](Value* c_base) {
    std::vector<Chunk> chunks(static_cast<size_t>(I));
    for (int ci = 0; ci < I; ++ci) {
      Chunk& ch = chunks[static_cast<size_t>(ci)];
      Value* c0 = b_.CreateAdd(c_base, i64(int64_t{ci} * chunk));
      Value* j0 = b_.CreateAdd(c0, b_.CreateMul(gtid, i64(V)));
      Value* last = b_.CreateSub(j_end, i64(1));
      std::vector<Point> pts(static_cast<size_t>(V));
      std::vector<Value*> in(static_cast<size_t>(V));
      // Loads: a vector per contiguous read when the lanes are all in the row or all out
      // (vector: L and the slices are multiples of V), clamped into the row either way.
      Value* jv = vector ? min64(j0, b_.CreateSub(j_end, i64(V))) : nullptr;
      std::vector<std::pair<Expr, Value*>> vectors;
      if (vector) {
        for (const Expr& e : row_loads_) {
          const Load& ld = *e.as<Load>();
          std::vector<Value*> coord = row;
          coord.push_back(jv);
          const int param = param_index(ld.tensor);
          note_aligned(param, ld.stored);
          vectors.emplace_back(e, em_.load_vector(em_.element_ptr(ptrs_[static_cast<size_t>(param)],
                                                                  ld.stored, offset_of(ld, coord)),
                                                  ld.stored, V));
        }
      }
      for (int k = 0; k < V; ++k) {
        Value* jk = b_.CreateAdd(j0, i64(k));
        in[k] = b_.CreateICmpSLT(jk, j_end);
        Point& p = pts[static_cast<size_t>(k)];
        p.coord = row;
        p.coord.push_back(vector ? b_.CreateAdd(jv, i64(k)) : min64(jk, last));
        for (const auto& [e, vec] : vectors) {
          p.vec_lane[e] = em_.widen_lane(vec, k, e.as<Load>()->stored);
        }
      }
      std::vector<Value*> vals(static_cast<size_t>(V));
      for (int k = 0; k < V; ++k) {
        vals[k] = b_.CreateSelect(in[k], eval(body_, pts[static_cast<size_t>(k)]), identity);
      }
      ch = {j0, jv, std::move(pts), std::move(in), std::move(vals)};
    }
    for (Chunk& ch : chunks) {
      Value* j0 = ch.j0;
      Value* jv = ch.jv;
      std::vector<Point>& pts = ch.pts;
      std::vector<Value*>& in = ch.in;
      // 1. The thread's elements, in order.
      std::vector<Value*> incl(static_cast<size_t>(V));
      for (int k = 0; k < V; ++k) {
        Value* v = ch.vals[static_cast<size_t>(k)];
        incl[k] = k == 0 ? v : em_.combine(op_, incl[k - 1], v);
      }
      // 2. Across the warp: Hillis-Steele on the threads' totals.
      Value* x = incl[V - 1];
      for (int d = 1; d < 32; d *= 2) {
        Value* y = shfl(llvm::Intrinsic::nvvm_shfl_sync_up_f32,
                        llvm::Intrinsic::nvvm_shfl_sync_up_i32, x, b_.getInt32(d), 0);
        x = b_.CreateSelect(b_.CreateICmpUGE(lane, i64(d)), em_.combine(op_, y, x), x);
      }
      Value* before = shfl(llvm::Intrinsic::nvvm_shfl_sync_up_f32,
                           llvm::Intrinsic::nvvm_shfl_sync_up_i32, x, b_.getInt32(1), 0);
      before = b_.CreateSelect(b_.CreateICmpEQ(lane, i64(0)), identity, before);
      Value* total = shfl(llvm::Intrinsic::nvvm_shfl_sync_idx_f32,
                          llvm::Intrinsic::nvvm_shfl_sync_idx_i32, x, b_.getInt32(31), 31);
      Value* prefix = em_.combine(op_, get(carry), before);
      // 3. Across the warps: their totals through shared memory (half `parity` of it).
      if (warps > 1) {
        // The halves alternate over every chunk the block scans (rows included), so a warp
        // writing a chunk's total never overwrites one a slower warp has yet to read.
        Value* count = b_.CreateLoad(b_.getInt64Ty(), chunks_);
        b_.CreateStore(b_.CreateAdd(count, i64(1)), chunks_);
        Value* parity = b_.CreateAnd(count, i64(1));
        Value* base = b_.CreateMul(parity, i64(warps));
        when(b_.CreateICmpEQ(lane, i64(31)), [&] {
          b_.CreateStore(b_.CreateBitCast(x, b_.getInt32Ty()),
                         b_.CreateInBoundsGEP(b_.getInt32Ty(), smem_, b_.CreateAdd(base, warp)));
        });
        b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
        Value* earlier = get(carry);
        total = identity;
        for (int w = 0; w < warps; ++w) {
          Value* tw = b_.CreateBitCast(
              b_.CreateLoad(b_.getInt32Ty(), b_.CreateInBoundsGEP(b_.getInt32Ty(), smem_,
                                                                  b_.CreateAdd(base, i64(w)))),
              acc_type_);
          earlier = b_.CreateSelect(b_.CreateICmpULT(i64(w), warp), em_.combine(op_, earlier, tw),
                                    earlier);
          total = w == 0 ? tw : em_.combine(op_, total, tw);
        }
        prefix = em_.combine(op_, earlier, before);
      }
      add_to(carry, carry_c, total);
      if (!store) continue;
      // 4. The stores, with the epilogue.
      for (int k = 0; k < V; ++k) pts[k].scan = em_.combine(op_, prefix, incl[k]);
      if (vector) {
        when(b_.CreateICmpSLT(j0, j_end), [&] {
          for (const Store& s : stores_) {
            std::vector<Value*> vals;
            for (int k = 0; k < V; ++k) vals.push_back(eval(s.value, pts[static_cast<size_t>(k)]));
            note_aligned(s.param, s.dtype);
            std::vector<Value*> coord = row;
            coord.push_back(jv);
            Value* off = i64(0);
            const std::vector<Value*>& st = strides_.at(params_[s.param]->name);
            for (size_t d = 0; d < rank_; ++d)
              off = b_.CreateAdd(off, b_.CreateMul(coord[d], st[d]));
            em_.store(em_.element_ptr(ptrs_[static_cast<size_t>(s.param)], s.dtype, off), s.dtype,
                      vals);
          }
        });
      } else {
        for (int k = 0; k < V; ++k) {
          when(in[k], [&] {
            Point& p = pts[static_cast<size_t>(k)];
            for (const Store& s : stores_) {
              Value* v = eval(s.value, p);
              const std::vector<Value*>& st = strides_.at(params_[s.param]->name);
              Value* off = i64(0);
              for (size_t d = 0; d < rank_; ++d)
                off = b_.CreateAdd(off, b_.CreateMul(p.coord[d], st[d]));
              em_.store(em_.element_ptr(ptrs_[static_cast<size_t>(s.param)], s.dtype, off), s.dtype,
                        {v});
            }
          });
        }
      }
    }
  });
  return get(carry);
}

// Outer scans: block * vec columns per block (thread t owns columns t, t + block, ...), each
// thread walking down the scanned index with `items` steps loaded ahead.
void ScanLowering::emit_outer() {
  const int V = cfg_.vec, U = cfg_.items;
  std::vector<size_t> outer_dims, inner_dims;
  Value* cols = i64(1);
  for (size_t d = 0; d < rank_; ++d) {
    if (d == axis_) continue;
    (d < axis_ ? outer_dims : inner_dims).push_back(d);
    cols = b_.CreateMul(cols, extents_[d]);
  }
  Value* inner = i64(1);
  for (size_t d : inner_dims) inner = b_.CreateMul(inner, extents_[d]);
  const DType t = scan_stmt_->value.type();
  Value* identity = em_.identity(op_, t);
  const int64_t per_block = int64_t{cfg_.block} * V;
  Value* first = b_.CreateMul(bid_, i64(per_block));
  loop(first, cols, b_.CreateMul(nblocks_, i64(per_block)), [&](Value* base) {
    std::vector<std::vector<Value*>> col_coord(static_cast<size_t>(V));
    std::vector<Value*> col_in(static_cast<size_t>(V)), acc(static_cast<size_t>(V));
    for (int k = 0; k < V; ++k) {
      Value* c = b_.CreateAdd(base, b_.CreateAdd(i64(int64_t{k} * cfg_.block), tid_));
      col_in[k] = b_.CreateICmpSLT(c, cols);
      Value* cc = min64(c, b_.CreateSub(cols, i64(1)));
      std::vector<Value*> o = coords_of(b_.CreateUDiv(cc, inner), outer_dims);
      std::vector<Value*> i = coords_of(b_.CreateURem(cc, inner), inner_dims);
      std::vector<Value*> coord(rank_);
      for (size_t d = 0; d < outer_dims.size(); ++d) coord[outer_dims[d]] = o[d];
      for (size_t d = 0; d < inner_dims.size(); ++d) coord[inner_dims[d]] = i[d];
      col_coord[k] = coord;
      acc[k] = var(identity, "acc");
    }
    Value* last = b_.CreateSub(L_, i64(1));
    loop(i64(0), L_, i64(U), [&](Value* j0) {
      std::vector<Point> pts(static_cast<size_t>(U * V));
      std::vector<Value*> vals(static_cast<size_t>(U * V)), in_j(static_cast<size_t>(U));
      for (int u = 0; u < U; ++u) {
        Value* j = b_.CreateAdd(j0, i64(u));
        in_j[u] = b_.CreateICmpSLT(j, L_);
        for (int k = 0; k < V; ++k) {
          Point& p = pts[static_cast<size_t>(u * V + k)];
          p.coord = col_coord[k];
          p.coord[axis_] = min64(j, last);
          vals[u * V + k] = eval(body_, p);
        }
      }
      for (int u = 0; u < U; ++u) {
        for (int k = 0; k < V; ++k) {
          Point& p = pts[static_cast<size_t>(u * V + k)];
          Value* v = b_.CreateSelect(in_j[u], vals[u * V + k], identity);
          Value* a = em_.combine(op_, get(acc[k]), v);
          b_.CreateStore(a, acc[k]);
          p.scan = a;
          when(b_.CreateAnd(in_j[u], col_in[k]), [&] {
            for (const Store& s : stores_) {
              Value* value = eval(s.value, p);
              const std::vector<Value*>& st = strides_.at(params_[s.param]->name);
              Value* off = i64(0);
              for (size_t d = 0; d < rank_; ++d)
                off = b_.CreateAdd(off, b_.CreateMul(p.coord[d], st[d]));
              em_.store(em_.element_ptr(ptrs_[static_cast<size_t>(s.param)], s.dtype, off), s.dtype,
                        {value});
            }
          });
        }
      }
    });
  });
}

}  // namespace

void lower_scan(llvm::Module& m, const KernelDef& abi, const ScheduledKernel& sk,
                const ScanConfig& cfg, const std::string& entry, VariantLayout* layout) {
  internal_check(sk.kind == StepKind::scan && sk.scan_axis.has_value(),
                 "lower_scan: not a scan kernel");
  ScanLowering(m, abi, sk, cfg).run(entry, layout);
}

}  // namespace kiln
