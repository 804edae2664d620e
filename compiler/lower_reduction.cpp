// Lowering a scheduled reduction kernel to LLVM IR.
//
// A reduction kernel has rows O (sk.space) and a reduced extent R. Its placed statements are
// reductions `t[o] = op(body, r)`, row-level outputs `t[o] = f(o)` and element-level outputs
// `t[o, r] = f(o, r)`; pointwise temporaries are inlined into them. Algorithm:
//  1. Canonicalize: every statement's index variables are renamed by the part they play
//     (schedule roles): row dimension d becomes `_o<d>`, the reduced index `_r`. A load of a
//     reduction's result is then "the value of that reduction for this row".
//  2. Passes: statements are split into passes over the reduced index; a pass ends before a
//     statement that needs a reduction of the same pass. Row-level outputs sit between
//     passes. (softmax: max | exp-sum | store: three passes.)
//  3. Fusions, for rows that loop in fused variants (ReductionConfig::fuse; a held row costs
//     nothing to walk again, and split rows keep the passes: their records hold one word per
//     reduction; unfused variants keep the passes too, and compile.cpp adds fused ones only
//     where something fuses): a sum or mean
//     reduction F (f32) joins the pass of an earlier f32 reduction L, its lead, when
//     everything else F reads is known before L's pass and L is not itself a follower, and
//       - online max+sum: L is a max and F's body is f * exp(A - L) (or exp(A - g(L)), g the
//         guard where(abs(L) > FLT_MAX, 0.0, L) of logsumexp), factors in any order and
//         divisors allowed, with A structurally equal to L's body and no f reading L (softmax,
//         logsumexp). Each thread keeps (m, s); per chunk m' = max(m, the chunk's values),
//         s = s * exp(m - m') + the chunk's terms taken against m', s compensated (Kahan, its
//         compensation rescaled with it). Equal maxima keep s and a
//         max of -inf rescales to 0, so exp(-inf - -inf) never turns a sum into NaN that the
//         two-pass sum would not be (reduction_math.h). Threads' pairs merge alike.
//       - Welford: L is a sum or mean with body X and F's body is D * D, D = X - mean, the two
//         factors structurally equal and mean either L / R (R the reduced extent, as a symbol
//         or its fixed value) or the mean L itself (layernorm, mean_var). L keeps (n, mean,
//         M2) in place of its sum; L's value is n * mean, F's is M2. Per chunk the thread
//         sums x - k and (x - k)^2, k its running mean (the chunk's first value before any),
//         and merges that chunk's state with Chan's formula, the mean and M2 compensated
//         (Kahan): one division per chunk, where Welford's update per element would divide
//         per element. Threads' states merge with Chan's formula.
//     A lead's result must be read as accumulated (an output narrower than f32 is read back
//     rounded: no fusion). Anything else keeps its passes. Error against two-pass: an online
//     sum's terms are the same exp(x - max), taken against a smaller or equal max; each
//     rescale (at most one per chunk of >= 4 elements per thread, one per merge) adds about
//     2^-22 relative (ex2.approx), no more than the sum's own rounding of those 4 elements
//     (2^-24 each). A Welford M2's relative error grows at most like eps * |mean| / stddev
//     (the shifts and the merges' deltas), where the textbook one-pass formula's grows like
//     its square. The compensation keeps the running sums from drifting with the number of
//     chunks: in f32 (tests/unit/compiler_reduction_math.cpp's CPU model of these loops), 8
//     threads over 3M elements of 3 + N(0, 1), relative errors 3.1e-8 (online sum) and
//     5.2e-8 (M2), against 4.0e-6 and 7.2e-6 uncompensated. Counts are f32, exact up to 2^24
//     elements.
//  4. Row kernels (the reduced index is contiguous): `group` threads own one row, thread l
//     the elements (c * group + l) * vec + v. When R <= group * vec * items (checked at run
//     time) the row is persistent: the `items` vectors are loaded once and every pass reuses
//     them from registers. Otherwise each pass (of step 3's looped passes) loops over the
//     row in chunks of that size, re-reading it; its f32 sums (fused states' included) are
//     compensated (Kahan) across chunks. When R % vec == 0 the vectors are 16-byte
//     loads and stores; otherwise scalar accesses, `group` apart, 4 per iteration.
//     Out-of-range elements load a clamped (valid) address and contribute the reduction's
//     identity. The grid covers the rows (no loop over rows). In a persistent row only the
//     packed loads stay live between passes: each pass widens and recomputes from them
//     (rematerialize), since registers, not instructions, bound the rows in flight per SM.
//     Split rows (few, very long ones) spread each row over many blocks: emit_split.
//  4b. Staging (cfg.stage, looped rows whose R is a multiple of vec): the packed vectors of
//     each row-varying input that more than one looped pass reads (plan_stage) are kept in
//     dynamic shared memory. The first pass that reads an input stores each vector it loads
//     from global memory; later passes load it from shared memory. A thread reads back only
//     the vectors it stored itself (every pass walks the row with the same element -> thread
//     mapping), so no barrier is needed. The kernel runs this path only when the launch gave
//     it enough dynamic shared memory (%dynamic_smem_size): otherwise it loops unstaged.
//  5. Outer kernels (the reduced index is strided): block / group threads along the rows, each
//     owning `vec` consecutive rows (the contiguous index), and `group` threads along the
//     reduced index, each with `items` steps in flight.
//  6. Combining: row kernels reduce across a row's threads with warp butterflies (every lane
//     ends with the same value), then across warps through shared memory (each pass has its
//     own slots: one barrier per pass), where every thread folds the warps' partials in warp
//     order; outer kernels fold the `group` partials in order through shared memory. The
//     result is deterministic: it does not depend on timing. A fused state (step 3) merges
//     lower lane first in the butterflies, since its merge is not symmetric (fma contraction
//     alone breaks symmetry), and its warps fold in a loop.
// Accumulators are f32 (i32 for integer bodies); half types widen on load.
#include "compiler/lower_reduction.h"

#include <fmt/format.h>
#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <limits>
#include <set>
#include <unordered_map>

#include "compiler/emit.h"
#include "compiler/plan.h"
#include "compiler/reduction_math.h"

namespace kiln {
namespace {

using llvm::BasicBlock;
using llvm::Type;
using llvm::Value;

const char* kReduced = "_r";
const int kUnalignedItems = 4;
std::string row_var(int d) {
  return fmt::format("_o{}", d);
}

// How a reduction of a looped row joins the pass of an earlier one, its lead (step 3).
enum class Fusion { none, online, welford };

// A placed statement after canonicalization.
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

bool uses(const std::vector<std::string>& idx, const std::string& v) {
  return std::find(idx.begin(), idx.end(), v) != idx.end();
}

// Whether canonical indices name a row dimension (`_o<d>`).
bool uses_row(const std::vector<std::string>& idx) {
  return std::any_of(idx.begin(), idx.end(), [](const std::string& v) { return v != kReduced; });
}

// a / b with b the same along the reduced index becomes a * (1 / b): the reciprocal is
// computed once per row instead of once per element (LLVM merges the identical divisions of
// a thread's elements). The product differs from the quotient by at most about 1 ulp. Both
// walks are memoized: inlining shares subexpressions, so the expression is a DAG.
class DivisionHoister {
 public:
  Expr run(const Expr& e) {
    if (auto it = rewritten_.find(e.ptr().get()); it != rewritten_.end()) return it->second;
    Expr out = map_children(e, [&](const Expr& c) { return run(c); });
    if (const Binary* d = out.as<Binary>(); d && d->op == BinaryOp::div &&
                                            out.type() == DType::f32 && varies(wrap(d->a)) &&
                                            !varies(wrap(d->b))) {
      Expr one = make_const(1.0, DType::f32, out.loc());
      out = make_binary(BinaryOp::mul, wrap(d->a),
                        make_binary(BinaryOp::div, one, wrap(d->b), out.loc()), out.loc());
    }
    rewritten_.emplace(e.ptr().get(), out);
    return out;
  }

 private:
  // Whether e reads the reduced index (directly or through a load).
  bool varies(const Expr& e) {
    if (auto it = varies_.find(e.ptr().get()); it != varies_.end()) return it->second;
    bool v = false;
    if (const Load* l = e.as<Load>()) v = uses(l->indices, kReduced);
    if (const IndexRef* r = e.as<IndexRef>()) v = r->name == kReduced;
    for_each_child(e, [&](const Expr& c) { v = varies(c) || v; });
    varies_.emplace(e.ptr().get(), v);
    return v;
  }

