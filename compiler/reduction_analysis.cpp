// The analysis of a scheduled reduction kernel (reduction_analysis.h).
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
#include "compiler/reduction_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <unordered_map>

#include "compiler/plan.h"

namespace kiln {
namespace reduction {
namespace {

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
    if (const Load* l = e.as<Load>()) v = uses_reduced(l->indices);
    if (const IndexRef* r = e.as<IndexRef>()) v = is_reduced(r->name);
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

// Whether e is the reduced extent R (the product of `dims`): its symbol, or its value when
// fixed (several dims: only when all are fixed).
bool is_extent(const Expr& e, const std::vector<Dim>& dims) {
  int64_t fixed = 1;
  for (const Dim& d : dims) fixed = d.is_fixed() && fixed > 0 ? fixed * d.value() : -1;
  if (const Const* c = e.as<Const>()) return fixed > 0 && c->value == double(fixed);
  const SymRef* s = e.as<SymRef>();
  return s && dims.size() == 1 && !dims[0].is_fixed() && s->name == dims[0].name();
}

// Whether e is (X - mean) * (X - mean), the two factors structurally equal, X the body of
// reduction s and mean its mean over the row: s / R for a sum, s itself for a mean.
bool squares_deviation(const Expr& e, const Item& s, const std::vector<Dim>& R) {
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
void fuse_for_looped_rows(Program& p, const std::vector<const TensorDecl*>& params,
                          const std::vector<Dim>& R) {
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

}  // namespace

std::string row_var(int d) {
  return fmt::format("_o{}", d);
}

bool uses(const std::vector<std::string>& idx, const std::string& v) {
  return std::find(idx.begin(), idx.end(), v) != idx.end();
}

std::string reduced_axis_var(int a) {
  return fmt::format("_a{}", a);
}

std::string suffix_var(int a) {
  return fmt::format("_s{}", a);
}

int suffix_start(const std::string& v) {
  return v.size() > 2 && v.rfind("_s", 0) == 0 ? std::stoi(v.substr(2)) : -1;
}

bool is_reduced(const std::string& v) {
  return v == kReduced || v == kFolded || v.rfind("_a", 0) == 0 || suffix_start(v) >= 0;
}

bool uses_reduced(const std::vector<std::string>& idx) {
  return std::any_of(idx.begin(), idx.end(), is_reduced);
}

std::set<int> suffix_runs(const Program& p) {
  std::set<int> out;
  auto note = [&](const std::vector<std::string>& idx) {
    for (const std::string& v : idx) {
      if (const int a = suffix_start(v); a >= 0) out.insert(a);
    }
  };
  std::set<const ExprNode*> seen;  // values are DAGs
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (!seen.insert(e.ptr().get()).second) return;
    if (const Load* l = e.as<Load>()) note(l->indices);
    for_each_child(e, walk);
  };
  for (const Item& it : p.items) {
    note(it.indices);
    if (it.value.defined()) walk(it.value);
  }
  return out;
}

bool stores_elements(const Program& p) {
  return std::any_of(p.items.begin(), p.items.end(),
                     [](const Item& it) { return it.kind == Item::element_store; });
}

bool is_row_var(const std::string& v) {
  return v.rfind("_o", 0) == 0;
}

// Whether canonical indices name a row dimension (`_o<d>`).
bool uses_row(const std::vector<std::string>& idx) {
  return std::any_of(idx.begin(), idx.end(), is_row_var);
}

namespace {

// Canonical indices with the run _a0, .., _a<m-1> (all m reduced indices, in order, adjacent)
// read as the flat index: kFolded, .., kFolded, _r.
// Failing that, in a tensor that reads every reduced index (a row's own data, not a weight
// such as w[_a2]), the longest trailing run _a<a>, .., _a<m-1> (a > 0) reads as kFolded, ..,
// kFolded, _s<a>. Neither when an index of the run also appears elsewhere in the indices
// (t[w, c, h, w]): that position varies along the run, so the run is not a flat index there.
std::vector<std::string> fold_run(std::vector<std::string> idx, int m) {
  if (m < 2) return idx;
  // Whether reduced index a appears outside positions [d, d + n).
  auto outside = [&](int a, size_t d, size_t n) {
    for (size_t i = 0; i < idx.size(); ++i) {
      if ((i < d || i >= d + n) && idx[i] == reduced_axis_var(a)) return true;
    }
    return false;
  };
  for (size_t d = 0; d + m <= idx.size(); ++d) {
    bool run = true;
    for (int a = 0; a < m && run; ++a) run = idx[d + a] == reduced_axis_var(a);
    for (int a = 0; a < m && run; ++a) run = !outside(a, d, static_cast<size_t>(m));
    if (!run) continue;
    for (int a = 0; a + 1 < m; ++a) idx[d + a] = kFolded;
    idx[d + m - 1] = kReduced;
    return idx;
  }
  for (int a = 1; a < m; ++a) {
    const auto n = static_cast<size_t>(m - a);
    if (idx.size() < n) continue;
    const size_t d = idx.size() - n;
    bool run = true;
    for (size_t k = 0; k < n && run; ++k)
      run = idx[d + k] == reduced_axis_var(a + static_cast<int>(k));
    for (int k = a; k < m && run; ++k) run = !outside(k, d, n);
    for (int k = 0; k < a && run; ++k) run = outside(k, d, n);  // it reads the others too
    if (!run) continue;
    for (size_t k = 0; k + 1 < n; ++k) idx[d + k] = kFolded;
    idx.back() = suffix_var(a);
    return idx;
  }
  return idx;
}

// e with every load's indices folded (fold_run); memoized, e being a DAG.
Expr fold_runs(const Expr& e, int m, std::unordered_map<const ExprNode*, Expr>& memo) {
  if (auto it = memo.find(e.ptr().get()); it != memo.end()) return it->second;
  Expr out;
  if (const Load* l = e.as<Load>()) {
    out = make_load(l->tensor, fold_run(l->indices, m), l->stored, e.loc());
  } else {
    out = map_children(e, [&](const Expr& c) { return fold_runs(c, m, memo); });
  }
  memo.emplace(e.ptr().get(), out);
  return out;
}

}  // namespace

Program canonicalize(const KernelDef& abi, const ScheduledKernel& sk, bool fuse) {
  const KernelDef& def = sk.def;
  const int rows = static_cast<int>(sk.space.size());
  const int m = static_cast<int>(sk.reduced.size());
  Inliner inliner(def, [](const Stmt& s) { return !s.value.as<Reduce>(); });
  std::vector<const TensorDecl*> params = abi.params();
  std::map<std::string, int> reduction_item;
  Program p;
  for (const Stmt& s : def.body) {
    auto roles = sk.roles.find(s.target);
    if (roles == sk.roles.end()) continue;  // an inlined temporary
    Rename rename;
    for (const auto& [v, role] : roles->second) {
      internal_check(role >= 0 && role < rows + m, "lower_reduction: statement without roles");
      rename[v] = role < rows ? row_var(role) : m == 1 ? kReduced : reduced_axis_var(role - rows);
    }
    Item it;
    it.target = s.target;
    for (const auto& v : s.indices) it.indices.push_back(rename.at(v));
    it.indices = fold_run(it.indices, m);
    Expr value = inliner.rewrite(s.value, rename);
    if (m > 1) {
      std::unordered_map<const ExprNode*, Expr> folded;  // value keeps its keys alive
      value = fold_runs(value, m, folded);
    }
    value = DivisionHoister().run(value);
    if (const Reduce* r = value.as<Reduce>()) {
      it.kind = Item::reduction;
      it.op = r->op;
      it.type = value.type();
      it.value = wrap(r->body);
    } else {
      it.kind = uses_reduced(it.indices) ? Item::element_store : Item::row_store;
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
  if (fuse && sk.kind == StepKind::row_reduction) {
    fuse_for_looped_rows(p, params, sk.reduced);
  }
  return p;
}

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
  // Only the last phase can hold no reduction; it walks unless its passes all store a row
  // item (a value of the reductions, not an element of the row).
  s.last_only_stores = true;
  for (size_t pi = 0; pi < p.passes.size(); ++pi) {
    if (s.phase_of[pi] == phase && p.items[p.passes[pi][0]].kind != Item::row_store) {
      s.last_only_stores = false;
    }
  }
  return s;
}

bool divides_reduced(const Program& p, const std::vector<const TensorDecl*>& params) {
  bool divides = false;
  std::set<const ExprNode*> seen;
  for (const Item& it : p.items) {
    if (it.kind == Item::row_store) continue;
    for_each_input_load(it.value, params, seen, [&](const Load& ld, int) {
      for (const std::string& v : ld.indices) {
        divides = divides || suffix_start(v) >= 0 || v.rfind("_a", 0) == 0;
      }
    });
  }
  return divides;
}

namespace {

// Whether a contiguous tensor of `shape` read at canonical `idx` changes its offset by
// R_a times as much for a step of reduced index a - 1 as for a step of a (0 for both counts):
// then a - 1 and a step as one (stepped_axis_groups).
bool reads_as_one(const std::vector<std::string>& idx, const std::vector<Dim>& shape,
                  const std::vector<Dim>& reduced, int a) {
  if (uses(idx, kReduced)) return true;  // every reduced index, as one run
  int run = -1;                          // the start of a trailing run `_s<run>`
  size_t run_at = 0;                     // its first position (kFolded, .., _s<run>)
  for (size_t i = 0; i < idx.size(); ++i) {
    if (const int b = suffix_start(idx[i]); b >= 0) {
      run = b;
      run_at = i + 1 - (reduced.size() - static_cast<size_t>(b));
    }
  }
  if (run >= 0 && a - 1 >= run) return true;
  std::vector<size_t> lo, hi;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] == reduced_axis_var(a - 1)) lo.push_back(i);
    if (idx[i] == reduced_axis_var(a)) hi.push_back(i);
  }
  const bool a_in_run = run >= 0 && a >= run;
  if (lo.empty()) return hi.empty() && !a_in_run;
  if (lo.size() != 1) return false;
  const size_t next = lo[0] + 1;
  if (next >= shape.size() || !(shape[next] == reduced[static_cast<size_t>(a)])) return false;
  return a_in_run ? run == a && next == run_at : hi.size() == 1 && hi[0] == next;
}

}  // namespace

std::vector<std::pair<int, int>> stepped_axis_groups(const Program& p,
                                                     const std::vector<const TensorDecl*>& params,
                                                     const std::vector<Dim>& reduced) {
  const int m = static_cast<int>(reduced.size());
  std::vector<bool> joins(static_cast<size_t>(std::max(m, 1)), m > 1);  // joins[a]: a - 1, a
  joins[0] = false;
  bool coordinates = stores_elements(p);
  std::set<const ExprNode*> seen;
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (!seen.insert(e.ptr().get()).second) return;
    if (const IndexRef* r = e.as<IndexRef>(); r && is_reduced(r->name)) coordinates = true;
    for_each_child(e, walk);
  };
  for (const Item& it : p.items) {
    if (it.value.defined()) walk(it.value);
  }
  if (coordinates) std::fill(joins.begin(), joins.end(), false);
  std::set<const ExprNode*> loads;
  for (const Item& it : p.items) {
    if (it.kind == Item::row_store || !it.value.defined()) continue;
    for_each_input_load(it.value, params, loads, [&](const Load& ld, int param) {
      for (int a = 1; a < m; ++a) {
        const auto u = static_cast<size_t>(a);
        joins[u] = joins[u] &&
                   reads_as_one(ld.indices, params[static_cast<size_t>(param)]->shape, reduced, a);
      }
    });
  }
  std::vector<std::pair<int, int>> groups;
  for (int a = 0; a < m; ++a) {
    if (a > 0 && joins[static_cast<size_t>(a)]) {
      groups.back().second = a;
    } else {
      groups.emplace_back(a, a);
    }
  }
  return groups;
}

