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
//     loads and count as the identity). The vector loads run a step ahead: each step issues
//     the next step's before its own scans, so loads are in flight at the barriers. Measured
//     on an H200 against loading each step in turn (bench/results/2026-11-27-h200-ahead, call
//     1): cumsum bf16 4096 x 32768 159.8 -> 151.7 us, f32 rows of 256K 197.6 -> 190.7, a
//     fused prologue and epilogue 415.7 -> 404.6, f32 4096 x 32768 level (280.3, 280.2).
//  3. The chunk is scanned in three levels: each thread's elements in registers, the threads'
//     totals across the warp with shuffles (Hillis-Steele, log2(32) steps), and the warps'
//     totals through shared memory (every thread folds the totals of the warps before its
//     own, in warp order, from a buffer of two halves that alternate over the block's
//     chunks: one barrier per chunk).
//  4. The value at an element is carry (op) warps before (op) lanes before (op) own elements
//     up to it, where carry is the total of the earlier chunks; the chunk's total joins the
//     carry for the next chunk (f32 sums compensated, as looped reductions are: the carry is
//     a sequential sum over the chunks).
//     The epilogue is evaluated and stored at each element.
// Split row scans (few, very long rows) run in one pass with a decoupled look-back, over S
// blocks a row, launched twice: phase 0 clears the row's records in the workspace
// (kLookbackSlots words a block: 64-bit records, the row's tile counter then two per tile),
// phase 1 scans. The row is cut into tiles of `items` chunks; a block takes the next tile from
// the row's counter (so tiles start in order and the look-back cannot wait on a tile no block
// holds) and holds two at a time (held_tiles): each round it loads tile B, scans it within
// itself in registers (each chunk by levels 1-2, every chunk's warp totals through shared memory
// at once: one barrier) and publishes its total; then it waits for the carry of the tile A it
// loaded the round before, takes its next ticket and stores A. A tile's total is thus published
// one load after its ticket, and the look-back for A runs a whole load later, when the tiles
// before A have published their totals (the group and chain records still come from look-backs,
// which run a load later too). Measured on an H200: one 64M-element row 218 -> 203 us, holding
// one tile against two, in one run; holding one tile, each block waited for the records, then
// loaded, in turns. Taking tickets ahead instead, so that a tile's total waited for its block's
// previous tile, was slower (the twelfth session: 280 us against 223). The carry is not "the
// nearest finished prefix plus the totals after it" (that sum's order would depend on timing)
// but a fixed tree: tile t = 1024 h + 32 g' + i folds the totals of the i tiles before it in its
// group of 32 (lane l of warp 0 waits for tile 32 g + l's record; a butterfly fold, the same
// bits on every lane), the totals of the g' groups before its group in its supergroup of 1024
// (published by each group's last tile), and the prefix of the supergroups before h (a chain:
// the first tile of supergroup h publishes prefix(h - 1) (op) total(h - 1), published by
// supergroup h - 1's last tile). A record is a 64-bit word, flag in the high half, written and
// polled whole (volatile, 8-byte aligned), with a pause between polls. Results depend on the
// tile size, not on timing. Rows of more tiles than the records hold (about 256 a block) take
// tiles of k chunks read twice, their total first, then their scan from the carry (mostly from
// L2).
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
  void lookback_row(const std::vector<Value*>& coord, Value* S, bool vector);
  Value* look_back(Value* t, Value* total);
  /// Word i of the block's shared slots (shared_): 0 the next ticket, 1 the carry.
  Value* tile_slot(int i) { return b_.CreateInBoundsGEP(b_.getInt32Ty(), shared_, {i64(i)}); }
  /// The row's next ticket (its tile counter, record 0), for thread 0 to take.
  Value* ticket() {
    return b_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, record(i64(0)), b_.getInt32(1),
                              llvm::MaybeAlign(8), llvm::AtomicOrdering::Monotonic);
  }
  /// The carry of tile t, whose total is published: warp 0 looks back, every thread reads it
  /// after a barrier.
  Value* carry_of(Value* t, Value* total);
  /// Thread 0 publishes tile t's total (its agg record).
  void publish_total(Value* t, Value* total);
  void publish(Value* ptr, Value* v);
  /// Record `index` (64 bits) of the split row's records (records_).
  Value* record(Value* index) { return em_.element_ptr(records_, DType::i64, index); }
  void barrier() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }
  struct Chunk {
    Value* j0 = nullptr;
    Value* jv = nullptr;
    std::vector<Point> pts;
    std::vector<Value*> in, vals, incl;
    std::vector<Value*> loaded;  // vector: per row load (row_loads_), its vector
  };
  Chunk chunk_at(const std::vector<Value*>& row, Value* c0, Value* j_end, bool vector);
  void lanes_from(Chunk& ch, const std::vector<Value*>& loaded);
  std::vector<Value*> load_vectors(const std::vector<Value*>& row, const Chunk& ch);
  Chunk load_chunk(const std::vector<Value*>& row, Value* c0, Value* j_end, bool vector,
                   const std::vector<Value*>* preloaded = nullptr);
  Value* scan_warp(Chunk& ch);
  Value* scan_lanes(Value* x, Value* lane);
  void store_chunk(const std::vector<Value*>& row, Chunk& ch, Value* j_end, bool vector);
  Value* scan_row(const std::vector<Value*>& row, Value* j_begin, Value* j_end, Value* carry0,
                  bool vector, bool store, int items);
  /// A tile scanned within itself: per chunk, the loaded vectors and every element's value
  /// before the tile's carry; and the tile's total.
  struct TileScan {
    std::vector<std::vector<Value*>> loaded, partial;
    Value* total = nullptr;
  };
  std::vector<Chunk> load_tile(const std::vector<Value*>& row, Value* c0, Value* j_end, bool vector,
                               int items);
  TileScan scan_tile(std::vector<Chunk>& chunks);
  void store_tile(const std::vector<Value*>& row, Value* c0, Value* j_end, bool vector,
                  const TileScan& tile, Value* carry);
  void held_tiles(const std::vector<Value*>& coord, Value* first, Value* count, bool vector,
                  int items, BasicBlock* out);
  /// An entry-block slot of type ty, not initialised (a value carried between a loop's rounds).
  Value* slot_of(Type* ty, const char* name) {
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    return entry.CreateAlloca(ty, nullptr, name);
  }
  /// The value in a slot_of slot.
  Value* load_slot(Value* slot) {
    return b_.CreateLoad(llvm::cast<llvm::AllocaInst>(slot)->getAllocatedType(), slot);
  }
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
  Value* records_ = nullptr;                   // split rows: the row's look-back records
  llvm::GlobalVariable* shared_ = nullptr;     // split rows: the tile's ticket and carry
  llvm::GlobalVariable* tile_smem_ = nullptr;  // split rows: every chunk's warp totals
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
  // A split row's blocks stream the row together, their look-backs waiting on each other's
  // records: 1024 threads an SM at least (64 registers), whatever the colder paths need.
  if (cfg_.split) em_.min_blocks_per_sm(fn_, std::max(1, 1024 / cfg_.block));
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
  if (cfg_.split) {
    auto* two = llvm::ArrayType::get(b_.getInt32Ty(), 2);
    shared_ = new llvm::GlobalVariable(m_, two, false, llvm::GlobalValue::InternalLinkage,
                                       llvm::UndefValue::get(two), fn_->getName() + ".tile",
                                       nullptr, llvm::GlobalValue::NotThreadLocal, 3);
    shared_->setAlignment(llvm::Align(16));
    auto* totals = llvm::ArrayType::get(b_.getInt32Ty(), std::max(1, cfg_.items) * warps);
    tile_smem_ = new llvm::GlobalVariable(m_, totals, false, llvm::GlobalValue::InternalLinkage,
                                          llvm::UndefValue::get(totals), fn_->getName() + ".totals",
                                          nullptr, llvm::GlobalValue::NotThreadLocal, 3);
    tile_smem_->setAlignment(llvm::Align(16));
  }
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
             vector, true, cfg_.items);
  });
}