  std::unordered_map<const ExprNode*, Expr> rewritten_;
  std::unordered_map<const ExprNode*, bool> varies_;
};

// ---- fusions for looped rows (step 3) ------------------------------------------------------

// Whether e loads the result of reduction r for its own row.
bool is_result(const Expr& e, const Item& r) {
  const Load* l = e.as<Load>();
  return l && l->tensor == r.target && l->indices == r.indices;
}

// Whether e is where(abs(M) > FLT_MAX, 0.0, M), M the result of r: r's result with an
// infinite max read as 0, the guard that makes logsumexp of a row at -inf give -inf (as torch
// does) instead of NaN (docs/language.md). A sum of exp(A - guard(M)) follows a running max
// as exp(A - M) does: against a max of -inf its terms are exp(-inf - 0) = 0, which rescale
// keeps at 0, and against a finite max guard(M) is M.
bool is_guarded_result(const Expr& e, const Item& r) {
  const Select* w = e.as<Select>();
  if (!w || !is_result(wrap(w->b), r)) return false;
  const Const* zero = wrap(w->a).as<Const>();
  const Binary* gt = wrap(w->cond).as<Binary>();
  if (!zero || zero->value != 0.0 || !gt || gt->op != BinaryOp::gt) return false;
  const Unary* abs = wrap(gt->a).as<Unary>();
  const Const* big = wrap(gt->b).as<Const>();
  return abs && abs->op == UnaryOp::abs && is_result(wrap(abs->a), r) && big &&
         static_cast<float>(big->value) == std::numeric_limits<float>::max();
}

// Whether e reads tensor t anywhere (the expression is a DAG: each node is visited once).
bool reads(const Expr& e, const std::string& t) {
  std::set<const ExprNode*> seen;
  std::function<bool(const Expr&)> walk = [&](const Expr& x) {
    if (!seen.insert(x.ptr().get()).second) return false;
    if (const Load* l = x.as<Load>(); l && l->tensor == t) return true;
    bool found = false;
    for_each_child(x, [&](const Expr& c) { found = found || walk(c); });
    return found;
  };
  return walk(e);
}

// Whether e is f * exp(A - M) (or exp(A - guard(M)), is_guarded_result), factors in any
// order and divisors allowed, with A M's body and no f reading M: then e taken against M + d is e *
// exp(-d), so a sum of such terms can follow a running max by rescaling.
bool scales_with_max(const Expr& e, const Item& m) {
  if (const Unary* u = e.as<Unary>(); u && u->op == UnaryOp::exp) {
    const Binary* d = wrap(u->a).as<Binary>();
    return d && d->op == BinaryOp::sub &&
           (is_result(wrap(d->b), m) || is_guarded_result(wrap(d->b), m)) && wrap(d->a) == m.value;
  }
  const Binary* b = e.as<Binary>();
  if (!b || (b->op != BinaryOp::mul && b->op != BinaryOp::div)) return false;
  if (scales_with_max(wrap(b->a), m) && !reads(wrap(b->b), m.target)) return true;
  return b->op == BinaryOp::mul && scales_with_max(wrap(b->b), m) && !reads(wrap(b->a), m.target);
}

// Whether e is the reduced extent R: its symbol, or its value when fixed.
bool is_extent(const Expr& e, const Dim& R) {
  if (const SymRef* s = e.as<SymRef>()) return !R.is_fixed() && s->name == R.name();
  if (const Const* c = e.as<Const>()) return R.is_fixed() && c->value == double(R.value());
  return false;
}

// Whether e is (X - mean) * (X - mean), the two factors structurally equal, X the body of
// reduction s and mean its mean over the row: s / R for a sum, s itself for a mean.
bool squares_deviation(const Expr& e, const Item& s, const Dim& R) {
  const Binary* sq = e.as<Binary>();
  if (!sq || sq->op != BinaryOp::mul || !(wrap(sq->a) == wrap(sq->b))) return false;
  const Binary* dev = wrap(sq->a).as<Binary>();
  if (!dev || dev->op != BinaryOp::sub || !(wrap(dev->a) == s.value)) return false;
  Expr mean = wrap(dev->b);
  if (s.op == ReduceOp::mean) return is_result(mean, s);
  const Binary* q = mean.as<Binary>();
  return s.op == ReduceOp::sum && q && q->op == BinaryOp::div && is_result(wrap(q->a), s) &&
         is_extent(wrap(q->b), R);
}

// Finds the reductions that looped rows compute alongside an earlier one (the header's
// rules) and builds p.looped from p.passes.
void fuse_for_looped_rows(Program& p, const std::vector<const TensorDecl*>& params, const Dim& R) {
  std::vector<int> pass_of(p.items.size());
  for (size_t k = 0; k < p.passes.size(); ++k) {
    for (int i : p.passes[k]) pass_of[i] = static_cast<int>(k);
  }
  // A result that later passes read exactly as the accumulator holds it (an output in a
  // narrower type is read back rounded).
  auto exact = [&](const Item& r) { return r.param < 0 || params[r.param]->dtype == DType::f32; };
  auto f32_reduction = [](const Item& r) {
    return r.kind == Item::reduction && r.type == DType::f32;
  };
  for (size_t i = 0; i < p.items.size(); ++i) {
    Item& f = p.items[i];
    if (!f32_reduction(f) || (f.op != ReduceOp::sum && f.op != ReduceOp::mean)) continue;
    for (int l : f.reads) {
      const Item& lead = p.items[l];
      if (!f32_reduction(lead) || !exact(lead) || lead.fusion != Fusion::none) continue;
      // Everything else it reads must be known when the lead's pass starts.
      bool ready = std::all_of(f.reads.begin(), f.reads.end(),
                               [&](int r) { return r == l || pass_of[r] < pass_of[l]; });
      if (!ready) continue;
      if (lead.op == ReduceOp::max && scales_with_max(f.value, lead)) {
        f.fusion = Fusion::online;
      } else if (squares_deviation(f.value, lead, R)) {
        f.fusion = Fusion::welford;
      } else {
        continue;
      }
      f.lead = l;
      break;
    }
  }
  p.looped = p.passes;
  for (size_t i = 0; i < p.items.size(); ++i) {
    const Item& f = p.items[i];
    if (f.fusion == Fusion::none) continue;
    std::vector<int>& from = p.looped[pass_of[i]];
    from.erase(std::find(from.begin(), from.end(), static_cast<int>(i)));
    std::vector<int>& to = p.looped[pass_of[f.lead]];
    auto at = std::find(to.begin(), to.end(), f.lead) + 1;
    while (at != to.end() && p.items[*at].lead == f.lead) ++at;
    to.insert(at, static_cast<int>(i));
  }
  std::erase_if(p.looped, [](const std::vector<int>& pass) { return pass.empty(); });
}

// `fuse`: whether looped rows fuse (step 3; ReductionConfig::fuse), else p.looped == p.passes.
Program canonicalize(const KernelDef& abi, const ScheduledKernel& sk, bool fuse) {
  const KernelDef& def = sk.def;
  const int rows = static_cast<int>(sk.space.size());
  Inliner inliner(def, [](const Stmt& s) { return !s.value.as<Reduce>(); });
  std::vector<const TensorDecl*> params = abi.params();
  std::map<std::string, int> reduction_item;
  Program p;
  for (const Stmt& s : def.body) {
    auto roles = sk.roles.find(s.target);
    if (roles == sk.roles.end()) continue;  // an inlined temporary
    Rename rename;
    for (const auto& [v, role] : roles->second) {
      internal_check(role >= 0 && role <= rows, "lower_reduction: statement without roles");
      rename[v] = role == rows ? kReduced : row_var(role);
    }
    Item it;
    it.target = s.target;
    for (const auto& v : s.indices) it.indices.push_back(rename.at(v));
    Expr value = DivisionHoister().run(inliner.rewrite(s.value, rename));
    if (const Reduce* r = value.as<Reduce>()) {
      it.kind = Item::reduction;
      it.op = r->op;
      it.type = value.type();
      it.value = wrap(r->body);
    } else {
      it.kind = uses(it.indices, kReduced) ? Item::element_store : Item::row_store;
      it.value = value;
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->name == s.target) it.param = static_cast<int>(i);
    }
    internal_check(it.kind == Item::reduction || it.param >= 0,
                   "lower_reduction: a placed pointwise statement is not an output");
    // Which reductions it reads.
    std::set<const ExprNode*> seen;
    std::function<void(const Expr&)> walk = [&](const Expr& e) {
      if (!seen.insert(e.ptr().get()).second) return;
      if (const Load* l = e.as<Load>()) {
        auto ri = reduction_item.find(l->tensor);
        if (ri != reduction_item.end()) it.reads.insert(ri->second);
      }
      for_each_child(e, walk);
    };
    walk(it.value);
    if (it.kind == Item::reduction) reduction_item[s.target] = static_cast<int>(p.items.size());
    p.items.push_back(std::move(it));
  }
  // Passes.
  std::vector<int> current;
  std::set<int> in_current;
  auto close = [&] {
    if (!current.empty()) p.passes.push_back(current);
    current.clear();
    in_current.clear();
  };
  for (size_t i = 0; i < p.items.size(); ++i) {
    const Item& it = p.items[i];
    bool needs_current = std::any_of(it.reads.begin(), it.reads.end(),
                                     [&](int r) { return in_current.count(r) > 0; });
    if (needs_current || it.kind == Item::row_store) close();
    current.push_back(static_cast<int>(i));
    if (it.kind == Item::reduction) in_current.insert(static_cast<int>(i));
    if (it.kind == Item::row_store) close();
  }
  close();
  p.looped = p.passes;
  if (fuse && reduction_shape(sk) == ReductionShape::row) {
    fuse_for_looped_rows(p, params, *sk.reduced);
  }
  return p;
}

// Split row kernels run once per phase: a pass's reductions complete, through the workspace,
// at the start of the next phase, so a phase ends after each pass with reductions. Row stores
// and passes that need no reduction of their own phase share it.
struct SplitPlan {
  std::vector<int> phase_of;   // per pass
  std::map<int, int> slot_of;  // reduction item -> its workspace word in a (row, block) record
  int phases = 0;
  int slots = 0;
};

SplitPlan plan_split(const Program& p) {
  SplitPlan s;
  int phase = 0;
  for (const std::vector<int>& pass : p.passes) {
    s.phase_of.push_back(phase);
    bool reduces = false;
    for (int i : pass) {
      if (p.items[i].kind != Item::reduction) continue;
      s.slot_of[i] = s.slots++;
      reduces = true;
    }
    phase += reduces;
  }
  s.phases = phase + 1;  // the last one stores what the last reductions give
  return s;
}

// Staging (step 4b): the inputs kept in a row's dynamic shared memory area, by load key
// (load_key). A row's area holds, for each staged input in turn (widest elements first), R
// elements of its stored type; rows of a block follow each other.
struct StagePlan {
  struct Region {
    Load load;             // the input's load (canonical indices)
    std::set<int> passes;  // the passes that read it; the first loads it and stores it
    int64_t offset = 0;    // bytes per element of the regions before it: it starts at R * offset
  };
  std::map<std::string, Region> regions;
  int64_t bytes_per_element = 0;  // of all regions: a row's area is R * bytes_per_element
};

// The key of a load among a group's loads: its tensor and canonical indices.
std::string load_key(const Load& ld) {
  std::string key = ld.tensor;
  for (const auto& i : ld.indices) key += "," + i;
  return key;
}

// Inputs read as row vectors (the row's own elements along the contiguous reduced index) by
// two or more of the looped passes (Program::looped: staging applies to rows that loop).
StagePlan plan_stage(const Program& p, const std::vector<const TensorDecl*>& params) {
  std::map<std::string, std::pair<std::set<int>, Load>> reads;
  for (size_t pi = 0; pi < p.looped.size(); ++pi) {
    std::set<const ExprNode*> seen;
    std::function<void(const Expr&)> walk = [&](const Expr& e) {
      if (!seen.insert(e.ptr().get()).second) return;
      if (const Load* ld = e.as<Load>()) {
        auto param = std::find_if(params.begin(), params.end(),
                                  [&](const TensorDecl* t) { return t->name == ld->tensor; });
        if (param != params.end() && (*param)->role == TensorRole::input && !ld->indices.empty() &&
            ld->indices.back() == kReduced && uses_row(ld->indices)) {
          auto& [passes, load] = reads[load_key(*ld)];
          passes.insert(static_cast<int>(pi));
          load = *ld;
        }
        return;
      }
      for_each_child(e, walk);
    };
    for (int i : p.looped[pi]) {
      if (p.items[i].kind != Item::row_store) walk(p.items[i].value);
    }
  }
  std::vector<std::pair<int, std::string>> order;  // (-element size, key)
  for (const auto& [key, r] : reads) {
    if (r.first.size() >= 2) order.emplace_back(-static_cast<int>(size_of(r.second.stored)), key);
  }
  std::sort(order.begin(), order.end());
  StagePlan s;
  for (const auto& [neg_size, key] : order) {
    const auto& [passes, load] = reads.at(key);
    s.regions[key] = {load, passes, s.bytes_per_element};
    s.bytes_per_element += -neg_size;
  }
  return s;
}

// One element being computed: clamped (always valid) coordinates for loads, and whether it
// is really in range.
struct Point {
  std::vector<Value*> o;  // row coordinates (i64)
  Value* r = nullptr;     // reduced coordinate (i64); null at row level
  Value* ok = nullptr;    // i1
  int slot = 0;           // which of the thread's rows it belongs to (outer: 0..vec-1)
  ValueMemo memo;
};

// `vec` points whose `vary` coordinate is consecutive; `shared` when all their other
// coordinates are equal, `vector` when the first is a multiple of vec (16-byte accesses).
struct Group {
  std::vector<Point> pts;
  bool shared = false;
  bool vector = false;
  std::map<std::string, std::vector<Value*>> loads;  // by access key: a vector or a scalar
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
  ReductionLowering(llvm::Module& m, const KernelDef& abi, const ScheduledKernel& sk,
                    const ReductionConfig& cfg)
      : m_(m),
        ctx_(m.getContext()),
        b_(ctx_),
        em_(m, b_),
        math_{b_, em_},
        abi_(abi),
        sk_(sk),
        cfg_(cfg),
        shape_(reduction_shape(sk)),
        params_(abi.params()),
        symbols_(abi.symbols()),
        prog_(canonicalize(abi, sk, cfg.fuse)),
        stage_plan_(plan_stage(prog_, params_)) {
    rank_ = static_cast<int>(sk.space.size());
    vary_ = shape_ == ReductionShape::row ? kReduced : row_var(rank_ - 1);
  }