std::string load_key(const std::string& tensor, const std::vector<std::string>& indices) {
  std::string key = tensor;
  for (const auto& i : indices) key += "," + i;
  return key;
}

std::string load_key(const Load& ld) {
  return load_key(ld.tensor, ld.indices);
}

void for_each_input_load(const Expr& e, const std::vector<const TensorDecl*>& params,
                         std::set<const ExprNode*>& seen,
                         const std::function<void(const Load&, int)>& f) {
  std::function<void(const Expr&)> walk = [&](const Expr& x) {
    if (!seen.insert(x.ptr().get()).second) return;
    if (const Load* ld = x.as<Load>()) {
      auto param = std::find_if(params.begin(), params.end(),
                                [&](const TensorDecl* t) { return t->name == ld->tensor; });
      if (param != params.end() && (*param)->role == TensorRole::input) {
        f(*ld, static_cast<int>(param - params.begin()));
      }
      return;
    }
    for_each_child(x, walk);
  };
  walk(e);
}

namespace {

// The loads, by load key, of the inputs (the strided ones only with `strided_only`) at an
// element of the row (x[o.., r]: canonical indices ending in the reduced one) in the values
// of `items` of p (row stores aside).
std::map<std::string, Load> row_element_loads(const Program& p, const std::vector<int>& items,
                                              const std::vector<const TensorDecl*>& params,
                                              bool strided_only) {
  std::map<std::string, Load> loads;
  std::set<const ExprNode*> seen;
  for (int i : items) {
    if (p.items[static_cast<size_t>(i)].kind == Item::row_store) continue;
    for_each_input_load(
        p.items[static_cast<size_t>(i)].value, params, seen, [&](const Load& ld, int param) {
          if ((!strided_only || params[static_cast<size_t>(param)]->strided) &&
              !ld.indices.empty() && ld.indices.back() == kReduced && uses_row(ld.indices)) {
            loads.emplace(load_key(ld), ld);
          }
        });
  }
  return loads;
}

// A row's areas for `reads` (key -> the passes that read it, its load), widest elements first.
StagePlan row_areas(const std::map<std::string, std::pair<std::set<int>, Load>>& reads) {
  std::vector<std::pair<int, std::string>> order;  // (-element size, key)
  for (const auto& [key, r] : reads)
    order.emplace_back(-static_cast<int>(size_of(r.second.stored)), key);
  std::sort(order.begin(), order.end());
  StagePlan s;
  for (const auto& [neg_size, key] : order) {
    const auto& [passes, load] = reads.at(key);
    s.regions[key] = {load, passes, s.bytes_per_element};
    s.bytes_per_element += -neg_size;
    s.narrowest = -neg_size;  // widest first: the last is the narrowest
  }
  return s;
}

}  // namespace