// Split rows: a single pass with a decoupled look-back (the header says how), S blocks per
// row (S = blocks / rows), phase 0 clearing the row's records, phase 1 scanning.
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
  const int64_t half = kLookbackSlots / 2;  // 64-bit records per block
  // The row's records: [0] its tile counter, then two per tile (look_back).
  records_ = em_.element_ptr(workspace_, DType::i64, b_.CreateMul(row, b_.CreateMul(S, i64(half))));
  when(b_.CreateICmpULT(row, rows), [&] {
    auto* phase0 = BasicBlock::Create(m_.getContext(), "phase0", fn_);
    auto* phase1 = BasicBlock::Create(m_.getContext(), "phase1", fn_);
    auto* done = BasicBlock::Create(m_.getContext(), "phases.done", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(phase_, i64(0)), phase0, phase1);
    b_.SetInsertPoint(phase0);
    loop(tid_, i64(half), i64(cfg_.block), [&](Value* w) {
      b_.CreateStore(i64(0), record(b_.CreateAdd(b_.CreateMul(slice, i64(half)), w)));
    });
    b_.CreateBr(done);
    b_.SetInsertPoint(phase1);
    lookback_row(coords_of(row, row_dims), S, vector);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  });
}

// Phase 1 of a split row: the blocks take the row's tiles in the order of a counter. A tile is
// one step of `items` chunks held in registers (held_tiles) when the records hold that many
// tiles; else (rows of more than ~256 tiles a block) k chunks read twice, their total first,
// then their scan from the carry (the second read mostly from L2).
void ScanLowering::lookback_row(const std::vector<Value*>& coord, Value* S, bool vector) {
  const int64_t chunk = cfg_.chunk();
  const int items = std::max(1, cfg_.items);
  const int64_t step = chunk * items;
  const int64_t half = kLookbackSlots / 2;
  // The records hold the counter and two per tile up to index T + 2 (look_back).
  Value* capacity =
      b_.CreateSub(b_.CreateUDiv(b_.CreateSub(b_.CreateMul(S, i64(half)), i64(1)), i64(2)), i64(2));
  Value* steps = b_.CreateUDiv(b_.CreateAdd(L_, i64(step - 1)), i64(step));
  Value* identity = em_.identity(op_, scan_stmt_->value.type());
  when(b_.CreateICmpEQ(tid_, i64(0)), [&] { b_.CreateStore(ticket(), tile_slot(0)); });
  barrier();
  Value* first = b_.CreateZExt(b_.CreateLoad(b_.getInt32Ty(), tile_slot(0)), b_.getInt64Ty());
  auto* in_registers = BasicBlock::Create(m_.getContext(), "tiles.registers", fn_);
  auto* read_twice = BasicBlock::Create(m_.getContext(), "tiles.twice", fn_);
  auto* out = BasicBlock::Create(m_.getContext(), "tiles.done", fn_);
  b_.CreateCondBr(b_.CreateICmpULE(steps, capacity), in_registers, read_twice);

  // The tiles from `first` while t < count: body(t), which leaves thread 0's next ticket in
  // slot 0 after the barrier its carry_of passed, then a barrier and every thread reads it.
  auto tiles = [&](Value* count, const std::function<void(Value*)>& body) {
    Value* t_slot = var(first, "t");
    auto* head = BasicBlock::Create(m_.getContext(), "tile.next", fn_);
    auto* work = BasicBlock::Create(m_.getContext(), "tile", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    Value* t = b_.CreateLoad(b_.getInt64Ty(), t_slot);
    b_.CreateCondBr(b_.CreateICmpULT(t, count), work, out);
    b_.SetInsertPoint(work);
    body(t);
    barrier();
    b_.CreateStore(b_.CreateZExt(b_.CreateLoad(b_.getInt32Ty(), tile_slot(0)), b_.getInt64Ty()),
                   t_slot);
    b_.CreateBr(head);
  };

  // Tiles of one step, held in registers, one loading while the one before waits (held_tiles).
  b_.SetInsertPoint(in_registers);
  held_tiles(coord, first, steps, vector, items, out);

  // Tiles of k chunks, k = ceil(chunks / capacity), each read twice.
  b_.SetInsertPoint(read_twice);
  Value* chunks = b_.CreateUDiv(b_.CreateAdd(L_, i64(chunk - 1)), i64(chunk));
  Value* k = b_.CreateUDiv(b_.CreateAdd(chunks, b_.CreateSub(capacity, i64(1))), capacity);
  Value* tile = b_.CreateMul(k, i64(chunk), "tile");
  tiles(b_.CreateUDiv(b_.CreateAdd(L_, b_.CreateSub(tile, i64(1))), tile, "tiles"), [&](Value* t) {
    Value* begin = b_.CreateMul(t, tile);
    Value* end = min64(b_.CreateAdd(begin, tile), L_);
    Value* total = scan_row(coord, begin, end, identity, vector, false, 1);
    publish_total(t, total);
    Value* carry = carry_of(t, total);
    when(b_.CreateICmpEQ(tid_, i64(0)), [&] { b_.CreateStore(ticket(), tile_slot(0)); });
    scan_row(coord, begin, end, carry, vector, true, 1);
  });
  b_.SetInsertPoint(out);
}

// A record: one 8-byte store, the flag in the high half (aligned: a store of two words could
// be seen half written).
void ScanLowering::publish(Value* ptr, Value* v) {
  Value* word = b_.CreateZExt(b_.CreateBitCast(v, b_.getInt32Ty()), b_.getInt64Ty());
  b_.CreateAlignedStore(b_.CreateOr(word, i64(int64_t{1} << 32)), ptr, llvm::Align(8),
                        /*isVolatile=*/true);
}

Value* ScanLowering::carry_of(Value* t, Value* total) {
  when(b_.CreateICmpULT(tid_, i64(32)), [&] {
    Value* carry = look_back(t, total);
    when(b_.CreateICmpEQ(tid_, i64(0)),
         [&] { b_.CreateStore(b_.CreateBitCast(carry, b_.getInt32Ty()), tile_slot(1)); });
  });
  barrier();
  return b_.CreateBitCast(b_.CreateLoad(b_.getInt32Ty(), tile_slot(1)), acc_type_);
}

void ScanLowering::publish_total(Value* t, Value* total) {
  when(b_.CreateICmpEQ(tid_, i64(0)),
       [&] { publish(record(b_.CreateAdd(i64(1), b_.CreateMul(t, i64(2)))), total); });
}

// Warp 0 of the block holding tile t (whose elements total `total`, published): returns the
// fold of every earlier tile's total, in the fixed tree of the header.
Value* ScanLowering::look_back(Value* t, Value* total) {
  Value* identity = em_.identity(op_, scan_stmt_->value.type());
  Value* lane = tid_;
  auto agg = [&](Value* tile) { return record(b_.CreateAdd(i64(1), b_.CreateMul(tile, i64(2)))); };
  auto aux = [&](Value* tile) { return record(b_.CreateAdd(i64(2), b_.CreateMul(tile, i64(2)))); };
  // The value at `ptr` once its flag is set (lanes where `need`), else the identity.
  auto wait = [&](Value* need, Value* ptr) {
    Value* slot = var(b_.getInt64(0), "record");
    when(need, [&] {
      auto* spin = BasicBlock::Create(m_.getContext(), "spin", fn_);
      auto* nap = BasicBlock::Create(m_.getContext(), "spin.nap", fn_);
      auto* ready = BasicBlock::Create(m_.getContext(), "spin.done", fn_);
      b_.CreateBr(spin);
      b_.SetInsertPoint(spin);
      Value* ld = b_.CreateAlignedLoad(b_.getInt64Ty(), ptr, llvm::Align(8), /*isVolatile=*/true);
      b_.CreateStore(ld, slot);
      b_.CreateCondBr(b_.CreateICmpUGE(ld, i64(int64_t{1} << 32)), ready, nap);
      // Not yet: a pause before the next poll, so that hundreds of warps polling the same
      // few lines of L2 leave it free for the stores they wait for.
      b_.SetInsertPoint(nap);
      b_.CreateIntrinsic(llvm::Intrinsic::nvvm_nanosleep, {}, {b_.getInt32(kLookbackPollNs)});
      b_.CreateBr(spin);
      b_.SetInsertPoint(ready);
    });
    Value* v = b_.CreateBitCast(
        b_.CreateTrunc(b_.CreateLoad(b_.getInt64Ty(), slot), b_.getInt32Ty()), acc_type_);
    return b_.CreateSelect(need, v, identity);
  };
  // The fold of the 32 lanes' values (butterflies: every lane the same bits).
  auto fold = [&](Value* v) {
    for (int m = 16; m >= 1; m /= 2) {
      Value* o = shfl(llvm::Intrinsic::nvvm_shfl_sync_bfly_f32,
                      llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, v, b_.getInt32(m), 31);
      v = em_.combine(op_, v, o);
    }
    return v;
  };
  Value* lane0 = b_.CreateICmpEQ(lane, i64(0));
  Value* g = b_.CreateUDiv(t, i64(32));
  Value* i = b_.CreateURem(t, i64(32));
  Value* h = b_.CreateUDiv(t, i64(1024));
  Value* j = b_.CreateURem(g, i64(32));
  // The tiles of t's group before it.
  Value* before =
      fold(wait(b_.CreateICmpULT(lane, i), agg(b_.CreateAdd(b_.CreateMul(g, i64(32)), lane))));
  Value* last_of_group = b_.CreateICmpEQ(i, i64(31));
  Value* group_total = em_.combine(op_, before, total);
  when(b_.CreateAnd(lane0, last_of_group),
       [&] { publish(aux(b_.CreateMul(g, i64(32))), group_total); });
  // The groups of t's supergroup before t's group.
  Value* first_group = b_.CreateMul(h, i64(32));
  Value* groups = fold(
      wait(b_.CreateICmpULT(lane, j), aux(b_.CreateMul(b_.CreateAdd(first_group, lane), i64(32)))));
  when(b_.CreateAnd(lane0, b_.CreateAnd(last_of_group, b_.CreateICmpEQ(j, i64(31)))), [&] {
    publish(aux(b_.CreateAdd(b_.CreateMul(h, i64(1024)), i64(1))),
            em_.combine(op_, groups, group_total));
  });
  // The supergroups before t's: a chain, each first tile extending it by one.
  Value* prior = var(identity, "prior");
  when(b_.CreateICmpUGT(h, i64(0)), [&] {
    Value* first = b_.CreateICmpEQ(b_.CreateURem(t, i64(1024)), i64(0));
    Value* prev = b_.CreateMul(b_.CreateSub(h, i64(1)), i64(1024));
    auto* chain = BasicBlock::Create(m_.getContext(), "chain", fn_);
    auto* read = BasicBlock::Create(m_.getContext(), "chain.read", fn_);
    auto* joined = BasicBlock::Create(m_.getContext(), "chain.done", fn_);
    b_.CreateCondBr(first, chain, read);
    b_.SetInsertPoint(chain);
    Value* earlier =
        wait(b_.CreateAnd(lane0, b_.CreateICmpUGT(h, i64(1))), aux(b_.CreateAdd(prev, i64(2))));
    Value* last_total = wait(lane0, aux(b_.CreateAdd(prev, i64(1))));
    Value* p = em_.combine(op_, earlier, last_total);
    when(lane0, [&] { publish(aux(b_.CreateAdd(b_.CreateMul(h, i64(1024)), i64(2))), p); });
    b_.CreateStore(p, prior);
    b_.CreateBr(joined);
    b_.SetInsertPoint(read);
    b_.CreateStore(wait(lane0, aux(b_.CreateAdd(b_.CreateMul(h, i64(1024)), i64(2)))), prior);
    b_.CreateBr(joined);
    b_.SetInsertPoint(joined);
  });
  return em_.combine(op_, em_.combine(op_, get(prior), groups), before);
}

// Chunk [c0, c0 + group * vec) of the row at `row` (its coordinates but the last), clamped
// to j_end: this thread's vec elements' coordinates and bounds, no loads.
ScanLowering::Chunk ScanLowering::chunk_at(const std::vector<Value*>& row, Value* c0, Value* j_end,
                                           bool vector) {
  const int V = cfg_.vec;
  Value* gtid = b_.CreateURem(tid_, i64(cfg_.group));
  Chunk ch;
  ch.j0 = b_.CreateAdd(c0, b_.CreateMul(gtid, i64(V)));
  Value* last = b_.CreateSub(j_end, i64(1));
  ch.pts.resize(static_cast<size_t>(V));
  ch.in.resize(static_cast<size_t>(V));
  // A vector per contiguous read when the lanes are all in the row or all out (vector: L and
  // the slices are multiples of V), clamped into the row either way.
  ch.jv = vector ? min64(ch.j0, b_.CreateSub(j_end, i64(V))) : nullptr;
  for (int k = 0; k < V; ++k) {
    Value* jk = b_.CreateAdd(ch.j0, i64(k));
    ch.in[k] = b_.CreateICmpSLT(jk, j_end);
    Point& p = ch.pts[static_cast<size_t>(k)];
    p.coord = row;
    p.coord.push_back(vector ? b_.CreateAdd(ch.jv, i64(k)) : min64(jk, last));
  }
  return ch;
}

// The chunk's points read their lanes of `loaded` (one vector per row load) for those loads.
void ScanLowering::lanes_from(Chunk& ch, const std::vector<Value*>& loaded) {
  ch.loaded = loaded;
  for (size_t i = 0; i < loaded.size(); ++i) {
    const Expr& e = row_loads_[i];
    for (int k = 0; k < cfg_.vec; ++k) {
      ch.pts[static_cast<size_t>(k)].vec_lane[e] =
          em_.widen_lane(loaded[i], k, e.as<Load>()->stored);
    }
  }
}

// The chunk's vector loads (one per row load), at its clamped start ch.jv.
std::vector<Value*> ScanLowering::load_vectors(const std::vector<Value*>& row, const Chunk& ch) {
  std::vector<Value*> loaded;
  for (const Expr& e : row_loads_) {
    const Load& ld = *e.as<Load>();
    std::vector<Value*> coord = row;
    coord.push_back(ch.jv);
    const int param = param_index(ld.tensor);
    note_aligned(param, ld.stored);
    loaded.push_back(em_.load_vector(
        em_.element_ptr(ptrs_[static_cast<size_t>(param)], ld.stored, offset_of(ld, coord)),
        ld.stored, cfg_.vec));
  }
  return loaded;
}

// chunk_at, then this thread's loads (or the vectors `preloaded` for it) and body values (the
// identity past j_end).
ScanLowering::Chunk ScanLowering::load_chunk(const std::vector<Value*>& row, Value* c0,
                                             Value* j_end, bool vector,
                                             const std::vector<Value*>* preloaded) {
  const int V = cfg_.vec;
  Value* identity = em_.identity(op_, scan_stmt_->value.type());
  Chunk ch = chunk_at(row, c0, j_end, vector);
  if (vector) lanes_from(ch, preloaded ? *preloaded : load_vectors(row, ch));
  ch.vals.resize(static_cast<size_t>(V));
  for (int k = 0; k < V; ++k) {
    ch.vals[k] = b_.CreateSelect(ch.in[k], eval(body_, ch.pts[static_cast<size_t>(k)]), identity);
  }
  return ch;
}

// Levels 1 and 2 of a chunk's scan: the thread's elements in order (ch.incl), then across the
// warp (Hillis-Steele on the threads' totals): the warp's own fold up to this lane.
Value* ScanLowering::scan_warp(Chunk& ch) {
  const int V = cfg_.vec;
  Value* lane = b_.CreateURem(tid_, i64(32));
  ch.incl.resize(static_cast<size_t>(V));
  for (int k = 0; k < V; ++k) {
    Value* v = ch.vals[static_cast<size_t>(k)];
    ch.incl[k] = k == 0 ? v : em_.combine(op_, ch.incl[k - 1], v);
  }
  return scan_lanes(ch.incl[V - 1], lane);
}

// The inclusive scan of x across the warp's lanes, in lane order (Hillis-Steele).
Value* ScanLowering::scan_lanes(Value* x, Value* lane) {
  for (int d = 1; d < 32; d *= 2) {
    Value* y = shfl(llvm::Intrinsic::nvvm_shfl_sync_up_f32, llvm::Intrinsic::nvvm_shfl_sync_up_i32,
                    x, b_.getInt32(d), 0);
    x = b_.CreateSelect(b_.CreateICmpUGE(lane, i64(d)), em_.combine(op_, y, x), x);
  }
  return x;
}

// Stores every output at the chunk's elements, whose scan values (pts[k].scan) are known.
void ScanLowering::store_chunk(const std::vector<Value*>& row, Chunk& ch, Value* j_end,
                               bool vector) {
  const int V = cfg_.vec;
  if (vector) {
    when(b_.CreateICmpSLT(ch.j0, j_end), [&] {
      for (const Store& s : stores_) {
        std::vector<Value*> vals;
        for (int k = 0; k < V; ++k) vals.push_back(eval(s.value, ch.pts[static_cast<size_t>(k)]));
        note_aligned(s.param, s.dtype);
        std::vector<Value*> coord = row;
        coord.push_back(ch.jv);
        Value* off = i64(0);
        const std::vector<Value*>& st = strides_.at(params_[s.param]->name);
        for (size_t d = 0; d < rank_; ++d) off = b_.CreateAdd(off, b_.CreateMul(coord[d], st[d]));
        em_.store(em_.element_ptr(ptrs_[static_cast<size_t>(s.param)], s.dtype, off), s.dtype,
                  vals);
      }
    });
    return;
  }
  for (int k = 0; k < V; ++k) {
    when(ch.in[k], [&] {
      Point& p = ch.pts[static_cast<size_t>(k)];
      for (const Store& s : stores_) {
        Value* v = eval(s.value, p);
        const std::vector<Value*>& st = strides_.at(params_[s.param]->name);
        Value* off = i64(0);
        for (size_t d = 0; d < rank_; ++d) off = b_.CreateAdd(off, b_.CreateMul(p.coord[d], st[d]));
        em_.store(em_.element_ptr(ptrs_[static_cast<size_t>(s.param)], s.dtype, off), s.dtype, {v});
      }
    });
  }
}

// Scans elements [j_begin, j_end) of the row at `row` (its coordinates but the last) from
// carry0, storing every output when `store`; returns carry0 (op) the elements' total.
Value* ScanLowering::scan_row(const std::vector<Value*>& row, Value* j_begin, Value* j_end,
                              Value* carry0, bool vector, bool store, int items) {
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
  const int I = std::max(1, items);
  // Vector rows load a step ahead: the next step's vectors are issued before this step's
  // scans and stores, held in `ahead` between the rounds (a vector past the row is clamped
  // onto its last: in bounds, from cache), so loads are in flight while the block waits at
  // its barriers. The first step's vectors load before the loop, on rows with elements.
  const bool prefetch = vector && !row_loads_.empty();
  std::vector<std::vector<Value*>> ahead;  // per chunk of the step, per row load: its slot
  auto load_step = [&](Value* c_base) {
    std::vector<std::vector<Value*>> step;
    for (int ci = 0; ci < I; ++ci) {
      step.push_back(load_vectors(
          row, chunk_at(row, b_.CreateAdd(c_base, i64(int64_t{ci} * chunk)), j_end, true)));
    }
    return step;
  };
  auto hold = [&](const std::vector<std::vector<Value*>>& step) {
    for (size_t ci = 0; ci < step.size(); ++ci) {
      for (size_t i = 0; i < step[ci].size(); ++i) b_.CreateStore(step[ci][i], ahead[ci][i]);
    }
  };
  if (prefetch) {
    when(b_.CreateICmpSLT(j_begin, j_end), [&] {
      std::vector<std::vector<Value*>> first = load_step(j_begin);
      for (const std::vector<Value*>& vs : first) {
        ahead.emplace_back();
        for (Value* v : vs) ahead.back().push_back(slot_of(v->getType(), "scan.ahead"));
      }
      hold(first);
    });
  }
  // Each step of the loop covers `items` chunks: every chunk's loads and body values first
  // (items x vec elements in flight per thread), then the chunks' scans in order.
  loop(j_begin, j_end, i64(chunk * I), [&](Value* c_base) {
    std::vector<std::vector<Value*>> held;
    if (prefetch) {
      for (const std::vector<Value*>& slots : ahead) {
        held.emplace_back();
        for (Value* s : slots) held.back().push_back(load_slot(s));
      }
      hold(load_step(b_.CreateAdd(c_base, i64(chunk * I))));
    }
    std::vector<Chunk> chunks;
    for (int ci = 0; ci < I; ++ci) {
      chunks.push_back(load_chunk(row, b_.CreateAdd(c_base, i64(int64_t{ci} * chunk)), j_end,
                                  vector, prefetch ? &held[static_cast<size_t>(ci)] : nullptr));
    }
    for (Chunk& ch : chunks) {
      // 1, 2. The thread's elements, then across the warp.
      Value* x = scan_warp(ch);
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
        barrier();
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
      for (int k = 0; k < V; ++k) ch.pts[k].scan = em_.combine(op_, prefix, ch.incl[k]);
      store_chunk(row, ch, j_end, vector);
    }
  });
  return get(carry);
}

// One tile of `items` chunks from c0, scanned within itself in registers: every chunk's loads
// and body values, each chunk scanned within the warp, every chunk's warp totals through shared
// memory at once (one barrier). An element's value before the tile's carry is (the tile's
// earlier chunks and warps (op) the warp's lanes before (op) the thread's elements up to it).
std::vector<ScanLowering::Chunk> ScanLowering::load_tile(const std::vector<Value*>& row, Value* c0,
                                                         Value* j_end, bool vector, int items) {
  std::vector<Chunk> chunks;
  for (int ci = 0; ci < std::max(1, items); ++ci) {
    chunks.push_back(load_chunk(row, b_.CreateAdd(c0, i64(ci * cfg_.chunk())), j_end, vector));
  }
  return chunks;
}

ScanLowering::TileScan ScanLowering::scan_tile(std::vector<Chunk>& chunks) {
  const int G = cfg_.group, V = cfg_.vec;
  const int warps = G / 32;
  const int I = static_cast<int>(chunks.size());
  Value* identity = em_.identity(op_, scan_stmt_->value.type());
  Value* lane = b_.CreateURem(tid_, i64(32));
  Value* warp = b_.CreateUDiv(b_.CreateURem(tid_, i64(G)), i64(32));
  std::vector<Value*> before(static_cast<size_t>(I));
  for (int ci = 0; ci < I; ++ci) {
    Value* x = scan_warp(chunks[static_cast<size_t>(ci)]);
    Value* b = shfl(llvm::Intrinsic::nvvm_shfl_sync_up_f32, llvm::Intrinsic::nvvm_shfl_sync_up_i32,
                    x, b_.getInt32(1), 0);
    before[ci] = b_.CreateSelect(b_.CreateICmpEQ(lane, i64(0)), identity, b);
    when(b_.CreateICmpEQ(lane, i64(31)), [&] {
      b_.CreateStore(b_.CreateBitCast(x, b_.getInt32Ty()),
                     b_.CreateInBoundsGEP(b_.getInt32Ty(), tile_smem_,
                                          b_.CreateAdd(i64(int64_t{ci} * warps), warp)));
    });
  }
  barrier();
  // Each chunk's warp totals, lane w holding warp w's: scanned across the lanes (in order,
  // as a warp's threads are), so that each warp reads the fold of the warps before it and
  // the chunk's total; the chunks' totals fold in order.
  TileScan tile;
  Value* running = identity;
  for (int ci = 0; ci < I; ++ci) {
    Value* mine = b_.CreateICmpULT(lane, i64(warps));
    Value* at = b_.CreateAdd(i64(int64_t{ci} * warps), b_.CreateSelect(mine, lane, i64(0)));
    Value* tw = b_.CreateBitCast(
        b_.CreateLoad(b_.getInt32Ty(), b_.CreateInBoundsGEP(b_.getInt32Ty(), tile_smem_, at)),
        acc_type_);
    Value* x = scan_lanes(b_.CreateSelect(mine, tw, identity), lane);
    // Warp w's exclusive prefix: lane w - 1's inclusive one (the identity for warp 0).
    Value* src = b_.CreateTrunc(b_.CreateSub(warp, i64(1)), b_.getInt32Ty());
    Value* prev = shfl(llvm::Intrinsic::nvvm_shfl_sync_idx_f32,
                       llvm::Intrinsic::nvvm_shfl_sync_idx_i32, x, src, 31);
    prev = b_.CreateSelect(b_.CreateICmpEQ(warp, i64(0)), identity, prev);
    Value* total = shfl(llvm::Intrinsic::nvvm_shfl_sync_idx_f32,
                        llvm::Intrinsic::nvvm_shfl_sync_idx_i32, x, b_.getInt32(warps - 1), 31);
    Value* earlier = ci == 0 ? prev : em_.combine(op_, running, prev);
    running = ci == 0 ? total : em_.combine(op_, running, total);
    Chunk& ch = chunks[static_cast<size_t>(ci)];
    Value* prefix = em_.combine(op_, earlier, before[ci]);
    std::vector<Value*> partial;
    for (int k = 0; k < V; ++k) partial.push_back(em_.combine(op_, prefix, ch.incl[k]));
    tile.partial.push_back(partial);
    tile.loaded.push_back(ch.loaded);
  }
  tile.total = running;
  return tile;
}

// Stores every output at the tile's elements: an element's value is carry (op) its partial.
void ScanLowering::store_tile(const std::vector<Value*>& row, Value* c0, Value* j_end, bool vector,
                              const TileScan& tile, Value* carry) {
  const int64_t chunk = cfg_.chunk();
  for (size_t ci = 0; ci < tile.partial.size(); ++ci) {
    Chunk ch =
        chunk_at(row, b_.CreateAdd(c0, i64(static_cast<int64_t>(ci) * chunk)), j_end, vector);
    if (vector) lanes_from(ch, tile.loaded[ci]);
    for (int k = 0; k < cfg_.vec; ++k) {
      ch.pts[static_cast<size_t>(k)].scan = em_.combine(op_, carry, tile.partial[ci][k]);
    }
    store_chunk(row, ch, j_end, vector);
  }
}

// Tiles of one step held in registers, tile t from `first` while t < count, pipelined by one
// tile: each round loads tile B (this round's ticket), scans it within itself and publishes
// its total at once; then waits for the carry of the tile A it loaded the round before, takes
// the next ticket (its round trip under A's stores) and stores A. So a tile's total is
// published one load after its ticket, as when a block held one tile, and the look-back for
// A runs a load later than it did then, when the tiles before A have published their totals.
// A's stores evaluate the epilogue at fresh points: its reads other than the row loads kept
// with A (a broadcast, any read on the scalar path) are issued again there.
// Measured on an H200 (bench/results/2026-11-27-h200-held-scan): one 64M-element f32 row
// 217.8 -> 203.2 us, 8 rows of 4M 98.5 -> 82.8, bf16 4 x 16M 145.0 -> 121.1 (holding one
// tile, its blocks waited for the records, then loaded, in turns). Polling every record of
// the fold at once, instead of level by level, was no faster (201.2 us on the 64M row, within
// the runs' spread; slower on rows of 16M, 8 x 4M, 64 x 1M and 64M - 1). Measured slower too,
// against this order in the same runs (bench/results/2026-11-27-h200-scan-overlap, calls 1-2):
// issuing B's loads before A's look-back and scanning B after A's stores, so that the loads
// are in flight during the polls but B's total waits for them (one 64M row 197.7 -> 211.3 us,
// 8 x 8M 156.6 -> 165.9, bf16 4 x 16M 119.7 -> 132.3, 64M - 1 on the scalar path 379.5 ->
// 612.5; only 64 x 1M faster, 164.3 -> 160.0); taking the ticket before the look-back (its
// round trip under the polls: 64M 208-209 us, 8 x 8M 164-165) or at the round's start (207-208,
// 160); polls 32 ns apart instead of 100 (as the ticket before the look-back). Tickets taken
// once the carry is known hand tiles to blocks in the order they finish their look-backs.
void ScanLowering::held_tiles(const std::vector<Value*>& coord, Value* first, Value* count,
                              bool vector, int items, BasicBlock* out) {
  const int64_t step = cfg_.chunk() * items;
  // The held tile A (held, its index and its scan) and this round's B, carried in slots: a
  // TileScan of slots, stored and loaded whole.
  Value* held = var(b_.getFalse(), "held");
  Value* tile_a = slot_of(b_.getInt64Ty(), "tile.a");
  Value* tile_b = var(first, "tile.b");
  TileScan a_slots, b_slots;
  // f(each value of x) in one order, the results in the same shape.
  auto map = [](const TileScan& x, const std::function<Value*(Value*)>& f) {
    TileScan y;
    y.total = f(x.total);
    for (size_t ci = 0; ci < x.partial.size(); ++ci) {
      y.partial.emplace_back();
      y.loaded.emplace_back();
      for (Value* v : x.partial[ci]) y.partial[ci].push_back(f(v));
      for (Value* v : x.loaded[ci]) y.loaded[ci].push_back(f(v));
    }
    return y;
  };
  auto load_all = [&](const TileScan& slots) {
    return map(slots, [&](Value* s) { return load_slot(s); });
  };
  auto flatten = [](const TileScan& x) {  // the values in map's order
    std::vector<Value*> all{x.total};
    for (size_t ci = 0; ci < x.partial.size(); ++ci) {
      all.insert(all.end(), x.partial[ci].begin(), x.partial[ci].end());
      all.insert(all.end(), x.loaded[ci].begin(), x.loaded[ci].end());
    }
    return all;
  };
  auto store_all = [&](const TileScan& values, const TileScan& slots) {
    const std::vector<Value*> v = flatten(values), to = flatten(slots);
    for (size_t i = 0; i < v.size(); ++i) b_.CreateStore(v[i], to[i]);
  };
  auto* head = BasicBlock::Create(m_.getContext(), "held.next", fn_);
  auto* round = BasicBlock::Create(m_.getContext(), "held.round", fn_);
  auto* load_b = BasicBlock::Create(m_.getContext(), "held.load", fn_);
  auto* loaded = BasicBlock::Create(m_.getContext(), "held.loaded", fn_);
  auto* store_a = BasicBlock::Create(m_.getContext(), "held.store", fn_);
  auto* alone = BasicBlock::Create(m_.getContext(), "held.alone", fn_);
  auto* tail = BasicBlock::Create(m_.getContext(), "held.tail", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  Value* tb = b_.CreateLoad(b_.getInt64Ty(), tile_b);
  Value* has_b = b_.CreateICmpULT(tb, count);
  Value* has_a = b_.CreateLoad(b_.getInt1Ty(), held);
  b_.CreateCondBr(b_.CreateOr(has_a, has_b), round, out);
  b_.SetInsertPoint(round);
  b_.CreateCondBr(has_b, load_b, loaded);

  // B: loaded, scanned within itself, its total published at once, kept in b_slots.
  b_.SetInsertPoint(load_b);
  std::vector<Chunk> chunks = load_tile(coord, b_.CreateMul(tb, i64(step)), L_, vector, items);
  TileScan scan = scan_tile(chunks);
  for (TileScan* t : {&a_slots, &b_slots}) {
    *t = map(scan, [&](Value* v) { return slot_of(v->getType(), "held.value"); });
  }
  publish_total(tb, scan.total);
  store_all(scan, b_slots);
  b_.CreateBr(loaded);

  // A: its carry, then its stores; thread 0 takes the next ticket once the carry is known.
  b_.SetInsertPoint(loaded);
  Value* next = var(b_.getInt32(0), "next");
  auto take_ticket = [&] {
    when(b_.CreateICmpEQ(tid_, i64(0)), [&] { b_.CreateStore(ticket(), next); });
  };
  b_.CreateCondBr(has_a, store_a, alone);
  b_.SetInsertPoint(store_a);
  Value* ta = b_.CreateLoad(b_.getInt64Ty(), tile_a);
  TileScan a = load_all(a_slots);
  Value* carry = carry_of(ta, a.total);
  take_ticket();
  store_tile(coord, b_.CreateMul(ta, i64(step)), L_, vector, a, carry);
  b_.CreateBr(tail);
  b_.SetInsertPoint(alone);
  take_ticket();
  b_.CreateBr(tail);

  // B becomes A; thread 0's ticket reaches every thread after a barrier.
  b_.SetInsertPoint(tail);
  when(b_.CreateICmpEQ(tid_, i64(0)),
       [&] { b_.CreateStore(b_.CreateLoad(b_.getInt32Ty(), next), tile_slot(0)); });
  b_.CreateStore(has_b, held);
  b_.CreateStore(tb, tile_a);
  store_all(load_all(b_slots), a_slots);
  barrier();
  b_.CreateStore(b_.CreateZExt(b_.CreateLoad(b_.getInt32Ty(), tile_slot(0)), b_.getInt64Ty()),
                 tile_b);
  b_.CreateBr(head);
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