  void run(const std::string& entry, VariantLayout* layout) {
    if (shape_ == ReductionShape::outer && rank_ == 0) {
      throw InternalError("lower_reduction: an outer reduction without rows");
    }
    if (cfg_.split && shape_ == ReductionShape::row && cfg_.group != cfg_.block) {
      throw InternalError("lower_reduction: a split row config with group != block");
    }
    if (cfg_.fuse && (shape_ != ReductionShape::row || cfg_.split)) {
      throw InternalError("lower_reduction: a fused config of an outer or split kernel");
    }
    if (cfg_.stage && (shape_ != ReductionShape::row || cfg_.split)) {
      throw InternalError("lower_reduction: a staging config of an outer or split kernel");
    }
    fn_ = em_.declare_kernel(abi_, entry, cfg_.block, cfg_.split);
    for (size_t i = 0; i < params_.size(); ++i) ptrs_.push_back(fn_->getArg(i));
    for (size_t i = 0; i < symbols_.size(); ++i) syms_.push_back(fn_->getArg(params_.size() + i));
    if (cfg_.split) {
      workspace_ = fn_->getArg(params_.size() + symbols_.size());
      phase_ = fn_->getArg(params_.size() + symbols_.size() + 1);
    }
    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn_));
    make_shared_memory();
    tid_ = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
    bid_ = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
    nblocks_ = em_.sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x);
    rows_ = i64(1);
    for (const Dim& d : sk_.space) {
      row_extents_.push_back(dim_value(d));
      rows_ = b_.CreateMul(rows_, row_extents_.back(), "rows");
    }
    R_ = dim_value(*sk_.reduced);
    exit_ = BasicBlock::Create(ctx_, "exit", fn_);

    const int V = cfg_.vec;
    Value* vec_ok = b_.getFalse();
    if (V > 1) {
      Value* along = shape_ == ReductionShape::row ? R_ : row_extents_.back();
      vec_ok = b_.CreateICmpEQ(b_.CreateURem(along, i64(V)), i64(0), "vec.ok");
    }
    if (cfg_.split && shape_ == ReductionShape::outer) {
      emit_outer_split(vec_ok);
    } else if (cfg_.split) {
      emit_split(vec_ok);
    } else if (shape_ == ReductionShape::row) {
      Value* fits = b_.CreateICmpULE(R_, i64(cfg_.capacity()), "fits");
      branch_rows(fits, vec_ok);
    } else {
      branch2(vec_ok, [&](bool vector) { emit_outer(vector); });
    }
    b_.SetInsertPoint(exit_);
    b_.CreateRetVoid();
    if (layout) *layout = layout_;
  }

 private:
  // ---- structure --------------------------------------------------------------------------

  template <class F>
  void branch2(Value* cond, F&& body) {
    BasicBlock* yes = BasicBlock::Create(ctx_, "vec", fn_);
    BasicBlock* no = BasicBlock::Create(ctx_, "scalar", fn_);
    b_.CreateCondBr(cond, yes, no);
    b_.SetInsertPoint(yes);
    body(true);
    b_.SetInsertPoint(no);
    body(false);
  }

  // Persistent rows need R % vec == 0 (vector accesses) when vec > 1; other rows loop.
  void branch_rows(Value* fits, Value* vec_ok) {
    BasicBlock* persistent = BasicBlock::Create(ctx_, "persistent", fn_);
    BasicBlock* looped = BasicBlock::Create(ctx_, "looped", fn_);
    b_.CreateCondBr(cfg_.vec > 1 ? b_.CreateAnd(fits, vec_ok) : fits, persistent, looped);
    b_.SetInsertPoint(persistent);
    emit_rows(true, cfg_.vec > 1);
    b_.SetInsertPoint(looped);
    if (cfg_.vec == 1) {
      emit_rows(false, false);
      return;
    }
    branch2(vec_ok, [&](bool vector) {
      if (vector && cfg_.stage && !stage_plan_.regions.empty()) {
        branch_staged();
      } else {
        emit_rows(false, vector);
      }
    });
  }

  // Looped vector rows of a staging config: staged when the rows of the block fit in the
  // dynamic shared memory of the launch (runtime/manifest.h: the runtime gives R x
  // bytes_per_element x rows per block when the device has it), else unstaged. The check
  // divides, so a huge R cannot overflow it.
  void branch_staged() {
    const int64_t per_row = stage_plan_.bytes_per_element * (cfg_.block / cfg_.group);
    Value* avail = b_.CreateZExt(dynamic_smem_size(), b_.getInt64Ty(), "smem.dynamic");
    Value* fits = b_.CreateICmpULE(R_, b_.CreateUDiv(avail, i64(per_row)), "stage.fits");
    BasicBlock* staged = BasicBlock::Create(ctx_, "staged", fn_);
    BasicBlock* plain = BasicBlock::Create(ctx_, "unstaged", fn_);
    b_.CreateCondBr(fits, staged, plain);
    b_.SetInsertPoint(staged);
    emit_rows(false, true, true);
    b_.SetInsertPoint(plain);
    emit_rows(false, true);
  }

  // The block-uniform loop of an outer kernel over its row groups: calls body(first row of
  // the block) and ends in exit_. (Row kernels do not loop: the grid covers their rows.)
  template <class F>
  void block_loop(int64_t per_block, F&& body) {
    Value* start = b_.CreateMul(bid_, i64(per_block));
    counted_loop(
        {"rows", "row", nullptr, "first"}, start, rows_,
        [&] { return b_.CreateMul(nblocks_, i64(per_block)); }, {},
        [&](Value* first, const std::vector<Value*>&) {
          body(first);
          return std::vector<Value*>{};
        },
        Test::top, exit_);
  }

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

  // The loop of every kernel: for (i = begin; i < end; i += step()), step() emitted at the
  // latch, with values carried around it: body(i, their values) emits an iteration and returns
  // their next values. Not unrolled (no_unroll). Returns the carried values after the loop (at
  // the top test: the phis; at the bottom test: the last iteration's), with the insert point
  // in the block after it: `exit` when given, else a new one.
  std::vector<Value*> counted_loop(
      const LoopNames& names, Value* begin, Value* end, llvm::function_ref<Value*()> step,
      const std::vector<Carried>& carried,
      llvm::function_ref<std::vector<Value*>(Value*, const std::vector<Value*>&)> body,
      Test test = Test::top, BasicBlock* exit = nullptr) {
    BasicBlock* pre = b_.GetInsertBlock();
    BasicBlock* header = BasicBlock::Create(ctx_, names.header, fn_);
    BasicBlock* work = test == Test::top ? BasicBlock::Create(ctx_, names.body, fn_) : header;
    BasicBlock* done = exit ? exit : BasicBlock::Create(ctx_, names.done, fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* index = b_.CreatePHI(b_.getInt64Ty(), 2, names.index);
    index->addIncoming(begin, pre);
    std::vector<llvm::PHINode*> phis;
    for (const Carried& c : carried) {
      phis.push_back(b_.CreatePHI(c.init->getType(), 2, c.name));
      phis.back()->addIncoming(c.init, pre);
    }
    if (test == Test::top) {
      b_.CreateCondBr(b_.CreateICmpULT(index, end), work, done);
      b_.SetInsertPoint(work);
    }
    std::vector<Value*> next = body(index, std::vector<Value*>(phis.begin(), phis.end()));
    BasicBlock* latch = b_.GetInsertBlock();
    Value* next_index = b_.CreateAdd(index, step());
    index->addIncoming(next_index, latch);
    for (size_t k = 0; k < phis.size(); ++k) phis[k]->addIncoming(next[k], latch);
    if (test == Test::top) {
      no_unroll(b_.CreateBr(header));
    } else {
      no_unroll(b_.CreateCondBr(b_.CreateICmpULT(next_index, end), header, done));
    }
    b_.SetInsertPoint(done);
    return test == Test::top ? std::vector<Value*>(phis.begin(), phis.end()) : next;
  }

  // Row coordinates of flat row `row` (i64), outermost first.
  std::vector<Value*> coords_of(Value* row) {
    std::vector<Value*> o(rank_);
    Value* q = row;
    for (int d = rank_ - 1; d >= 0; --d) {
      o[d] = d == 0 ? q : b_.CreateURem(q, row_extents_[d]);
      if (d > 0) q = b_.CreateUDiv(q, row_extents_[d]);
    }
    return o;
  }

  // ---- row kernels ------------------------------------------------------------------------

  void emit_rows(bool persistent, bool vector, bool staged = false) {
    // Scalar accesses of a vectorized variant (rows with R % vec != 0) take kUnalignedItems
    // elements, `group` apart, per iteration: each scalar access needs an address register of
    // its own, and a kernel's register count is that of its hungriest path.
    const bool unaligned = !vector && cfg_.vec > 1;
    const int T = cfg_.group, V = unaligned ? 1 : cfg_.vec;
    const int64_t rpb = cfg_.block / T;
    const int G = unaligned ? kUnalignedItems : cfg_.items;
    Value* lane = b_.CreateAnd(tid_, i64(T - 1), "lane");
    Value* grp = b_.CreateUDiv(tid_, i64(T), "grp");
    // The grid covers the rows (see the manifest's contract): no loop over rows, so no
    // loop-invariant value (a weight's elements) is hoisted into a register for the whole
    // kernel, and the shared-memory slots of a pass are never reused.
    Value* first = b_.CreateMul(bid_, i64(rpb), "first");
    Value* row = b_.CreateAdd(first, grp, "row");
    Value* valid = b_.CreateICmpULT(row, rows_, "valid");
    Value* rowc = b_.CreateSelect(valid, row, b_.CreateSub(rows_, i64(1)));
    std::vector<Value*> o = coords_of(rowc);
    if (staged) {
      stage_row_ = b_.CreateMul(grp, b_.CreateMul(R_, i64(stage_plan_.bytes_per_element)));
    }
    auto make_groups = [&](Value* base) {
      std::vector<Group> gs = row_groups(base, R_, {G, T, V, vector && V > 1}, lane, valid, o);
      if (staged) stage_groups(gs);
      return gs;
    };
    // The row's own inputs load with evict_last priorities in L1 and L2 (Emitter::
    // load_vector_kept), as Triton's norm kernels do, when the kernel writes the row back or
    // this path walks it more than once. Measured on an H200 (bench/results/2026-11-21-h200-
    // reductions.md, eighth run): a hand-written bf16 rmsnorm of 32768x4096 took 128.74 us
    // with the hints and 134.72 without (torch.compile 129.06 in the same process; evict_first
    // loads 141.31); in Kiln, rmsnorm 134.91 -> 129.06 us, layernorm 135.42 -> 128.99, softmax
    // of 1024 x 65536 (looped: three walks) 101.44 -> 97.76. A row sum, which only reads,
    // went from 127.39 to 128.96 us with them, so it loads plainly. Why the hints help (our
    // reading, not measured): the output's dirty lines leave L2 before the input's, and a
    // looped row is still in L2 for its next walk.
    const std::vector<std::vector<int>>& walked = persistent ? prog_.passes : prog_.looped;
    const auto walks = std::count_if(walked.begin(), walked.end(), [&](const auto& pass) {
      return prog_.items[pass[0]].kind != Item::row_store;
    });
    const bool writes_row = std::any_of(prog_.items.begin(), prog_.items.end(), [](const Item& it) {
      return it.kind == Item::element_store && it.param >= 0;
    });
    // A staged path loads plainly: its later walks read shared memory, and its first walk's
    // loads are to be issued together before their stores to shared memory, an order LLVM
    // keeps for loads but not for the hinted loads' inline assembly.
    if (!staged && (writes_row || (!persistent && walks > 1))) {
      keep_policy_ = em_.l2_evict_last_policy();
    }
    Point row_point;
    row_point.o = o;
    row_point.ok = valid;
    std::vector<std::vector<Value*>> results(prog_.items.size());
    std::vector<Group> held;
    if (persistent) {
      held = make_groups(i64(0));
      prefetch(held);
    }
    const std::vector<std::vector<int>>& passes = persistent ? prog_.passes : prog_.looped;
    for (size_t pi = 0; pi < passes.size(); ++pi) {
      const std::vector<int>& pass = passes[pi];
      pass_ = static_cast<int>(pi);
      if (prog_.items[pass[0]].kind == Item::row_store) {
        store_row_item(prog_.items[pass[0]], row_point, results,
                       b_.CreateAnd(valid, b_.CreateICmpEQ(lane, i64(0))));
        continue;
      }
      std::vector<Value*> partial;
      if (persistent) {
        if (pi > 0) rematerialize(held, static_cast<int>(pi));
        partial = run_pass(pass, held, results, initial(pass));
      } else {
        partial = chunk_loop(pass, results, i64(0), i64(int64_t{T} * V * G), R_, make_groups);
      }
      partial = combine_rows(states_of(pass), partial, lane, grp,
                             slot_base(passes, static_cast<int>(pi)));
      for (int r : reductions_of(pass)) results[r] = {finish(r, accumulated(r, pass, partial))};
      store_reductions(pass, row_point, results,
                       b_.CreateAnd(valid, b_.CreateICmpEQ(lane, i64(0))));
    }
    b_.CreateBr(exit_);
    stage_row_ = nullptr;
    keep_policy_ = nullptr;
  }

  // The thread's groups of a row chunk from element `base` on (i64), for `items` x `vec`
  // elements `threads` apart per group: elements at or past `limit` are out of range (they
  // load a clamped, valid address and contribute nothing), as are all when !valid.
  struct Walk {
    int items, threads, vec;
    bool vector;
  };
  std::vector<Group> row_groups(Value* base, Value* limit, Walk w, Value* lane, Value* valid,
                                const std::vector<Value*>& o) {
    std::vector<Group> gs(w.items);
    for (int c = 0; c < w.items; ++c) {
      Group& g = gs[c];
      g.shared = true;
      g.vector = w.vector;
      Value* start = b_.CreateAdd(
          base, b_.CreateMul(b_.CreateAdd(i64(int64_t{c} * w.threads), lane), i64(w.vec)), "r0");
      // A vector (limit % vec == 0, start % vec == 0) is in range as a whole or not at all.
      Value* start_in = g.vector ? b_.CreateICmpULT(start, limit) : nullptr;
      Value* vec_ok = g.vector ? b_.CreateAnd(valid, start_in) : nullptr;
      Value* start_c =
          g.vector ? b_.CreateSelect(start_in, start, b_.CreateSub(R_, i64(w.vec))) : nullptr;
      for (int v = 0; v < w.vec; ++v) {
        Point p;
        p.o = o;
        Value* r = b_.CreateAdd(start, i64(v));
        p.ok = g.vector ? vec_ok : b_.CreateAnd(valid, b_.CreateICmpULT(r, limit));
        p.r = g.vector ? b_.CreateAdd(start_c, i64(v))
                       : b_.CreateSelect(b_.CreateICmpULT(r, R_), r, b_.CreateSub(R_, i64(1)));
        g.pts.push_back(std::move(p));
      }
    }
    return gs;
  }

  // Folds the per-thread accumulators `partial` of `states` (merge states, as states_of
  // gives them: their accumulators one after another) across the `group` threads of their row
  // and returns them combined, unfinished (every thread gets them). Shared-memory slots from
  // `base` on, one per accumulator and warp: the caller gives each combine of a kernel its own
  // (slot_base), so one barrier suffices: no later combine overwrites a slot that a slow warp
  // may still read. A lead and the reductions fused into it merge as one state in a fixed
  // order: across lanes the lower lane's first, across warps in warp order, so that every
  // lane ends with the same bits (plain reductions are commutative as they are).
  std::vector<Value*> combine_rows(const std::vector<std::vector<int>>& states,
                                   std::vector<Value*> partial, Value* lane, Value* grp,
                                   int64_t base) {
    const int T = cfg_.group;
    if (states.empty()) return partial;
    std::vector<std::pair<int, int>> spans;  // per state: its first accumulator, how many
    for (const std::vector<int>& st : states) {
      const int at = spans.empty() ? 0 : spans.back().first + spans.back().second;
      spans.emplace_back(at, state_width(st));
    }
    for (size_t i = 0; i < states.size(); ++i) {
      const std::vector<int>& st = states[i];
      auto [at, n] = spans[i];
      for (int off = std::min(T, 32) / 2; off >= 1; off /= 2) {
        std::vector<Value*> mine(partial.begin() + at, partial.begin() + at + n), other;
        for (Value* v : mine) other.push_back(shuffle_xor(v, off));
        if (st.size() > 1) {
          Value* upper = b_.CreateICmpNE(b_.CreateAnd(lane, i64(off)), i64(0));
          for (int j = 0; j < n; ++j) {
            Value* first = b_.CreateSelect(upper, other[j], mine[j]);
            other[j] = b_.CreateSelect(upper, mine[j], other[j]);
            mine[j] = first;
          }
        }
        mine = merge_state(st, mine, other);
        std::copy(mine.begin(), mine.end(), partial.begin() + at);
      }
    }
    if (T > 32) {
      const int W = T / 32;
      const int64_t rpb = cfg_.block / T;
      Value* warp = b_.CreateLShr(lane, i64(5));
      BasicBlock* write = BasicBlock::Create(ctx_, "smem.write", fn_);
      BasicBlock* joined = BasicBlock::Create(ctx_, "smem.joined", fn_);
      b_.CreateCondBr(b_.CreateICmpEQ(b_.CreateAnd(lane, i64(31)), i64(0)), write, joined);
      b_.SetInsertPoint(write);
      for (size_t k = 0; k < partial.size(); ++k) {
        Value* slot = b_.CreateAdd(i64(base + int64_t(k) * rpb * W),
                                   b_.CreateAdd(b_.CreateMul(grp, i64(W)), warp));
        store_shared(slot, partial[k]);
      }
      b_.CreateBr(joined);
      b_.SetInsertPoint(joined);
      barrier();
      for (size_t i = 0; i < states.size(); ++i) {
        const std::vector<int>& st = states[i];
        auto [at, n] = spans[i];
        std::vector<Value*> acc;
        if (st.size() > 1) {
          acc = fold_warps(st, base, at, n, grp, partial);
        } else {
          for (int w = 0; w < W; ++w) {
            Value* slot =
                b_.CreateAdd(i64(base + int64_t(at) * rpb * W + w), b_.CreateMul(grp, i64(W)));
            Value* v = load_shared(slot, partial[at]->getType());
            acc = acc.empty() ? std::vector<Value*>{v} : merge_state(st, acc, {v});
          }
        }
        std::copy(acc.begin(), acc.end(), partial.begin() + at);
      }
    }
    return partial;
  }

  // ---- split row kernels ------------------------------------------------------------------

  // Block b walks slice b % S of row b / S (S = blocks / rows), one phase per launch
  // (plan_split). A phase first folds, in every block of the row and in the same order, the
  // workspace records of the reductions of earlier phases: every block gets the same values,
  // so the result does not depend on timing. Then block 0 of the row stores the row-level
  // outputs that became complete, and each block runs the phase's passes over its slice and
  // writes its reductions' partials to its record. Slices are whole chunks (a multiple of
  // vec): vectors never straddle two blocks.
  void emit_split(Value* vec_ok) {
    const SplitPlan plan = plan_split(prog_);
    const int T = cfg_.block;
    const int64_t W = std::max(1, T / 32);
    Value* S = b_.CreateUDiv(nblocks_, rows_, "S");
    Value* row = b_.CreateUDiv(bid_, S, "row");
    Value* slice = b_.CreateURem(bid_, S, "slice");
    Value* valid = b_.CreateICmpULT(row, rows_, "valid");
    Value* rowc = b_.CreateSelect(valid, row, b_.CreateSub(rows_, i64(1)));
    std::vector<Value*> o = coords_of(rowc);
    Value* record0 = b_.CreateMul(rowc, S, "record0");  // the row's first (row, block) record
    Value* leader = b_.CreateAnd(valid, b_.CreateICmpEQ(tid_, i64(0)));
    Value* row_leader = b_.CreateAnd(leader, b_.CreateICmpEQ(slice, i64(0)), "row.leader");
    Point row_point;
    row_point.o = o;
    row_point.ok = valid;
    for (int k = 0; k < plan.phases; ++k) {
      BasicBlock* body = BasicBlock::Create(ctx_, fmt::format("phase{}", k), fn_);
      BasicBlock* next = BasicBlock::Create(ctx_, "phase.next", fn_);
      b_.CreateCondBr(b_.CreateICmpEQ(phase_, i64(k)), body, next);
      b_.SetInsertPoint(body);
      std::vector<std::vector<Value*>> results(prog_.items.size());
      std::vector<int> done;
      for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
        if (plan.phase_of[pi] >= k) continue;
        for (int r : reductions_of(prog_.passes[pi])) done.push_back(r);
      }
      fold_records(done, plan, record0, S, results);
      for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
        const std::vector<int>& pass = prog_.passes[pi];
        if (plan.phase_of[pi] == k - 1) store_reductions(pass, row_point, results, row_leader);
        if (plan.phase_of[pi] == k && prog_.items[pass[0]].kind == Item::row_store) {
          store_row_item(prog_.items[pass[0]], row_point, results, row_leader);
        }
      }
      auto walk = [&](bool vector) {
        const bool unaligned = !vector && cfg_.vec > 1;
        const int V = unaligned ? 1 : cfg_.vec, G = unaligned ? kUnalignedItems : cfg_.items;
        const int64_t chunk = int64_t{T} * V * G;
        // ceil(ceil(R / S) / chunk) chunks per slice
        Value* per_block = b_.CreateUDiv(b_.CreateAdd(R_, b_.CreateSub(S, i64(1))), S);
        Value* chunks = b_.CreateUDiv(b_.CreateAdd(per_block, i64(chunk - 1)), i64(chunk));
        Value* begin = b_.CreateMul(b_.CreateMul(slice, chunks), i64(chunk), "begin");
        Value* end = b_.CreateAdd(begin, b_.CreateMul(chunks, i64(chunk)));
        end = b_.CreateSelect(b_.CreateICmpULT(end, R_), end, R_, "end");
        auto make_groups = [&](Value* base) {
          return row_groups(base, end, {G, T, V, vector && V > 1}, tid_, valid, o);
        };
        for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
          const std::vector<int>& pass = prog_.passes[pi];
          if (plan.phase_of[pi] != k || prog_.items[pass[0]].kind == Item::row_store) continue;
          std::vector<Value*> partial =
              chunk_loop(pass, results, begin, i64(chunk), end, make_groups);
          std::vector<int> reds = reductions_of(pass);
          if (reds.empty()) continue;
          // prog_.passes never fuse (step 3): one accumulator per reduction, as a record has.
          partial = combine_rows(states_of(pass), partial, tid_, i64(0), plan.slots * W);
          Value* record = b_.CreateAdd(record0, slice);
          for (size_t j = 0; j < reds.size(); ++j) {
            store_record(leader, record, plan, reds[j], partial[j]);
          }
        }
      };
      walk_to_exit(vec_ok, walk);
      b_.SetInsertPoint(next);
    }
    b_.CreateBr(exit_);
  }

  // A split phase's walk(vector): on the vector and the scalar path (or the scalar one alone
  // when vec is 1), each ending in exit_.
  template <class Walk>
  void walk_to_exit(Value* vec_ok, Walk&& walk) {
    if (cfg_.vec == 1) {
      walk(false);
      b_.CreateBr(exit_);
      return;
    }
    branch2(vec_ok, [&](bool vector) {
      walk(vector);
      b_.CreateBr(exit_);
    });
  }

  // The workspace word of reduction `item` in record `record` (i64).
  Value* record_word(Value* record, const SplitPlan& plan, int item) {
    Value* word = b_.CreateAdd(b_.CreateMul(record, i64(plan.slots)), i64(plan.slot_of.at(item)));
    return em_.element_ptr(workspace_, DType::i32, word);
  }

  void store_record(Value* cond, Value* record, const SplitPlan& plan, int item, Value* v) {
    when(cond, "record", "recorded", [&] {
      b_.CreateAlignedStore(b_.CreateBitCast(v, b_.getInt32Ty()), record_word(record, plan, item),
                            llvm::Align(4));
    });
  }

  // Folds records j = first, first + stride, ... below `end`, in order, into `per` accumulators
  // per reduction of `done` (accumulator i * per + k is reduction done[i]), each starting at
  // its identity: `word(j, i * per + k)` is the 32-bit word it takes from record j. A loop,
  // not unrolled.
  template <class Word>
  std::vector<Value*> fold_loop(const std::vector<int>& done, int per, Value* first, int64_t stride,
                                Value* end, Word&& word) {
    std::vector<Carried> folded;
    for (int r : done) {
      for (int k = 0; k < per; ++k) {
        folded.push_back({em_.identity(prog_.items[r].op, prog_.items[r].type), "folded"});
      }
    }
    return counted_loop(
        {"fold", "fold.body", "fold.done", "j"}, first, end, [&] { return i64(stride); }, folded,
        [&](Value* j, const std::vector<Value*>& accs) {
          std::vector<Value*> next(accs.size());
          for (size_t a = 0; a < accs.size(); ++a) {
            Value* w = b_.CreateAlignedLoad(b_.getInt32Ty(), word(j, a), llvm::Align(4));
            next[a] = em_.combine(prog_.items[done[a / per]].op, accs[a],
                                  b_.CreateBitCast(w, accs[a]->getType()));
          }
          return next;
        });
  }

  // Sets results[r] for each reduction r of `done` from the S records of the row: thread t
  // folds records t, t + T, ... in order, then the block combines the threads in order.
  void fold_records(const std::vector<int>& done, const SplitPlan& plan, Value* record0, Value* S,
                    std::vector<std::vector<Value*>>& results) {
    if (done.empty()) return;
    std::vector<Value*> accs = fold_loop(done, 1, tid_, cfg_.block, S, [&](Value* j, size_t i) {
      return record_word(b_.CreateAdd(record0, j), plan, done[i]);
    });
    std::vector<std::vector<int>> alone;  // records hold plain reductions, never a state
    for (int r : done) alone.push_back({r});
    std::vector<Value*> partial = combine_rows(alone, accs, tid_, i64(0), 0);
    for (size_t i = 0; i < done.size(); ++i) results[done[i]] = {finish(done[i], partial[i])};
  }

  // The warps' states of fused state `st` (accumulators at..at+n of `partial`) merged in warp
  // order, by a loop: unrolled, LLVM loads every warp's state at once, which spills at 32
  // warps.
  std::vector<Value*> fold_warps(const std::vector<int>& st, int64_t base, int at, int n,
                                 Value* grp, const std::vector<Value*>& partial) {
    const int W = cfg_.group / 32;
    const int64_t rpb = cfg_.block / cfg_.group;
    auto state_of = [&](Value* w) {
      std::vector<Value*> vals;
      for (int k = at; k < at + n; ++k) {
        Value* slot = b_.CreateAdd(b_.CreateAdd(i64(base + int64_t(k) * rpb * W), w),
                                   b_.CreateMul(grp, i64(W)));
        vals.push_back(load_shared(slot, partial[k]->getType()));
      }
      return vals;
    };
    std::vector<Carried> first;
    for (Value* v : state_of(i64(0))) first.push_back({v, "state"});
    return counted_loop(
        {"warps", nullptr, "warps.done", "w"}, i64(1), i64(W), [&] { return i64(1); }, first,
        [&](Value* w, const std::vector<Value*>& acc) { return merge_state(st, acc, state_of(w)); },
        Test::bottom);
  }

  // The reductions of `pass` as merge states: each on its own, or a lead followed by the
  // reductions fused into it.
  std::vector<std::vector<int>> states_of(const std::vector<int>& pass) const {
    std::vector<std::vector<int>> states;
    for (int r : reductions_of(pass)) {
      if (fusion_in(r, pass) == Fusion::none) {
        states.push_back({r});
        continue;
      }
      internal_check(!states.empty() && states.back()[0] == prog_.items[r].lead,
                     "lower_reduction: a fused reduction apart from its lead");
      states.back().push_back(r);
    }
    return states;
  }

  // Whether merge state `st` (states_of) is a Welford lead's (n, mean, M2) with its followers.
  bool welford_state(const std::vector<int>& st) const {
    return st.size() > 1 && prog_.items[st[1]].fusion == Fusion::welford;
  }

  // Accumulators of merge state `st` of a row kernel: a Welford state's three, else one per
  // reduction (a lead's followers are all of one kind).
  int state_width(const std::vector<int>& st) const {
    return welford_state(st) ? 3 : static_cast<int>(st.size());
  }

  // The accumulators of state `st` (states_of) for x then y, merged.
  std::vector<Value*> merge_state(const std::vector<int>& st, const std::vector<Value*>& x,
                                  const std::vector<Value*>& y) {
    using reduction_math::merge;
    if (welford_state(st)) {
      auto w = merge(math_, reduction_math::Welford<Value*>{x[0], x[1], x[2]},
                     reduction_math::Welford<Value*>{y[0], y[1], y[2]});
      return {w.n, w.mean, w.m2};
    }
    std::vector<Value*> out(x.size());
    out[0] = em_.combine(prog_.items[st[0]].op, x[0], y[0]);
    for (size_t k = 1; k < st.size(); ++k) {  // online followers
      out[k] = merge(math_, reduction_math::Online<Value*>{x[0], x[k]},
                     reduction_math::Online<Value*>{y[0], y[k]})
                   .s;
    }
    return out;
  }

  // ---- outer kernels ----------------------------------------------------------------------

  // The columns of an outer kernel's thread: its `vec` consecutive rows of the kernel from
  // `first` (the block's first) + tx * vec, each clamped to an existing one, whether it exists,
  // and its coordinates.
  struct OuterColumns {
    std::vector<Value*> valid;
    std::vector<std::vector<Value*>> o;
    std::vector<Point> points;  // for row-level stores
  };
  OuterColumns outer_columns(Value* first, Value* tx, bool vector) {
    const int V = cfg_.vec;
    OuterColumns c;
    c.valid.resize(V);
    c.o.resize(V);
    Value* col0 = b_.CreateAdd(first, b_.CreateMul(tx, i64(V)), "col0");
    Value* last = b_.CreateSub(rows_, i64(1));
    if (vector && V > 1) {
      Value* c0 = b_.CreateSelect(b_.CreateICmpULT(col0, rows_), col0, b_.CreateSub(rows_, i64(V)));
      std::vector<Value*> base = coords_of(c0);
      for (int v = 0; v < V; ++v) {
        c.valid[v] = b_.CreateICmpULT(b_.CreateAdd(col0, i64(v)), rows_);
        c.o[v] = base;
        c.o[v][rank_ - 1] = b_.CreateAdd(base[rank_ - 1], i64(v));
      }
    } else {
      for (int v = 0; v < V; ++v) {
        Value* col = b_.CreateAdd(col0, i64(v));
        c.valid[v] = b_.CreateICmpULT(col, rows_);
        c.o[v] = coords_of(b_.CreateSelect(c.valid[v], col, last));
      }
    }
    c.points.resize(V);
    for (int v = 0; v < V; ++v) {
      c.points[v].o = c.o[v];
      c.points[v].ok = c.valid[v];
      c.points[v].slot = v;
    }
    return c;
  }

  // The `items` groups of an outer thread's chunk from reduced index `base` (steps of the
  // reduced index below `end`).
  std::vector<Group> outer_groups(const OuterColumns& c, Value* base, Value* ty, Value* end,
                                  bool vector) {
    const int Y = cfg_.group, V = cfg_.vec, U = cfg_.items;
    std::vector<Group> gs(U);
    for (int u = 0; u < U; ++u) {
      Group& g = gs[u];
      g.shared = vector || V == 1;
      g.vector = vector && V > 1;
      Value* r = b_.CreateAdd(base, b_.CreateAdd(i64(int64_t{u} * Y), ty), "r");
      Value* in = b_.CreateICmpULT(r, end);
      Value* rc = b_.CreateSelect(in, r, b_.CreateSub(R_, i64(1)));
      for (int v = 0; v < V; ++v) {
        Point p;
        p.o = c.o[v];
        p.r = rc;
        p.ok = b_.CreateAnd(c.valid[v], in);
        p.slot = v;
        g.pts.push_back(std::move(p));
      }
    }
    return gs;
  }

  void emit_outer(bool vector) {
    const int Y = cfg_.group, V = cfg_.vec, U = cfg_.items;
    const int X = cfg_.block / Y;
    Value* tx = b_.CreateURem(tid_, i64(X), "tx");
    Value* ty = b_.CreateUDiv(tid_, i64(X), "ty");
    block_loop(int64_t{X} * V, [&](Value* first) {
      OuterColumns c = outer_columns(first, tx, vector);
      std::vector<std::vector<Value*>> results(prog_.items.size());
      for (const std::vector<int>& pass : prog_.passes) {
        if (prog_.items[pass[0]].kind == Item::row_store) {
          for (int v = 0; v < V; ++v) {
            store_row_item(prog_.items[pass[0]], c.points[v], results,
                           b_.CreateAnd(c.valid[v], b_.CreateICmpEQ(ty, i64(0))));
          }
          continue;
        }
        std::vector<Value*> partial =
            chunk_loop(pass, results, i64(0), i64(int64_t{Y} * U), R_,
                       [&](Value* base) { return outer_groups(c, base, ty, R_, vector); });
        combine_outer(reductions_of(pass), partial, tx, ty, results, true);
        for (int v = 0; v < V; ++v) {
          store_reductions(pass, c.points[v], results,
                           b_.CreateAnd(c.valid[v], b_.CreateICmpEQ(ty, i64(0))));
        }
      }
    });
  }

  // ---- split outer kernels ----------------------------------------------------------------

  // Few columns over a long reduced extent (e.g. 8192 columns: 128 blocks of 64 would leave
  // an SM one block). As split rows do (emit_split), block b walks slice b % S of the reduced
  // extent for the columns of tile b / S (S = blocks / tiles), one phase per launch: a phase
  // first folds, in every block of the tile and in the same order, the records of the
  // reductions of earlier phases (a record per (tile, slice): one word per column and
  // reduction; thread row ty folds records ty, ty + group, ..., then the rows fold in order
  // through shared memory), block 0 of the tile stores the outputs that became complete, and
  // each block runs the phase's passes over its slice and writes its partials to its record.
  void emit_outer_split(Value* vec_ok) {
    const SplitPlan plan = plan_split(prog_);
    const int Y = cfg_.group, V = cfg_.vec, U = cfg_.items;
    const int X = cfg_.block / Y;
    const int64_t XV = int64_t{X} * V;  // columns per tile
    const int64_t chunk = int64_t{Y} * U;
    Value* tx = b_.CreateURem(tid_, i64(X), "tx");
    Value* ty = b_.CreateUDiv(tid_, i64(X), "ty");
    Value* tiles = b_.CreateUDiv(b_.CreateAdd(rows_, i64(XV - 1)), i64(XV), "tiles");
    Value* S = b_.CreateUDiv(nblocks_, tiles, "S");
    Value* tile = b_.CreateUDiv(bid_, S, "tile");
    Value* slice = b_.CreateURem(bid_, S, "slice");
    Value* tile_ok = b_.CreateICmpULT(tile, tiles, "tile.ok");
    Value* tilec = b_.CreateSelect(tile_ok, tile, i64(0));
    Value* first = b_.CreateMul(tilec, i64(XV), "first");
    Value* record0 = b_.CreateMul(tilec, S, "record0");  // the tile's first record
    Value* lead = b_.CreateAnd(tile_ok, b_.CreateICmpEQ(ty, i64(0)));
    Value* tile_lead = b_.CreateAnd(lead, b_.CreateICmpEQ(slice, i64(0)), "tile.leader");
    // The word of reduction `item` for column `v` of this thread in record `record`, or for
    // the record's first column unless `exists`.
    auto word = [&](Value* record, int v, int item, Value* exists) {
      Value* column =
          b_.CreateSelect(exists, b_.CreateAdd(b_.CreateMul(tx, i64(V)), i64(v)), i64(0));
      Value* w = b_.CreateAdd(
          b_.CreateMul(b_.CreateAdd(b_.CreateMul(record, i64(XV)), column), i64(plan.slots)),
          i64(plan.slot_of.at(item)));
      return em_.element_ptr(workspace_, DType::i32, w);
    };
    for (int k = 0; k < plan.phases; ++k) {
      BasicBlock* body = BasicBlock::Create(ctx_, fmt::format("phase{}", k), fn_);
      BasicBlock* next = BasicBlock::Create(ctx_, "phase.next", fn_);
      b_.CreateCondBr(b_.CreateICmpEQ(phase_, i64(k)), body, next);
      b_.SetInsertPoint(body);
      std::vector<int> done;
      for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
        if (plan.phase_of[pi] >= k) continue;
        for (int r : reductions_of(prog_.passes[pi])) done.push_back(r);
      }
      auto walk = [&](bool vector) {
        OuterColumns c = outer_columns(first, tx, vector);
        std::vector<std::vector<Value*>> results(prog_.items.size());
        if (!done.empty()) {
          // Thread row ty folds records ty, ty + Y, ... of the tile, for each column and
          // reduction; the rows are then folded in order (combine_outer). A column past the
          // last has no record word written: it reads the tile's first column's instead (its
          // result is never stored), so nothing reads memory that no launch wrote.
          std::vector<Value*> partial = fold_loop(done, V, ty, Y, S, [&](Value* j, size_t a) {
            const int v = static_cast<int>(a % V);
            return word(b_.CreateAdd(record0, j), v, done[a / V], c.valid[v]);
          });
          combine_outer(done, partial, tx, ty, results, true);
        }
        for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
          const std::vector<int>& pass = prog_.passes[pi];
          const bool row_store = prog_.items[pass[0]].kind == Item::row_store;
          if (plan.phase_of[pi] == k - 1) {
            for (int v = 0; v < V; ++v) {
              store_reductions(pass, c.points[v], results, b_.CreateAnd(tile_lead, c.valid[v]));
            }
          }
          if (plan.phase_of[pi] == k && row_store) {
            for (int v = 0; v < V; ++v) {
              store_row_item(prog_.items[pass[0]], c.points[v], results,
                             b_.CreateAnd(tile_lead, c.valid[v]));
            }
          }
        }
        // ceil(ceil(R / S) / chunk) chunks per slice
        Value* per_block = b_.CreateUDiv(b_.CreateAdd(R_, b_.CreateSub(S, i64(1))), S);
        Value* chunks = b_.CreateUDiv(b_.CreateAdd(per_block, i64(chunk - 1)), i64(chunk));
        Value* begin = b_.CreateMul(b_.CreateMul(slice, chunks), i64(chunk), "begin");
        Value* end = b_.CreateAdd(begin, b_.CreateMul(chunks, i64(chunk)));
        end = b_.CreateSelect(b_.CreateICmpULT(end, R_), end, R_, "end");
        for (size_t pi = 0; pi < prog_.passes.size(); ++pi) {
          const std::vector<int>& pass = prog_.passes[pi];
          if (plan.phase_of[pi] != k || prog_.items[pass[0]].kind == Item::row_store) continue;
          std::vector<Value*> partial =
              chunk_loop(pass, results, begin, i64(chunk), end,
                         [&](Value* base) { return outer_groups(c, base, ty, end, vector); });
          std::vector<int> reds = reductions_of(pass);
          if (reds.empty()) continue;
          std::vector<std::vector<Value*>> slice_results(prog_.items.size());
          combine_outer(reds, partial, tx, ty, slice_results, false);
          Value* record = b_.CreateAdd(record0, slice);
          for (int r : reds) {
            for (int v = 0; v < V; ++v) {
              when(b_.CreateAnd(lead, c.valid[v]), "record", "recorded", [&] {
                b_.CreateAlignedStore(b_.CreateBitCast(slice_results[r][v], b_.getInt32Ty()),
                                      word(record, v, r, b_.getTrue()), llvm::Align(4));
              });
            }
          }
        }
      };
      walk_to_exit(vec_ok, walk);
      b_.SetInsertPoint(next);
    }
    b_.CreateBr(exit_);
  }

  // partial holds, per reduction of `reds`, `vec` values (one per slot) in order. The
  // `group` partials of a row are folded in order by one thread, and the result shared
  // (finished, or as a partial for a split kernel's record).
  void combine_outer(const std::vector<int>& reds, const std::vector<Value*>& partial, Value* tx,
                     Value* ty, std::vector<std::vector<Value*>>& results, bool finished) {
    const int Y = cfg_.group, V = cfg_.vec;
    internal_check(Y >= 2, "lower_reduction: an outer reduction needs 2+ threads per row");
    const int64_t X = cfg_.block / Y;
    const int64_t folded = int64_t{cfg_.block} * V;  // where the folded results go
    for (size_t k = 0; k < reds.size(); ++k) {
      const Item& it = prog_.items[reds[k]];
      Type* t = partial[k * V]->getType();
      for (int v = 0; v < V; ++v) {  // partials: [Y][X * V]
        Value* slot = b_.CreateAdd(b_.CreateMul(ty, i64(X * V)),
                                   b_.CreateAdd(b_.CreateMul(tx, i64(V)), i64(v)));
        store_shared(slot, partial[k * V + v]);
      }
      barrier();
      for (int v = 0; v < V; ++v) {
        BasicBlock* fold = BasicBlock::Create(ctx_, "fold", fn_);
        BasicBlock* next = BasicBlock::Create(ctx_, "folded", fn_);
        b_.CreateCondBr(b_.CreateICmpEQ(ty, i64(v % Y)), fold, next);
        b_.SetInsertPoint(fold);
        Value* column = b_.CreateAdd(b_.CreateMul(tx, i64(V)), i64(v));
        // A loop, not unrolled: unrolled, LLVM hoists every fold's loads out of its branch.
        Value* first = load_shared(column, t);
        Value* last = counted_loop(
            {"fold.y", nullptr, "fold.done", "y"}, i64(1), i64(Y), [&] { return i64(1); },
            {{first, "fold"}},
            [&](Value* y, const std::vector<Value*>& acc) {
              Value* x = load_shared(b_.CreateAdd(b_.CreateMul(y, i64(X * V)), column), t);
              return std::vector<Value*>{em_.combine(it.op, acc[0], x)};
            },
            Test::bottom)[0];
        llvm::PHINode* total = b_.CreatePHI(t, 1, "folded");
        total->addIncoming(last, b_.GetInsertBlock()->getSinglePredecessor());
        store_shared(b_.CreateAdd(i64(folded), column), finished ? finish(reds[k], total) : total);
        b_.CreateBr(next);
        b_.SetInsertPoint(next);
      }
      barrier();
      std::vector<Value*> out;
      for (int v = 0; v < V; ++v) {
        Value* column = b_.CreateAdd(b_.CreateMul(tx, i64(V)), i64(v));
        out.push_back(load_shared(b_.CreateAdd(i64(folded), column), t));
      }
      results[reds[k]] = out;
    }
  }

  // Before a later pass over held groups: forget every value computed from the held loads
  // and pass the loads themselves through a copy that the compilers cannot merge with the
  // previous pass's. Each pass then widens and recomputes what it needs (x - mean, an exp)
  // from the packed loads, so only those stay live between passes: registers, not
  // instructions, are what limits the rows in flight per SM.
  void rematerialize(std::vector<Group>& groups, int pass) {
    for (Group& g : groups) {
      for (auto& [key, vals] : g.loads) {
        for (Value*& v : vals) v = opaque_copy(v, pass);
      }
      for (Point& p : g.pts) {
        ValueMemo kept;
        for (const auto& [node, v] : p.memo) {
          const Load* ld = std::get_if<Load>(&node->v);
          if (!ld || (g.vector && ld->indices.back() == vary_)) continue;  // from g.loads
          if (param_of(ld->tensor) < 0) continue;  // a reduction's result: in `results`
          kept.emplace(node, opaque_copy(v, pass));
        }
        p.memo = std::move(kept);
      }
    }
  }

  // v through a PTX mov tagged with `tag`: equal to v, but opaque to LLVM's value numbering
  // (inline assembly with different text), so a recomputation from it is not merged with one
  // from v.
  Value* opaque_copy(Value* v, int tag) {
    Type* t = v->getType();
    const unsigned bits = t->getPrimitiveSizeInBits().getFixedValue();
    const unsigned lane = bits % 32 == 0 ? 32 : 16;
    Type* lane_t = b_.getIntNTy(lane);
    Type* as = bits == lane ? lane_t : llvm::FixedVectorType::get(lane_t, bits / lane);
    auto* fty = llvm::FunctionType::get(lane_t, {lane_t}, false);
    auto* asm_fn = llvm::InlineAsm::get(fty, fmt::format("mov.b{} $0, $1; // pass {}", lane, tag),
                                        lane == 32 ? "=r,r" : "=h,h", /*hasSideEffects=*/false);
    Value* x = b_.CreateBitCast(v, as);
    if (bits == lane) return b_.CreateBitCast(b_.CreateCall(asm_fn, {x}), t);
    Value* out = llvm::UndefValue::get(as);
    for (unsigned i = 0; i < bits / lane; ++i) {
      out = b_.CreateInsertElement(out, b_.CreateCall(asm_fn, {b_.CreateExtractElement(x, i)}), i);
    }
    return b_.CreateBitCast(out, t);
  }

  // Issues every load of the row's own elements for `groups` now (persistent rows): the loads
  // of later passes (the residual of an add+rmsnorm) are in flight with the first pass's.
  // Loads that are the same for every row (a weight, a bias) wait for their use: they come
  // from L2, and held from the start they cost registers for the whole row (measured on an
  // H200: a bf16 layernorm of 4096 went from 56 to 42 registers per thread and from 157.8 to
  // 148.5 us at 256 threads per row).
  void prefetch(std::vector<Group>& groups) {
    std::vector<std::vector<Value*>> none(prog_.items.size());
    std::unordered_map<const ExprNode*, bool> seen;
    std::function<void(const Expr&)> walk = [&](const Expr& e) {
      if (!seen.emplace(e.ptr().get(), true).second) return;
      if (const Load* ld = e.as<Load>()) {
        int param = param_of(ld->tensor);
        if (param >= 0 && params_[param]->role == TensorRole::input &&
            uses(ld->indices, kReduced) && uses_row(ld->indices)) {
          for (Group& g : groups) {
            if (g.vector && ld->indices.back() == vary_) {
              (void)load(*ld, g.pts[0], g, none);  // fills g.loads; lanes widen at use
              continue;
            }
            for (Point& p : g.pts) p.memo[e.ptr().get()] = load(*ld, p, g, none);
          }
        }
        return;
      }
      for_each_child(e, walk);
    };
    for (const Item& it : prog_.items) {
      if (it.kind != Item::row_store) walk(it.value);
    }
  }

  // ---- passes -----------------------------------------------------------------------------

  std::vector<int> reductions_of(const std::vector<int>& pass) const {
    std::vector<int> out;
    for (int i : pass) {
      if (prog_.items[i].kind == Item::reduction) out.push_back(i);
    }
    return out;
  }

  // How reduction i is computed in `pass`: fused only where its lead shares the pass (the
  // looped passes of a row kernel).
  Fusion fusion_in(int i, const std::vector<int>& pass) const {
    const Item& it = prog_.items[i];
    if (it.lead < 0 || std::find(pass.begin(), pass.end(), it.lead) == pass.end()) {
      return Fusion::none;
    }
    return it.fusion;
  }

  int accumulators_per_reduction() const { return shape_ == ReductionShape::outer ? cfg_.vec : 1; }

  // Whether reduction i of `pass` keeps a Welford state for a reduction fused into it.
  bool welford_lead(int i, const std::vector<int>& pass) const {
    return std::any_of(pass.begin(), pass.end(), [&](int j) {
      return prog_.items[j].lead == i && fusion_in(j, pass) == Fusion::welford;
    });
  }

  // Accumulators of reduction i in `pass`: one per slot; a Welford lead's state (n, mean,
  // M2), which also holds its followers' results (they have none of their own).
  int width(int i, const std::vector<int>& pass) const {
    if (welford_lead(i, pass)) return 3;
    return fusion_in(i, pass) == Fusion::welford ? 0 : accumulators_per_reduction();
  }

  // Where reduction i's accumulators start among those of `pass`.
  int offset(int i, const std::vector<int>& pass) const {
    int k = 0;
    for (int r : reductions_of(pass)) {
      if (r == i) return k;
      k += width(r, pass);
    }
    throw InternalError("lower_reduction: a reduction outside its pass");
  }

  // Reduction i's value from the combined accumulators of `pass`: a Welford lead's is
  // n * mean (its sum), a Welford follower's the lead's M2.
  Value* accumulated(int i, const std::vector<int>& pass, const std::vector<Value*>& acc) {
    if (welford_lead(i, pass)) {
      const int at = offset(i, pass);
      return math_.mul(acc[at], acc[at + 1]);
    }
    if (fusion_in(i, pass) == Fusion::welford) return acc[offset(prog_.items[i].lead, pass) + 2];
    return acc[offset(i, pass)];
  }

  std::vector<Value*> initial(const std::vector<int>& pass) {
    std::vector<Value*> acc;
    for (int i : reductions_of(pass)) {
      const Item& it = prog_.items[i];
      Value* v = welford_lead(i, pass) ? math_.num(0) : em_.identity(it.op, it.type);
      acc.insert(acc.end(), width(i, pass), v);
    }
    return acc;
  }

  // Folds value(p, g) of every in-range point of `groups`, in order, into acc[slot] with op;
  // compensated (Kahan) where comp[slot] is given and not null (run_pass).
  template <class F>
  void fold(ReduceOp op, DType t, std::vector<Group>& groups, Value** acc, F&& value,
            Value** comp = nullptr) {
    const int S = accumulators_per_reduction();
    auto into = [&](int slot, Value* v) {
      Value*& a = acc[slot];
      Value** c = comp && comp[slot] ? &comp[slot] : nullptr;
      if (!c) {
        a = em_.combine(op, a, v);
        return;
      }
      reduction_math::kahan_add(math_, a, *c, v);
    };
    for (Group& g : groups) {
      const bool one_mask = S == 1 && std::all_of(g.pts.begin(), g.pts.end(), [&](const Point& p) {
                              return p.ok == g.pts[0].ok;
                            });
      if (one_mask) {  // a vector in range as a whole: fold it, then mask once
        Value* part = nullptr;
        for (Point& p : g.pts) {
          Value* v = value(p, g);
          part = part ? em_.combine(op, part, v) : v;
        }
        into(0, b_.CreateSelect(g.pts[0].ok, part, em_.identity(op, t)));
        continue;
      }
      for (Point& p : g.pts) {
        into(S > 1 ? p.slot : 0, b_.CreateSelect(p.ok, value(p, g), em_.identity(op, t)));
      }
    }
  }

  // Evaluates a pass over `groups`: folds each reduction's in-range values into `acc` (per
  // reduction, per slot) and stores element-level outputs. Returns the new accumulators.
  // A fused reduction comes after its lead, so it sees the lead's accumulator both before
  // (`before`) and after this chunk. With `comp` (loops over chunks), the f32 running sums are
  // compensated (Kahan): comp[i] holds what acc[i] gained by rounding, or is null for an
  // accumulator that is not such a sum (chunk_loop says which).
  std::vector<Value*> run_pass(const std::vector<int>& pass, std::vector<Group>& groups,
                               const std::vector<std::vector<Value*>>& results,
                               std::vector<Value*> acc, std::vector<Value*>* comp = nullptr) {
    const std::vector<Value*> before = acc;
    for (int i : pass) {
      const Item& it = prog_.items[i];
      if (it.kind == Item::element_store) {
        store_element_item(it, groups, results);
        continue;
      }
      Value** a = &acc[offset(i, pass)];
      Value** c = comp ? &(*comp)[offset(i, pass)] : nullptr;
      if (welford_lead(i, pass)) {
        // The chunk's sums of x - k, k the running mean (before any element, the chunk's
        // first value, clamped and so always an element of the row), added to the state
        // with one division per chunk, where a Welford update per element would divide per
        // element; the mean and M2 compensated when c[1] and c[2] are given.
        auto x = [&](Point& p, Group& g) { return eval(it.value, p, g, results); };
        reduction_math::Welford<Value*> st{a[0], a[1], a[2]};
        Value* k = reduction_math::shift(math_, st, x(groups[0].pts[0], groups[0]));
        Value *n = math_.num(0), *s1 = math_.num(0), *s2 = math_.num(0);
        fold(ReduceOp::sum, DType::f32, groups, &n, [&](Point&, Group&) { return math_.num(1); });
        fold(ReduceOp::sum, DType::f32, groups, &s1,
             [&](Point& p, Group& g) { return math_.sub(x(p, g), k); });
        fold(ReduceOp::sum, DType::f32, groups, &s2, [&](Point& p, Group& g) {
          Value* d = math_.sub(x(p, g), k);
          return math_.mul(d, d);
        });
        Value *mean_c = c ? c[1] : math_.num(0), *m2_c = c ? c[2] : math_.num(0);
        reduction_math::add_shifted_sums(math_, st, mean_c, m2_c, n, k, s1, s2);
        a[0] = st.n;
        a[1] = st.mean;
        a[2] = st.m2;
        if (c) {
          c[1] = mean_c;
          c[2] = m2_c;
        }
        continue;
      }
      switch (fusion_in(i, pass)) {
        case Fusion::none:
          fold(
              it.op, it.type, groups, a,
              [&](Point& p, Group& g) { return eval(it.value, p, g, results); }, c);
          break;
        case Fusion::online: {
          // The chunk's terms are taken against the running max after it, which bounds them
          // by 1; the sum so far, and its compensation, are re-measured against that max.
          const int m = offset(it.lead, pass);
          std::vector<std::vector<Value*>> running = results;
          running[it.lead] = {acc[m]};
          a[0] = reduction_math::rescale(math_, a[0], before[m], acc[m]);
          if (c && c[0]) c[0] = reduction_math::rescale(math_, c[0], before[m], acc[m]);
          fold(
              it.op, it.type, groups, a,
              [&](Point& p, Group& g) { return eval(it.value, p, g, running); }, c);
          break;
        }
        case Fusion::welford:  // its lead's M2
          break;
      }
    }
    return acc;
  }

  // A loop over the reduced index from `begin` while base < end, `step` per iteration,
  // running the pass on make_groups(base); returns the accumulators after the loop.
  template <class MakeGroups>
  std::vector<Value*> chunk_loop(const std::vector<int>& pass,
                                 const std::vector<std::vector<Value*>>& results, Value* begin,
                                 Value* step, Value* end, MakeGroups&& make_groups) {
    std::vector<Value*> init = initial(pass);
    std::vector<Carried> carried;
    for (Value* v : init) carried.push_back({v, "acc"});
    // f32 sums over a loop are compensated (Kahan): a thread may add up millions of values
    // (a row of 64M over 8 threads), and plain f32 accumulation then drifts past the
    // output's tolerance (measured on an H200: relative errors up to 2.9e-5 on rows of 64M).
    // So are the running sums of the fused states: an online sum, and a Welford state's mean
    // and M2 (its count is exact); the fused states' drift measured 1.7e-5 to 2.5e-5 there.
    std::vector<int> compensated;  // accumulators carried with a compensation, in order
    auto compensate = [&](int i) {
      compensated.push_back(i);
      carried.push_back({llvm::ConstantFP::get(b_.getFloatTy(), 0.0), "lost"});
    };
    for (int r : reductions_of(pass)) {
      const Item& it = prog_.items[r];
      const int at = offset(r, pass);
      if (welford_lead(r, pass)) {
        compensate(at + 1);
        compensate(at + 2);
        continue;
      }
      if ((it.op != ReduceOp::sum && it.op != ReduceOp::mean) ||
          fusion_in(r, pass) == Fusion::welford || !init[at]->getType()->isFloatTy()) {
        continue;
      }
      for (int i = at; i < at + width(r, pass); ++i) compensate(i);
    }
    const size_t n = init.size();
    // Carried: the accumulators, then the compensations of `compensated`.
    auto split = [&](const std::vector<Value*>& vals, std::vector<Value*>& comp) {
      comp.assign(n, nullptr);
      for (size_t k = 0; k < compensated.size(); ++k) comp[compensated[k]] = vals[n + k];
      return std::vector<Value*>(vals.begin(), vals.begin() + n);
    };
    std::vector<Value*> after = counted_loop(
        {"chunk", "chunk.body", "chunk.done", "base"}, begin, end, [&] { return step; }, carried,
        [&](Value* base, const std::vector<Value*>& vals) {
          std::vector<Group> groups = make_groups(base);
          std::vector<Value*> comp;
          std::vector<Value*> acc = run_pass(pass, groups, results, split(vals, comp), &comp);
          for (int i : compensated) acc.push_back(comp[i]);
          return acc;
        });
    std::vector<Value*> comp;
    std::vector<Value*> out = split(after, comp);
    for (size_t i = 0; i < n; ++i) {
      if (comp[i]) out[i] = b_.CreateFSub(out[i], comp[i], "compensated");
    }
    return out;
  }

  // The reduction's value once combined (mean divides by R).
  Value* finish(int item, Value* v) {
    const Item& it = prog_.items[item];
    if (it.op == ReduceOp::mean) v = b_.CreateFDiv(v, b_.CreateUIToFP(R_, b_.getFloatTy()));
    return v;
  }

  // ---- stores -----------------------------------------------------------------------------

  // Reductions of the pass that are outputs store their value for the point's row.
  void store_reductions(const std::vector<int>& pass, const Point& p,
                        const std::vector<std::vector<Value*>>& results, Value* cond) {
    for (int i : reductions_of(pass)) {
      const Item& it = prog_.items[i];
      if (it.param < 0) continue;
      Value* v = results[i][results[i].size() > 1 ? p.slot : 0];
      store_if(cond, it.param, offset_of(it.param, it.indices, p), {v});
    }
  }

  void store_row_item(const Item& it, Point& p, const std::vector<std::vector<Value*>>& results,
                      Value* cond) {
    Group none;
    Value* v = eval(it.value, p, none, results);
    store_if(cond, it.param, offset_of(it.param, it.indices, p), {v});
  }

  void store_element_item(const Item& it, std::vector<Group>& groups,
                          const std::vector<std::vector<Value*>>& results) {
    const bool vec_store = !it.indices.empty() && it.indices.back() == vary_;
    for (Group& g : groups) {
      std::vector<Value*> vals;
      for (Point& p : g.pts) vals.push_back(eval(it.value, p, g, results));
      if (g.vector && vec_store) {
        Value* ok = g.pts[0].ok;
        for (size_t l = 1; l < g.pts.size(); ++l) ok = b_.CreateAnd(ok, g.pts[l].ok);
        store_if(ok, it.param, offset_of(it.param, it.indices, g.pts[0]), vals);
        note_aligned(it.param, params_[it.param]->dtype);
      } else {
        for (size_t l = 0; l < g.pts.size(); ++l) {
          store_if(g.pts[l].ok, it.param, offset_of(it.param, it.indices, g.pts[l]), {vals[l]});
        }
      }
    }
  }

  void store_if(Value* cond, int param, Value* offset, const std::vector<Value*>& vals) {
    when(cond, "store", "stored", [&] {
      DType t = params_[param]->dtype;
      em_.store(em_.element_ptr(ptrs_[param], t, offset), t, vals);
    });
  }

  // Emits body() in a block of its own that runs only when `cond` holds; code emitted after
  // it runs either way.
  template <class F>
  void when(Value* cond, const char* name, const char* after, F&& body) {
    BasicBlock* yes = BasicBlock::Create(ctx_, name, fn_);
    BasicBlock* next = BasicBlock::Create(ctx_, after, fn_);
    b_.CreateCondBr(cond, yes, next);
    b_.SetInsertPoint(yes);
    body();
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  }

  // ---- expressions ------------------------------------------------------------------------

  Value* eval(const Expr& e, Point& p, Group& g, const std::vector<std::vector<Value*>>& results) {
    return em_.eval(e, p.memo, [&](const Expr& leaf) -> Value* {
      if (const Load* ld = leaf.as<Load>()) return load(*ld, p, g, results);
      if (const IndexRef* r = leaf.as<IndexRef>()) {
        return em_.int_as(coordinate(r->name, p), leaf.type(), false);
      }
      if (const SymRef* s = leaf.as<SymRef>()) {
        return em_.int_as(dim_value(Dim::symbol(s->name)), leaf.type(), true);
      }
      throw UserError(leaf.loc(), "a reduction nested in another is not supported here");
    });
  }

  Value* coordinate(const std::string& var, const Point& p) {
    if (var == kReduced) {
      internal_check(p.r != nullptr, "lower_reduction: reduced index at row level");
      return p.r;
    }
    return p.o.at(std::stoi(var.substr(2)));
  }

  // Element offset (i64) of tensor `t` (an abi parameter) at `indices` for point p.
  Value* offset_of(int param, const std::vector<std::string>& indices, const Point& p) {
    const std::vector<Dim>& shape = params_[param]->shape;
    Value* off = i64(0);
    Value* stride = nullptr;
    for (int d = static_cast<int>(indices.size()) - 1; d >= 0; --d) {
      Value* c = coordinate(indices[d], p);
      off = b_.CreateAdd(off, stride ? b_.CreateMul(c, stride) : c);
      Value* ext = dim_value(shape[d]);
      stride = stride ? b_.CreateMul(stride, ext) : ext;
    }
    return off;
  }

  int param_of(const std::string& name) const {
    for (size_t i = 0; i < params_.size(); ++i) {
      if (params_[i]->name == name) return static_cast<int>(i);
    }
    return -1;
  }

  // The value of load `ld` at point p: p is one of g's points, or g is empty and p a row-level
  // point.
  Value* load(const Load& ld, Point& p, Group& g, const std::vector<std::vector<Value*>>& results) {
    int param = param_of(ld.tensor);
    if (param < 0 || params_[param]->role != TensorRole::input) {
      // The result of a reduction of this kernel, for this row.
      for (size_t i = 0; i < prog_.items.size(); ++i) {
        const Item& it = prog_.items[i];
        if (it.kind != Item::reduction || it.target != ld.tensor) continue;
        internal_check(!results[i].empty(), "lower_reduction: reduction read before its pass");
        Value* v = results[i][results[i].size() > 1 ? p.slot : 0];
        if (it.param >= 0) v = em_.widen(em_.to_storage(v, ld.stored), ld.stored);
        return v;
      }
      throw InternalError("lower_reduction: load of unknown tensor " + ld.tensor);
    }
    const bool uses_vary = uses(ld.indices, vary_);
    const bool in_group = !g.pts.empty();  // else p is a row-level point
    const std::string key = load_key(ld);
    if (in_group && g.vector && !ld.indices.empty() && ld.indices.back() == vary_) {
      std::vector<Value*>& raw = g.loads[key];
      if (raw.empty()) raw = {load_vector(param, ld, g.pts[0])};
      // Lanes widen where they are used: a prefetched vector stays packed until then.
      return em_.widen_lane(raw[0], static_cast<int>(&p - &g.pts.front()), ld.stored);
    }
    if (in_group && g.shared && !uses_vary) {
      std::vector<Value*>& vals = g.loads[key];
      if (vals.empty()) vals = {load_scalar(param, ld, g.pts[0])};
      return vals[0];
    }
    return load_scalar(param, ld, p);
  }

  Value* load_scalar(int param, const Load& ld, const Point& p) {
    return em_.load(em_.element_ptr(ptrs_[param], ld.stored, offset_of(param, ld.indices, p)),
                    ld.stored);
  }

  // The `vec` elements from `first` on, as one vector of the stored type.
  // In a row kernel (emit_rows) a row's own input takes the evict_last hints; inputs that are
  // the same for every row (a weight) load plainly.
  Value* load_vector(int param, const Load& ld, const Point& first) {
    note_aligned(param, ld.stored);
    Value* ptr = em_.element_ptr(ptrs_[param], ld.stored, offset_of(param, ld.indices, first));
    if (keep_policy_ && uses_row(ld.indices)) {
      return em_.load_vector_kept(ptr, ld.stored, cfg_.vec, keep_policy_);
    }
    return em_.load_vector(ptr, ld.stored, cfg_.vec);
  }

  // A chunk's groups on a staged path (step 4b): the staged inputs this pass reads, as their
  // vectors (g.loads, where load() finds them). In an input's first pass they come from
  // global memory, every group's load issued before any is stored to the row's area (the
  // chunk's loads in flight together); in later passes from the row's area. Only vectors in
  // range are stored and loaded (an out-of-range one has a clamped address, another thread's
  // vector): the others are zero, and masked by their users like any out-of-range element.
  void stage_groups(std::vector<Group>& groups) {
    int narrowest = 4;
    for (const auto& [key, r] : stage_plan_.regions) {
      narrowest = std::min<int>(narrowest, size_of(r.load.stored));
    }
    // Every region and vector starts at a multiple of vec x its element size (R % vec == 0),
    // so at a multiple of vec x the narrowest staged element.
    const llvm::Align align(std::min(16, cfg_.vec * narrowest));
    auto area = [&](const StagePlan::Region& reg, const Point& first) {
      const auto size = static_cast<int64_t>(size_of(reg.load.stored));
      Value* byte = b_.CreateAdd(stage_row_, b_.CreateAdd(b_.CreateMul(R_, i64(reg.offset)),
                                                          b_.CreateMul(first.r, i64(size))));
      return b_.CreateInBoundsGEP(b_.getInt8Ty(), stage_smem(), byte, "staged.ptr");
    };
    std::vector<std::pair<const StagePlan::Region*, Group*>> to_store;
    for (const auto& [key, reg] : stage_plan_.regions) {
      if (reg.passes.count(pass_) == 0) continue;
      const bool first_pass = *reg.passes.begin() == pass_;
      for (Group& g : groups) {
        Value* v = nullptr;
        if (first_pass) {
          v = load_vector(param_of(reg.load.tensor), reg.load, g.pts[0]);
          to_store.emplace_back(&reg, &g);
        } else {
          auto* vt = llvm::FixedVectorType::get(em_.storage_type(reg.load.stored), cfg_.vec);
          Value* ptr = area(reg, g.pts[0]);
          BasicBlock* pre = b_.GetInsertBlock();
          BasicBlock* in = BasicBlock::Create(ctx_, "unstage", fn_);
          BasicBlock* next = BasicBlock::Create(ctx_, "unstaged.vec", fn_);
          b_.CreateCondBr(g.pts[0].ok, in, next);
          b_.SetInsertPoint(in);
          Value* x = b_.CreateAlignedLoad(vt, ptr, align);
          b_.CreateBr(next);
          b_.SetInsertPoint(next);
          llvm::PHINode* phi = b_.CreatePHI(vt, 2, "staged.vec");
          phi->addIncoming(x, in);
          phi->addIncoming(llvm::Constant::getNullValue(vt), pre);
          v = phi;
        }
        g.loads[key] = {v};
      }
    }
    for (const auto& [reg, g] : to_store) {
      Value* v = g->loads.at(load_key(reg->load))[0];
      Value* ptr = area(*reg, g->pts[0]);
      when(g->pts[0].ok, "stage", "staged", [&] { b_.CreateAlignedStore(v, ptr, align); });
    }
  }

  void note_aligned(int param, DType t) {
    layout_.align_bytes = std::max(layout_.align_bytes, std::min<int>(16, cfg_.vec * size_of(t)));
    auto& a = layout_.aligned_params;
    if (std::find(a.begin(), a.end(), param) == a.end()) {
      a.push_back(param);
      std::sort(a.begin(), a.end());
    }
  }

  // ---- the GPU's pieces -------------------------------------------------------------------

  Value* i64(int64_t v) { return b_.getInt64(v); }

  Value* dim_value(const Dim& d) {
    if (d.is_fixed()) return i64(d.value());
    auto it = std::find(symbols_.begin(), symbols_.end(), d.name());
    internal_check(it != symbols_.end(), "lower_reduction: unknown symbol");
    return syms_[it - symbols_.begin()];
  }

  Value* shuffle_xor(Value* v, int offset) {
    bool f = v->getType()->isFloatTy();
    auto id =
        f ? llvm::Intrinsic::nvvm_shfl_sync_bfly_f32 : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32;
    return b_.CreateIntrinsic(id, {}, {b_.getInt32(-1), v, b_.getInt32(offset), b_.getInt32(31)});
  }

  // The chunks of a loop already hold `items` vectors each; unrolling further only adds
  // registers (and spills).
  void no_unroll(llvm::Instruction* latch) {
    llvm::Metadata* disable[] = {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")};
    llvm::MDNode* self =
        llvm::MDNode::getDistinct(ctx_, {nullptr, llvm::MDNode::get(ctx_, disable)});
    self->replaceOperandWith(0, self);
    latch->setMetadata(llvm::LLVMContext::MD_loop, self);
  }

  // The dynamic shared memory of the launch, in bytes (i32).
  Value* dynamic_smem_size() {
    auto* fty = llvm::FunctionType::get(b_.getInt32Ty(), false);
    auto* mov = llvm::InlineAsm::get(fty, "mov.u32 $0, %dynamic_smem_size;", "=r",
                                     /*hasSideEffects=*/false);
    return b_.CreateCall(mov, {});
  }

  // The staged rows' area: the launch's dynamic shared memory (an external, unsized array in
  // the shared address space; PTX `.extern .shared`), apart from the combines' static one.
  llvm::GlobalVariable* stage_smem() {
    if (stage_smem_) return stage_smem_;
    auto* ty = llvm::ArrayType::get(b_.getInt8Ty(), 0);
    stage_smem_ = new llvm::GlobalVariable(m_, ty, false, llvm::GlobalValue::ExternalLinkage,
                                           nullptr, fn_->getName() + "_stage", nullptr,
                                           llvm::GlobalValue::NotThreadLocal, 3);
    stage_smem_->setAlignment(llvm::Align(16));
    return stage_smem_;
  }

  void barrier() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

  // Row kernels: the first shared-memory slot of pass `pass_index` of `passes` (each
  // accumulator of each pass has one slot per warp of the block).
  int64_t slot_base(const std::vector<std::vector<int>>& passes, int pass_index) const {
    int64_t slots = 0;
    for (int i = 0; i < pass_index; ++i) {
      for (int r : reductions_of(passes[i])) slots += width(r, passes[i]) * (cfg_.block / 32);
    }
    return slots;
  }

  // Shared memory for the combines: one 32-bit word per slot.
  void make_shared_memory() {
    int64_t words = 1;
    if (cfg_.split && shape_ == ReductionShape::row) {
      // Two regions: the fold of earlier phases' records, then the phase's own combine.
      if (cfg_.group > 32) words = 2 * int64_t{plan_split(prog_).slots} * (cfg_.block / 32);
    } else if (shape_ == ReductionShape::row) {
      if (cfg_.group > 32) {  // persistent and looped rows: one or the other
        words = std::max(slot_base(prog_.passes, static_cast<int>(prog_.passes.size())),
                         slot_base(prog_.looped, static_cast<int>(prog_.looped.size())));
      }
    } else {
      words = int64_t{cfg_.block} * cfg_.vec + int64_t{cfg_.block / cfg_.group} * cfg_.vec;
    }
    words = std::max<int64_t>(words, 1);
    auto* ty = llvm::ArrayType::get(b_.getInt32Ty(), words);
    smem_ = new llvm::GlobalVariable(m_, ty, false, llvm::GlobalValue::InternalLinkage,
                                     llvm::UndefValue::get(ty), fn_->getName() + ".smem", nullptr,
                                     llvm::GlobalValue::NotThreadLocal, 3);
    smem_->setAlignment(llvm::Align(16));
  }

  void store_shared(Value* slot, Value* v) {
    Value* ptr = b_.CreateInBoundsGEP(b_.getInt32Ty(), smem_, slot);
    b_.CreateAlignedStore(b_.CreateBitCast(v, b_.getInt32Ty()), ptr, llvm::Align(4));
  }

  Value* load_shared(Value* slot, Type* t) {
    Value* ptr = b_.CreateInBoundsGEP(b_.getInt32Ty(), smem_, slot);
    return b_.CreateBitCast(b_.CreateAlignedLoad(b_.getInt32Ty(), ptr, llvm::Align(4)), t);
  }

  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  Emitter em_;
  IrMath math_;
  const KernelDef& abi_;
  const ScheduledKernel& sk_;
  ReductionConfig cfg_;
  ReductionShape shape_;
  std::vector<const TensorDecl*> params_;
  std::vector<std::string> symbols_;
  Program prog_;
  StagePlan stage_plan_;
  int rank_ = 0;
  std::string vary_;
  VariantLayout layout_;

  llvm::Function* fn_ = nullptr;
  llvm::GlobalVariable* smem_ = nullptr;
  llvm::GlobalVariable* stage_smem_ = nullptr;  // staging configs: the dynamic shared memory
  Value* keep_policy_ = nullptr;                // in emit_rows: the L2 policy of load_vector_kept
  Value* stage_row_ = nullptr;  // on a staged path: the byte offset (i64) of the row's area
  int pass_ = 0;                // row kernels: the pass being emitted
  std::vector<Value*> ptrs_, syms_, row_extents_;
  Value *tid_ = nullptr, *bid_ = nullptr, *nblocks_ = nullptr, *rows_ = nullptr, *R_ = nullptr;
  Value *workspace_ = nullptr, *phase_ = nullptr;  // split kernels
  BasicBlock* exit_ = nullptr;
};

}  // namespace