// Inputs read as row vectors (the row's own elements along the contiguous reduced index) by
// two or more of the looped passes (Program::looped: staging applies to rows that loop).
StagePlan plan_stage(const Program& p, const std::vector<const TensorDecl*>& params) {
  std::map<std::string, std::pair<std::set<int>, Load>> reads;
  for (size_t pi = 0; pi < p.looped.size(); ++pi) {
    for (const auto& [key, ld] : row_element_loads(p, p.looped[pi], params, false)) {
      auto& [passes, load] = reads[key];
      passes.insert(static_cast<int>(pi));
      load = ld;
    }
  }
  std::erase_if(reads, [](const auto& r) { return r.second.first.size() < 2; });
  return row_areas(reads);
}

namespace {

// The inputs (the strided ones only with `strided_only`) read at an element of the row by any
// item of p, as row areas.
StagePlan row_inputs(const Program& p, const std::vector<const TensorDecl*>& params,
                     bool strided_only) {
  std::vector<int> all(p.items.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  std::map<std::string, std::pair<std::set<int>, Load>> reads;
  for (const auto& [key, ld] : row_element_loads(p, all, params, strided_only)) {
    reads[key] = {{}, ld};
  }
  return row_areas(reads);
}

}  // namespace

StagePlan plan_tile(const Program& p, const std::vector<const TensorDecl*>& params) {
  return row_inputs(p, params, true);
}

StagePlan plan_row(const Program& p, const std::vector<const TensorDecl*>& params) {
  return row_inputs(p, params, false);
}

std::vector<std::pair<int, const Load*>> row_invariant_loads(
    const Program& p, const std::vector<const TensorDecl*>& params) {
  std::vector<std::pair<int, const Load*>> loads;
  std::set<std::string> keys;
  std::set<const ExprNode*> seen;
  for (const Item& it : p.items) {
    if (it.kind != Item::element_store) continue;
    for_each_input_load(it.value, params, seen, [&](const Load& ld, int param) {
      if (uses_reduced(ld.indices) && !uses_row(ld.indices) && keys.insert(load_key(ld)).second) {
        loads.emplace_back(param, &ld);
      }
    });
  }
  return loads;
}

}  // namespace reduction

using reduction::canonicalize;
using reduction::Fusion;
using reduction::Item;
using reduction::plan_split;
using reduction::plan_stage;
using reduction::SplitPlan;

int reduction_vector_width(const ScheduledKernel& sk) {
  int narrow = 4;
  for (const TensorDecl& t : sk.def.inputs) narrow = std::min<int>(narrow, size_of(t.dtype));
  for (const TensorDecl& t : sk.def.outputs) narrow = std::min<int>(narrow, size_of(t.dtype));
  return 16 / narrow;
}

RowPasses row_passes(const KernelDef& abi, const ScheduledKernel& sk) {
  internal_check(!sk.reduced.empty() && sk.kind == StepKind::row_reduction,
                 "row_passes: not a row reduction kernel");
  auto p = canonicalize(abi, sk, true);
  auto walks = [&](const std::vector<std::vector<int>>& passes) {
    return static_cast<int>(std::count_if(passes.begin(), passes.end(), [&](const auto& pass) {
      return p.items[pass[0]].kind != Item::row_store;
    }));
  };
  RowPasses out{walks(p.passes), walks(p.looped), {}};
  out.stores_elements = stores_elements(p);
  for (const Item& it : p.items) {
    if (it.fusion == Fusion::none) continue;
    out.welford = out.welford || it.fusion != Fusion::online;
    out.fused.push_back(fmt::format("{}: {} with {}", it.target,
                                    it.fusion == Fusion::online ? "online max+sum" : "welford",
                                    p.items[it.lead].target));
  }
  return out;
}