ReductionShape reduction_shape(const ScheduledKernel& sk) {
  return sk.kind == KernelKind::outer_reduction ? ReductionShape::outer : ReductionShape::row;
}

int reduction_vector_width(const ScheduledKernel& sk) {
  int narrow = 4;
  for (const TensorDecl& t : sk.def.inputs) narrow = std::min<int>(narrow, size_of(t.dtype));
  for (const TensorDecl& t : sk.def.outputs) narrow = std::min<int>(narrow, size_of(t.dtype));
  return 16 / narrow;
}

RowPasses row_passes(const KernelDef& abi, const ScheduledKernel& sk) {
  internal_check(sk.reduced.has_value() && reduction_shape(sk) == ReductionShape::row,
                 "row_passes: not a row reduction kernel");
  auto p = canonicalize(abi, sk, true);
  auto walks = [&](const std::vector<std::vector<int>>& passes) {
    return static_cast<int>(std::count_if(passes.begin(), passes.end(), [&](const auto& pass) {
      return p.items[pass[0]].kind != Item::row_store;
    }));
  };
  RowPasses out{walks(p.passes), walks(p.looped), {}};
  for (const Item& it : p.items) {
    if (it.fusion == Fusion::none) continue;
    out.fused.push_back(fmt::format("{}: {} with {}", it.target,
                                    it.fusion == Fusion::online ? "online max+sum" : "welford",
                                    p.items[it.lead].target));
  }
  return out;
}

int64_t rows_per_block(ReductionShape shape, const ReductionConfig& cfg) {
  if (shape == ReductionShape::row) return cfg.block / cfg.group;
  return int64_t{cfg.block / cfg.group} * cfg.vec;
}

int64_t stage_bytes_per_element(const KernelDef& abi, const ScheduledKernel& sk) {
  if (reduction_shape(sk) != ReductionShape::row) return 0;
  return plan_stage(canonicalize(abi, sk, false), abi.params()).bytes_per_element;
}

SplitShape split_shape(const KernelDef& abi, const ScheduledKernel& sk) {
  SplitPlan plan = plan_split(canonicalize(abi, sk, false));
  return {plan.phases, plan.slots};
}

void lower_reduction(llvm::Module& m, const KernelDef& abi, const ScheduledKernel& sk,
                     const ReductionConfig& cfg, const std::string& entry, VariantLayout* layout) {
  internal_check(sk.reduced.has_value(), "lower_reduction: not a reduction kernel");
  ReductionLowering(m, abi, sk, cfg).run(entry, layout);
}

}  // namespace kiln