int64_t rows_per_block(StepKind shape, const ReductionConfig& cfg) {
  if (shape == StepKind::row_reduction) return cfg.block / cfg.group;
  return int64_t{cfg.block / cfg.group} * cfg.vec;
}

bool has_index32_entry(StepKind kind, const ReductionConfig& cfg) {
  return kind == StepKind::outer_reduction && !cfg.strided;
}

int64_t stage_bytes_per_element(const KernelDef& abi, const ScheduledKernel& sk) {
  if (sk.kind != StepKind::row_reduction) return 0;
  return plan_stage(canonicalize(abi, sk, false), abi.params()).bytes_per_element;
}

TileShape tile_shape(const KernelDef& abi, const ScheduledKernel& sk) {
  if (sk.kind != StepKind::row_reduction) return {};
  const reduction::StagePlan t = reduction::plan_tile(canonicalize(abi, sk, false), abi.params());
  return {t.bytes_per_element, t.narrowest};
}

int64_t row_bytes_per_element(const KernelDef& abi, const ScheduledKernel& sk) {
  if (sk.kind != StepKind::row_reduction) return 0;
  return reduction::plan_row(canonicalize(abi, sk, false), abi.params()).bytes_per_element;
}

bool reads_row_invariant_inputs(const KernelDef& abi, const ScheduledKernel& sk) {
  if (sk.kind != StepKind::row_reduction) return false;
  return !reduction::row_invariant_loads(canonicalize(abi, sk, false), abi.params()).empty();
}

namespace {

// The canonical program of `sk` where it steps its points' offsets (steps_reduced_axes), else
// nullopt.
std::optional<reduction::Program> stepping_program(const KernelDef& abi,
                                                   const ScheduledKernel& sk) {
  if ((sk.kind != StepKind::row_reduction && sk.kind != StepKind::outer_reduction) ||
      sk.reduced.size() < 2) {
    return std::nullopt;
  }
  reduction::Program p = canonicalize(abi, sk, false);
  if (!reduction::divides_reduced(p, abi.params())) return std::nullopt;
  return p;
}

}  // namespace

bool steps_reduced_axes(const KernelDef& abi, const ScheduledKernel& sk) {
  return stepping_program(abi, sk).has_value();
}

std::vector<int> vector_runs(const KernelDef& abi, const ScheduledKernel& sk) {
  if (sk.kind != StepKind::row_reduction) return {};
  const std::set<int> runs = reduction::suffix_runs(canonicalize(abi, sk, false));
  return {runs.begin(), runs.end()};
}

std::string stepped_axes_text(const KernelDef& abi, const ScheduledKernel& sk) {
  const std::optional<reduction::Program> p = stepping_program(abi, sk);
  if (!p) return "";
  const std::vector<std::pair<int, int>> groups =
      reduction::stepped_axis_groups(*p, abi.params(), sk.reduced);
  if (groups.size() == sk.reduced.size()) return "";
  std::vector<std::string> coords, joined;
  for (const auto& [first, last] : groups) {
    const std::vector<Dim> dims(sk.reduced.begin() + first, sk.reduced.begin() + last + 1);
    coords.push_back(product_text(dims));
    if (first < last) {  // "H and W", "H, W and D"
      std::vector<std::string> names;
      for (const Dim& d : dims) names.push_back(product_text({d}));
      const std::string last_name = names.back();
      names.pop_back();
      joined.push_back(fmt::format("{} and {}", fmt::join(names, ", "), last_name));
    }
  }
  const std::vector<const TensorDecl*> params = abi.params();
  const bool strided =
      std::any_of(params.begin(), params.end(), [](const TensorDecl* t) { return t->strided; });
  return fmt::format(
      "{} ({} as one: every tensor it walks reads them as one run, so one wrap a point where "
      "each index would wrap{})",
      fmt::join(coords, ", "), fmt::join(joined, "; "),
      strided ? "; its strided variants, whose offsets come from the launch's strides, step "
                "each"
              : "");
}

SplitShape split_shape(const KernelDef& abi, const ScheduledKernel& sk) {
  SplitPlan plan = plan_split(canonicalize(abi, sk, false));
  return {plan.phases, plan.slots, plan.last_only_stores};
}

}  // namespace kiln
