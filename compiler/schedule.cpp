// See schedule.h for the algorithm. This file follows its steps in order: normalization,
// nodes, greedy fusion with index roles, tensors, per-kernel programs, kinds and bytes, text.
//
// Index roles. Inside a reduction kernel with rows O = (o0, ..., on-1) and reduced extent R,
// every index variable of every node plays a role: row position k (0 <= k < n) or the reduced
// index (role n). A reduction node's left-hand side indices are the rows in order and its
// reduced index is role n. A load of a tensor produced in the same kernel ties the reader's
// subscript variables to the producer's left-hand side variables (same role), which is what
// "the consumer reads the value of the same row" means; a conflict means it would read another
// row, which one kernel cannot do. Roles are solved with a union-find over (node, variable);
// a variable no load ties down takes the free role of its extent.
#include "compiler/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>

#include "compiler/plan.h"
#include "ir/text.h"

namespace kiln {

namespace {

bool same_multiset(std::vector<Dim> a, std::vector<Dim> b) {
  auto key = [](const Dim& d) { return d.to_string(); };
  auto cmp = [&](const Dim& x, const Dim& y) { return key(x) < key(y); };
  std::sort(a.begin(), a.end(), cmp);
  std::sort(b.begin(), b.end(), cmp);
  return a == b;
}

// Every load in an expression (reduction bodies and gather positions included), in
// evaluation order.
void collect_loads(const Expr& e, std::vector<const Load*>& out) {
  if (const Load* l = e.as<Load>()) out.push_back(l);
  for_each_child(e, [&](const Expr& c) { collect_loads(c, out); });
}

// Every gather in an expression. A gather reads an input at positions no analysis here can
// know: the scheduler counts it as a read of the whole tensor, which ties no index roles (an
// input is produced by no kernel), and keeps it out of reduction bodies and contraction
// epilogues, whose code generators place loads by their index pattern.
void collect_gathers(const Expr& e, std::vector<Expr>& out) {
  if (e.as<Gather>()) out.push_back(e);
  for_each_child(e, [&](const Expr& c) { collect_gathers(c, out); });
}

// The inputs of k that it loads, by name.
std::string read_names(const KernelDef& k) {
  std::vector<std::string> out;
  for (const TensorDecl& t : k.inputs) {
    if (loads_tensor(k, t.name)) out.push_back(t.name);
  }
  return fmt::format("{}", fmt::join(out, " "));
}

// Every scalar parameter an expression reads.
void collect_scalars(const Expr& e, std::set<std::string>& out) {
  if (const ScalarRef* r = e.as<ScalarRef>()) out.insert(r->name);
  for_each_child(e, [&](const Expr& c) { collect_scalars(c, out); });
}

// Every symbol an expression uses as a value.
void collect_symbols(const Expr& e, std::set<std::string>& out) {
  if (const SymRef* r = e.as<SymRef>()) out.insert(r->name);
  for_each_child(e, [&](const Expr& c) { collect_symbols(c, out); });
}

// ---- 1. normalization ---------------------------------------------------------------------

class Normalizer {
 public:
  explicit Normalizer(const KernelDef& k) : k_(k) {
    for (const TensorDecl* t : k.params()) names_.insert(t->name);
    for (const TensorDecl& t : k.temps) names_.insert(t.name);
    for (const std::string& s : k.symbols()) names_.insert(s);
  }

  KernelDef run() {
    out_ = k_;
    out_.body.clear();
    out_.temps.clear();
    for (const Stmt& s : k_.body) {
      extents_ = index_extents(k_, s);
      lhs_ = s.indices;
      Expr value = lift(s.value, s.indices, /*top=*/true);
      const TensorDecl* t = k_.find_tensor(s.target);
      define(t->role == TensorRole::temp ? t : nullptr, Stmt{s.target, s.indices, value, s.loc});
    }
    verify(out_);
    return out_;
  }

 private:
  // Appends `stmt` (and `temp`, its temporary's declaration, unless it defines an output). A
  // sum whose operands the spec computes per element and rounds for the tensor cores gets
  // them as temporaries of their own first (contraction.h, lift_operands).
  void define(const TensorDecl* temp, Stmt stmt) {
    if (stmt.value.as<Reduce>()) {
      KernelDef view = out_;  // with the statement's own temporary declared
      if (temp) view.temps.push_back(*temp);
      if (auto lifted = lift_operands(view, stmt, [&] { return fresh("_o", operands_); })) {
        for (const LiftedOperand& op : lifted->operands) {
          out_.temps.push_back(op.decl);
          out_.body.push_back(op.def);
        }
        stmt = lifted->stmt;
      }
    }
    if (temp) out_.temps.push_back(*temp);
    out_.body.push_back(std::move(stmt));
  }

  std::string fresh() { return fresh("_r", counter_); }
  std::string fresh(const char* prefix, int& counter) {
    std::string n;
    do n = fmt::format("{}{}", prefix, counter++);
    while (names_.count(n));
    names_.insert(n);
    return n;
  }

  // Index variables e depends on, ordered as in `scope`.
  std::vector<std::string> free_vars(const Expr& e, const std::vector<std::string>& scope) {
    std::set<std::string> used;
    std::function<void(const Expr&, const std::set<std::string>&)> walk =
        [&](const Expr& x, const std::set<std::string>& bound) {
          if (const Load* l = x.as<Load>()) {
            for (const auto& i : l->indices) {
              if (!bound.count(i)) used.insert(i);
            }
          } else if (const IndexRef* r = x.as<IndexRef>()) {
            if (!bound.count(r->name)) used.insert(r->name);
          }
          if (const Reduce* r = x.as<Reduce>()) {
            std::set<std::string> b = bound;
            b.insert(r->indices.begin(), r->indices.end());
            walk(wrap(r->body), b);
            return;
          }
          for_each_child(x, [&](const Expr& c) { walk(c, bound); });
        };
    walk(e, {});
    std::vector<std::string> out;
    for (const auto& v : scope) {
      if (used.count(v)) out.push_back(v);
    }
    return out;
  }

  // The indices of a reduction over several, in the order the tensors its body reads lay
  // them out, outermost first: those of the widest reads first (then the next widest), any
  // index no read walks (a value only) in front. The order of accumulation is unspecified, so
  // this only decides which of them can run as one contiguous flat index.
  static std::vector<std::string> memory_order(const std::vector<std::string>& indices,
                                               const Expr& body) {
    if (indices.size() < 2) return indices;
    std::vector<const Load*> loads;
    collect_loads(body, loads);
    std::stable_sort(loads.begin(), loads.end(), [](const Load* a, const Load* b) {
      return a->indices.size() > b->indices.size();
    });
    std::vector<std::string> walked;
    for (const Load* l : loads) {
      for (const std::string& v : l->indices) {
        if (std::find(indices.begin(), indices.end(), v) != indices.end() &&
            std::find(walked.begin(), walked.end(), v) == walked.end()) {
          walked.push_back(v);
        }
      }
    }
    std::vector<std::string> out;
    for (const std::string& v : indices) {
      if (std::find(walked.begin(), walked.end(), v) == walked.end()) out.push_back(v);
    }
    out.insert(out.end(), walked.begin(), walked.end());
    return out;
  }

  // e with every reduction (but a top-level one whose free indices are the left-hand side)
  // replaced by a load of a new temporary defined just before the current statement.
  Expr lift(const Expr& e, const std::vector<std::string>& scope, bool top) {
    if (const Reduce* r = e.as<Reduce>()) {
      std::vector<std::string> inner = scope;
      inner.insert(inner.end(), r->indices.begin(), r->indices.end());
      Expr body = lift(wrap(r->body), inner, false);
      Expr red = make_reduce(r->op, memory_order(r->indices, body), body, e.loc());
      std::vector<std::string> free = free_vars(red, scope);
      if (top && free == lhs_) return red;
      // A lifted statement's left-hand side gets its extents from the tensors it reads; an
      // index used only as a value has none (the text form cannot declare one).
      std::vector<const Load*> loads;
      collect_loads(red, loads);
      std::vector<Expr> gathers;
      collect_gathers(red, gathers);
      for (const std::string& v : free) {
        bool indexes = std::any_of(loads.begin(), loads.end(), [&](const Load* l) {
          return std::find(l->indices.begin(), l->indices.end(), v) != l->indices.end();
        });
        for (const Expr& g : gathers) {
          for (const auto& i : g.as<Gather>()->indices) {
            if (const IndexRef* r = wrap(i).as<IndexRef>(); r && r->name == v) indexes = true;
          }
        }
        if (!indexes) {
          throw UserError(e.loc(),
                          fmt::format("this reduction uses index '{}' only as a value; the "
                                      "scheduler cannot give it a statement of its own yet: "
                                      "move '{}' out of the reduction or write the reduction "
                                      "as a statement of its own that indexes a tensor with it",
                                      v, v));
        }
      }
      std::string name = fresh();
      std::vector<Dim> shape;
      for (const auto& v : free) shape.push_back(extents_.at(v));
      const TensorDecl decl{name, red.type(), shape, TensorRole::temp, e.loc()};
      define(&decl, Stmt{name, free, red, e.loc()});
      return make_load(name, free, red.type(), e.loc());
    }
    return map_children(e, [&](const Expr& c) { return lift(c, scope, false); });
  }

  const KernelDef& k_;
  KernelDef out_;
  std::set<std::string> names_;
  std::map<std::string, Dim> extents_;
  std::vector<std::string> lhs_;
  int counter_ = 0, operands_ = 0;
};

// ---- 2. nodes and fusion ------------------------------------------------------------------

// A load as the node effectively performs it: through inlined temporaries, with their indices
// renamed into the node's. A gather's read has no indices (its positions are values).
struct EffLoad {
  std::string tensor;
  std::vector<std::string> indices;
  DType stored;
  std::optional<SourceLoc> gather;  // where the gather is, for a gather's read
};

struct NodeInfo {
  const Stmt* stmt = nullptr;
  std::map<std::string, Dim> extents;
  std::vector<const Load*> loads;  // as written
  std::vector<Expr> gathers;       // as written
  std::vector<EffLoad> eff;        // through inlined temporaries
  std::vector<int> eff_deps;       // placed nodes whose results it reads (through inlining)
  std::vector<int> inlined;        // inlined temporaries it reads (transitively)
  const Reduce* reduce = nullptr;  // top-level reduction, if any
  const Scan* scan = nullptr;      // top-level scan, if any
  bool inline_me = false;          // a pointwise temporary: recomputed wherever it is read
  bool contraction = false;        // a reduction that runs on tensor cores (contraction.h)
  std::string not_contraction;     // a sum or mean over a 2-D space or more: why it is not
};

// Role of each (node, variable) inside one reduction kernel; see the file comment.
class RoleSolver {
 public:
  RoleSolver(const std::vector<Dim>& rows, const std::vector<Dim>& reduced) : rows_(rows) {
    role_dims_ = rows;
    role_dims_.insert(role_dims_.end(), reduced.begin(), reduced.end());
  }

  // Adds `node` with its level; returns an empty string or the reason it cannot join.
  std::string add(int node, const NodeInfo& n, bool element_level,
                  const std::map<std::string, int>& producer_of) {
    const Stmt& s = *n.stmt;
    const int R = static_cast<int>(rows_.size());
    const int all = static_cast<int>(role_dims_.size());
    if (n.reduce) {
      for (size_t d = 0; d < s.indices.size(); ++d) {
        if (auto err = fix(node, s.indices[d], static_cast<int>(d), n); !err.empty()) return err;
      }
      for (size_t a = 0; a < n.reduce->indices.size(); ++a) {
        if (auto err = fix(node, n.reduce->indices[a], R + static_cast<int>(a), n); !err.empty())
          return err;
      }
    }
    for (const EffLoad& l : n.eff) {
      auto p = producer_of.find(l.tensor);
      if (p == producer_of.end() || !members_.count(p->second)) continue;
      const NodeInfo& m = *infos_.at(p->second);
      for (size_t d = 0; d < l.indices.size(); ++d) {
        std::string err = unite(node, l.indices[d], p->second, m.stmt->indices[d]);
        if (!err.empty()) return fmt::format("it reads {} at another row ({})", l.tensor, err);
      }
    }
    members_.insert(node);
    infos_[node] = &n;
    // Variables no load tied down take the free role of their extent.
    std::vector<std::string> vars = s.indices;
    if (n.reduce) vars.insert(vars.end(), n.reduce->indices.begin(), n.reduce->indices.end());
    std::set<int> used;
    for (const auto& v : vars) {
      if (int r = role_of(node, v); r >= 0) used.insert(r);
    }
    for (const auto& v : vars) {
      if (role_of(node, v) >= 0) continue;
      int pick = -1;
      for (int r = 0; r < all && pick < 0; ++r) {
        if (!used.count(r) && role_dims_[r] == n.extents.at(v) && (element_level || r < R))
          pick = r;
      }
      if (pick < 0) return fmt::format("index '{}' matches no free row or reduced index", v);
      if (auto err = fix(node, v, pick, n); !err.empty()) return err;
      used.insert(pick);
    }
    // Each variable a distinct role; element-level nodes cover all, row-level ones the rows.
    if (used.size() != vars.size() || (element_level && static_cast<int>(used.size()) != all) ||
        (!element_level && !n.reduce && !used.empty() && *used.rbegin() >= R)) {
      return "its indices do not map one to one onto the kernel's rows and reduced index";
    }
    return "";
  }

  int role_of(int node, const std::string& var) {
    auto it = id_.find({node, var});
    if (it == id_.end()) return -1;
    return role_[find(it->second)];
  }

 private:
  int element(int node, const std::string& var) {
    auto [it, fresh] = id_.emplace(std::make_pair(node, var), static_cast<int>(parent_.size()));
    if (fresh) {
      parent_.push_back(it->second);
      role_.push_back(-1);
    }
    return it->second;
  }
  int find(int x) { return parent_[x] == x ? x : parent_[x] = find(parent_[x]); }

  std::string fix(int node, const std::string& var, int role, const NodeInfo& n) {
    if (!(role_dims_[role] == n.extents.at(var))) {
      return fmt::format("index '{}' has extent {}, the kernel's {} has {}", var,
                         n.extents.at(var).to_string(), part(role), role_dims_[role].to_string());
    }
    int r = find(element(node, var));
    if (role_[r] >= 0 && role_[r] != role) return fmt::format("index '{}' plays two parts", var);
    role_[r] = role;
    return "";
  }

  std::string unite(int a, const std::string& va, int b, const std::string& vb) {
    int x = find(element(a, va)), y = find(element(b, vb));
    if (x == y) return "";
    if (role_[x] >= 0 && role_[y] >= 0 && role_[x] != role_[y]) {
      return fmt::format("'{}' would have to be both {} and {}", va, part(role_[x]),
                         part(role_[y]));
    }
    parent_[x] = y;
    if (role_[y] < 0) role_[y] = role_[x];
    return "";
  }

  std::string part(int role) const {
    const int R = static_cast<int>(rows_.size());
    if (role < R) return fmt::format("row index {}", role);
    return role_dims_.size() == rows_.size() + 1 ? std::string("the reduced index")
                                                 : fmt::format("reduced index {}", role - R);
  }

  std::vector<Dim> rows_, role_dims_;
  std::map<std::pair<int, std::string>, int> id_;
  std::vector<int> parent_, role_;
  std::set<int> members_;
  std::map<int, const NodeInfo*> infos_;
};

struct Group {
  std::vector<int> nodes;
  std::vector<Dim> space;  // pointwise space, or rows
  std::vector<Dim> reduced;
  std::optional<int> scan_axis;  // a scan kernel: its scan's axis in `space`
  std::unique_ptr<RoleSolver> roles;
};

class Scheduler {
 public:
  Scheduler(const KernelDef& k, const ScheduleOptions& opts) : opts_(opts) {
    Normalizer normalizer(k);
    s_.normalized = normalizer.run();
  }

  Schedule run() {
    build_nodes();
    group_of_.assign(infos_.size(), -1);
    // Pointwise temporaries are not placed: every kernel that reads one recomputes it.
    for (size_t i = 0; i < infos_.size(); ++i) {
      if (live_[i] && !infos_[i].inline_me) place(static_cast<int>(i));
    }
    build_kernels();
    return std::move(s_);
  }

 private:
  const KernelDef& nk() const { return s_.normalized; }

  void build_nodes() {
    const KernelDef& k = nk();
    infos_.resize(k.body.size());
    for (size_t i = 0; i < k.body.size(); ++i) {
      NodeInfo& n = infos_[i];
      n.stmt = &k.body[i];
      n.extents = index_extents(k, k.body[i]);
      collect_loads(k.body[i].value, n.loads);
      collect_gathers(k.body[i].value, n.gathers);
      n.reduce = k.body[i].value.as<Reduce>();
      n.scan = k.body[i].value.as<Scan>();
      ScheduleNode sn;
      sn.id = static_cast<int>(i);
      sn.target = k.body[i].target;
      sn.space = k.find_tensor(sn.target)->shape;
      if (n.reduce) {
        for (const std::string& v : n.reduce->indices) sn.reduced.push_back(n.extents.at(v));
      }
      if (n.scan) {
        const auto& lhs = k.body[i].indices;
        sn.scan = static_cast<int>(std::find(lhs.begin(), lhs.end(), n.scan->index) - lhs.begin());
      }
      for (const Load* l : n.loads) {
        auto p = producer_.find(l->tensor);
        if (p != producer_.end() &&
            std::find(sn.deps.begin(), sn.deps.end(), p->second) == sn.deps.end()) {
          sn.deps.push_back(p->second);
        }
      }
      producer_[sn.target] = sn.id;
      s_.nodes.push_back(sn);
    }
    // Pointwise temporaries are inlined into their readers (Inductor does the same): they are
    // never placed, and every placed node sees the loads they perform. A lifted contraction
    // operand, stored narrower than it computes, is placed (recomputed_temp).
    for (size_t i = 0; i < infos_.size(); ++i) {
      infos_[i].inline_me = recomputed_temp(k, k.body[i]);
    }
    for (size_t i = 0; i < infos_.size(); ++i) {
      std::map<std::string, std::string> identity;
      for (const auto& [v, d] : infos_[i].extents) identity[v] = v;
      std::set<int> inl, deps;
      expand(static_cast<int>(i), identity, infos_[i].eff, inl, deps);
      infos_[i].inlined.assign(inl.begin(), inl.end());
      infos_[i].eff_deps.assign(deps.begin(), deps.end());
      for (const EffLoad& l : infos_[i].eff) {
        if (l.gather && infos_[i].reduce) {
          throw UserError(*l.gather,
                          fmt::format("a gather of '{}' inside a reduction is not compiled yet "
                                      "(the interpreter runs it); gather in a statement outside "
                                      "the reduction",
                                      l.tensor));
        }
      }
    }
    for (size_t i = 0; i < infos_.size(); ++i) {
      NodeInfo& n = infos_[i];
      if (!n.reduce) continue;
      auto c = analyze_contraction(k, k.body[i]);
      n.contraction = std::holds_alternative<ContractionShape>(c);
      if (!n.contraction && (n.reduce->op == ReduceOp::sum || n.reduce->op == ReduceOp::mean) &&
          k.body[i].indices.size() >= 2) {
        n.not_contraction = std::get<std::string>(c);
      }
    }
    // Statements no output depends on are dead: they get no kernel.
    live_.assign(infos_.size(), false);
    for (int i = static_cast<int>(infos_.size()) - 1; i >= 0; --i) {
      if (k.find_tensor(s_.nodes[i].target)->role == TensorRole::output) live_[i] = true;
      if (!live_[i]) continue;
      for (int d : s_.nodes[i].deps) live_[d] = true;
    }
  }

  // The loads node n performs, with its variables renamed by `rename`, through inlined
  // temporaries (collected in `inl`); `deps` collects the placed producers.
  void expand(int n, const std::map<std::string, std::string>& rename, std::vector<EffLoad>& out,
              std::set<int>& inl, std::set<int>& deps) const {
    for (const Load* l : infos_[n].loads) {
      std::vector<std::string> idx;
      for (const auto& v : l->indices) idx.push_back(rename.at(v));
      auto p = producer_.find(l->tensor);
      if (p != producer_.end() && p->second < n && infos_[p->second].inline_me) {
        const Stmt& t = *infos_[p->second].stmt;
        std::map<std::string, std::string> r;
        for (size_t d = 0; d < t.indices.size(); ++d) r[t.indices[d]] = idx[d];
        inl.insert(p->second);
        expand(p->second, r, out, inl, deps);
        continue;
      }
      if (p != producer_.end() && p->second < n) deps.insert(p->second);
      out.push_back({l->tensor, idx, l->stored, std::nullopt});
    }
    for (const Expr& g : infos_[n].gathers) {
      out.push_back({g.as<Gather>()->tensor, {}, g.as<Gather>()->stored, g.loc()});
    }
  }

  // Whether node n can join group g; empty string if it can, else the reason.
  std::string fits(int n, Group& g, bool dry_run) {
    const ScheduleNode& sn = s_.nodes[n];
    // The cycle rule: everything n reads must be computed in g or in an earlier kernel.
    int gi = static_cast<int>(&g - groups_.data());
    for (int d : infos_[n].eff_deps) {
      if (group_of_[d] > gi) {
        return fmt::format("it reads {}, computed in k{}, which comes after k{} (a cycle)",
                           s_.nodes[d].target, group_of_[d], gi);
      }
    }
    auto space_text = [](const std::vector<Dim>& s, const std::vector<Dim>& r) {
      return !r.empty() ? fmt::format("rows {} reducing {}", dims_text(s), product_text(r))
                        : fmt::format("pointwise over {}", dims_text(s));
    };
    std::string mismatch =
        fmt::format("different iteration spaces: {} vs {}", space_text(sn.space, sn.reduced),
                    space_text(g.space, g.reduced));
    if (infos_[n].scan) return "a scan starts a kernel of its own";
    if (g.scan_axis) return fits_scan(n, g, gi);
    if (g.reduced.empty() && sn.reduced.empty()) {
      return sn.space == g.space ? "" : mismatch;
    }
    // A contraction runs on tensor cores: alone, with its epilogue over its output space.
    if (infos_[n].contraction) return "a contraction starts a kernel of its own (tensor cores)";
    const bool contraction_group =
        std::any_of(g.nodes.begin(), g.nodes.end(), [&](int m) { return infos_[m].contraction; });
    const bool gathers = std::any_of(infos_[n].eff.begin(), infos_[n].eff.end(),
                                     [](const EffLoad& l) { return l.gather.has_value(); });
    if (contraction_group && gathers) {
      return fmt::format("k{} is a contraction: a gather does not join its epilogue yet", gi);
    }
    if (contraction_group && (!sn.reduced.empty() || !(sn.space == g.space))) {
      return fmt::format(
          "k{} is a contraction: only statements over its output space {} join "
          "it (its epilogue)",
          gi, dims_text(g.space));
    }
    // The group (after the join) is a reduction kernel with rows O and reduced extent R.
    std::vector<Dim> rows = !g.reduced.empty() ? g.space : sn.space;
    std::vector<Dim> red = !g.reduced.empty() ? g.reduced : sn.reduced;
    std::vector<Dim> full = rows;
    full.insert(full.end(), red.begin(), red.end());
    if (!sn.reduced.empty()) {
      if (!g.reduced.empty() && !(sn.space == g.space && sn.reduced == g.reduced)) return mismatch;
      if (g.reduced.empty() && !same_multiset(g.space, full) && !(g.space == rows)) return mismatch;
    } else if (!same_multiset(sn.space, full) && !same_multiset(sn.space, rows)) {
      return mismatch;
    }
    // Index roles: solve for the whole group with n added.
    auto solver = std::make_unique<RoleSolver>(rows, red);
    std::vector<int> members = g.nodes;
    members.push_back(n);
    std::sort(members.begin(), members.end());
    for (int m : members) {
      const ScheduleNode& ms = s_.nodes[m];
      bool elem = ms.reduced.empty() && same_multiset(ms.space, full);
      std::string err = solver->add(m, infos_[m], elem, producer_);
      if (!err.empty()) {
        return m == n ? err : fmt::format("{} could then not stay: {}", ms.target, err);
      }
    }
    if (!dry_run) {
      g.space = rows;
      g.reduced = red;
      g.roles = std::move(solver);
    }
    return "";
  }

  // Whether node n can join the scan kernel g as its epilogue: a pointwise statement over the
  // scan's space that reads what the kernel computes at its own point only.
  std::string fits_scan(int n, const Group& g, int gi) const {
    const ScheduleNode& sn = s_.nodes[n];
    if (!sn.reduced.empty() || !(sn.space == g.space)) {
      return fmt::format(
          "k{} is a scan: only pointwise statements over its space {} join it (its "
          "epilogue)",
          gi, dims_text(g.space));
    }
    const NodeInfo& info = infos_[n];
    for (const EffLoad& l : info.eff) {
      auto p = producer_.find(l.tensor);
      if (p == producer_.end() || group_of_[p->second] != gi) continue;
      if (l.indices != info.stmt->indices) {
        return fmt::format(
            "k{} is a scan: its epilogue reads {} at its own point only, not at [{}]", gi, l.tensor,
            fmt::join(l.indices, ", "));
      }
    }
    return "";
  }

  // Bytes node n would share with group g: tensors one writes and the other reads, inputs
  // both read (each counted by its element size, a proxy for its traffic).
  int64_t affinity(int n, const Group& g) const {
    std::set<std::string> reads_n, writes_g, reads_g;
    for (const EffLoad& l : infos_[n].eff) reads_n.insert(l.tensor);
    for (int m : g.nodes) {
      writes_g.insert(s_.nodes[m].target);
      for (const EffLoad& l : infos_[m].eff) reads_g.insert(l.tensor);
    }
    int64_t score = 0;
    for (const auto& t : reads_n) {
      const TensorDecl* d = nk().find_tensor(t);
      int64_t w = static_cast<int64_t>(size_of(d->dtype)) * std::max<size_t>(1, d->shape.size());
      if (writes_g.count(t))
        score += 4 * w;  // producer-consumer: a write and a read saved
      else if (reads_g.count(t))
        score += w;  // siblings: one read saved
    }
    return score;
  }

  void place(int n) {
    int best = -1;
    int64_t best_score = -1;
    for (size_t g = 0; g < groups_.size(); ++g) {
      int64_t score = affinity(n, groups_[g]);
      std::string why = fits(n, groups_[g], /*dry_run=*/true);
      if (!why.empty()) {
        if (score > 0) s_.refusals.push_back({n, static_cast<int>(g), why});
        continue;
      }
      if (score > best_score || (score == best_score && score > 0)) {
        best = static_cast<int>(g);
        best_score = score;
      }
    }
    // Join a related kernel; an unrelated one only if it is pointwise work of the same space.
    const ScheduleNode& sn = s_.nodes[n];
    if (best >= 0 && best_score == 0 &&
        (!sn.reduced.empty() || !groups_[best].reduced.empty() || groups_[best].scan_axis)) {
      best = -1;
    }
    if (best >= 0) {
      std::string err = fits(n, groups_[best], /*dry_run=*/false);
      internal_check(err.empty(), "schedule: a fitting node failed to join");
    } else {
      best = static_cast<int>(groups_.size());
      Group& g = groups_.emplace_back();
      g.space = sn.space;
      g.reduced = sn.reduced;
      g.scan_axis = sn.scan;
      if (!sn.reduced.empty()) {
        g.roles = std::make_unique<RoleSolver>(g.space, g.reduced);
        std::string err = g.roles->add(n, infos_[n], false, producer_);
        internal_check(err.empty(), "schedule: a reduction does not fit its own kernel");
      }
    }
    groups_[best].nodes.push_back(n);
    group_of_[n] = best;
  }

  // ---- 3. and 4. tensors, kernels, kinds -------------------------------------------------

  void build_kernels() {
    const KernelDef& k = nk();
    // Which temporaries cross kernels, and how.
    std::set<std::string> materialized;
    std::map<int, std::set<int>> recomputed;  // kernel -> nodes copied into it
    for (size_t g = 0; g < groups_.size(); ++g) {
      for (int n : groups_[g].nodes) {
        recomputed[g].insert(infos_[n].inlined.begin(), infos_[n].inlined.end());
        for (int d : infos_[n].eff_deps) {
          if (group_of_[d] != static_cast<int>(g) &&
              k.find_tensor(s_.nodes[d].target)->role == TensorRole::temp) {
            materialized.insert(s_.nodes[d].target);
          }
        }
      }
    }
    for (const TensorDecl& t : k.temps) {
      if (materialized.count(t.name)) s_.buffers.push_back(t);
    }
    for (size_t g = 0; g < groups_.size(); ++g) {
      s_.kernels.push_back(make_kernel(static_cast<int>(g), materialized, recomputed[g]));
    }
  }

  ScheduledKernel make_kernel(int gi, const std::set<std::string>& materialized,
                              const std::set<int>& recomputed) {
    const KernelDef& k = nk();
    const Group& g = groups_[gi];
    ScheduledKernel sk;
    sk.name = fmt::format("{}_k{}", k.name, gi);
    sk.space = g.space;
    sk.reduced = g.reduced;

    // The kernel as a program: its statements (copies of recomputed ones first, in order).
    std::vector<int> stmts(recomputed.begin(), recomputed.end());
    stmts.insert(stmts.end(), g.nodes.begin(), g.nodes.end());
    std::sort(stmts.begin(), stmts.end());
    sk.nodes = stmts;
    KernelDef& def = sk.def;
    def.name = sk.name;
    def.loc = k.loc;
    std::set<std::string> defined;
    for (int n : stmts) {
      def.body.push_back(*infos_[n].stmt);
      defined.insert(infos_[n].stmt->target);
    }
    std::set<std::string> read;
    for (int n : stmts) {
      for (const Load* l : infos_[n].loads) read.insert(l->tensor);
      for (const Expr& g : infos_[n].gathers) read.insert(g.as<Gather>()->tensor);
      collect_scalars(infos_[n].stmt->value, read);  // passed by value, read all the same
    }
    auto decl = [&](const std::string& name, TensorRole role) {
      TensorDecl t = *k.find_tensor(name);
      t.role = role;
      return t;
    };
    // A symbol used as a value (`sum(t[b, c, h], h) / W`) must be one of the kernel's, but
    // the parameter that declares it may be read elsewhere: such a parameter becomes an input
    // that nothing reads, so the kernel keeps the symbol (set_bytes does not count it).
    std::set<std::string> have;
    for (const TensorDecl* t : k.params()) {
      if (!read.count(t->name) && !defined.count(t->name)) continue;
      for (const Dim& d : t->shape) {
        if (!d.is_fixed()) have.insert(d.name());
      }
    }
    std::set<std::string> needed;
    for (int n : stmts) collect_symbols(infos_[n].stmt->value, needed);
    std::set<std::string> declaring;
    for (const std::string& sym : needed) {
      if (have.count(sym)) continue;
      for (const TensorDecl* t : k.params()) {
        auto names = [&](const Dim& d) { return !d.is_fixed() && d.name() == sym; };
        if (std::any_of(t->shape.begin(), t->shape.end(), names) && !defined.count(t->name)) {
          declaring.insert(t->name);
          for (const Dim& d : t->shape) {
            if (!d.is_fixed()) have.insert(d.name());
          }
          break;
        }
      }
    }
    // Inputs: parameters and buffers read but not defined here, in declaration order.
    for (const TensorDecl* t : k.params()) {
      if ((read.count(t->name) || declaring.count(t->name)) && !defined.count(t->name))
        def.inputs.push_back(decl(t->name, TensorRole::input));
    }
    for (const TensorDecl& t : s_.buffers) {
      if (read.count(t.name) && !defined.count(t.name))
        def.inputs.push_back(decl(t.name, TensorRole::input));
    }
    // Outputs: the kernel's outputs and the buffers it writes; the rest stays on chip.
    for (const TensorDecl& t : k.outputs) {
      if (defined.count(t.name)) def.outputs.push_back(decl(t.name, TensorRole::output));
    }
    for (int n : stmts) {
      const std::string& name = infos_[n].stmt->target;
      const TensorDecl* t = k.find_tensor(name);
      if (t->role != TensorRole::temp) continue;
      bool written = materialized.count(name) > 0;
      if (written)
        def.outputs.push_back(decl(name, TensorRole::output));
      else
        def.temps.push_back(decl(name, TensorRole::temp));
    }
    verify(def);

    if (g.scan_axis) {
      set_scan_kind(sk, g);
    } else {
      set_kind(sk, g.nodes, groups_[gi].roles.get());
    }
    if (g.roles) {
      for (int n : g.nodes) {
        const Stmt& st = *infos_[n].stmt;
        std::vector<std::string> vars = st.indices;
        if (const Reduce* r = infos_[n].reduce) {
          vars.insert(vars.end(), r->indices.begin(), r->indices.end());
        }
        for (const std::string& v : vars) sk.roles[st.target][v] = g.roles->role_of(n, v);
      }
    }
    set_bytes(sk);
    return sk;
  }

  std::optional<int64_t> value_of(const Dim& d) const {
    if (d.is_fixed()) return d.value();
    auto it = opts_.sizes.find(d.name());
    if (it == opts_.sizes.end()) return std::nullopt;
    return it->second;
  }

  void set_scan_kind(ScheduledKernel& sk, const Group& g) const {
    const Stmt& st = *infos_[g.nodes.front()].stmt;
    const int axis = *g.scan_axis;
    sk.kind = StepKind::scan;
    sk.scan_axis = axis;
    const std::string along = fmt::format("{} along {} ({})", scan_name(st.value.as<Scan>()->op),
                                          st.indices[axis], g.space[axis].to_string());
    sk.kind_reason =
        axis + 1 == static_cast<int>(g.space.size())
            ? fmt::format(
                  "{}, the contiguous index: a warp or a block per row, carrying the "
                  "prefix across chunks of the row",
                  along)
            : fmt::format("{}, an outer index: each thread carries contiguous columns down it",
                          along);
  }

  void set_kind(ScheduledKernel& sk, const std::vector<int>& members, RoleSolver* roles_or_null) {
    if (sk.reduced.empty()) {
      sk.kind = StepKind::pointwise;
      sk.kind_reason = "no reduction";
      return;
    }
    for (int n : members) {
      if (!infos_[n].contraction) continue;
      sk.kind = StepKind::contraction;
      sk.row_phases = 1;
      auto c = analyze_contraction(sk.def, *infos_[n].stmt);
      internal_check(std::holds_alternative<ContractionShape>(c),
                     "schedule: a contraction is not one in its kernel");
      sk.contraction = std::get<ContractionShape>(c);
      sk.kind_reason = fmt::format(
          "a sum over {} of the product of two {}: a contraction on {} ({})",
          product_text(sk.reduced), operand_reads_text(*sk.contraction),
          sk.contraction->fma()
              ? "CUDA cores, an f32 FMA per product (tensor cores would round the operands: "
                "tf32(...) of both sides runs them there)"
              : "tensor cores",
          describe_operands(*sk.contraction));
      return;
    }
    RoleSolver& roles = *roles_or_null;
    const int R = static_cast<int>(sk.space.size());
    const int m = static_cast<int>(sk.reduced.size());
    // Memory loads that walk a reduced index, and whether their contiguous index is one. With
    // several reduced indices, `run`: whether each of the widest loads holds them all as one
    // run, in order (then they are one flat index of R elements in memory too).
    bool inner = false, outer = false, run = true;
    size_t widest = 0;  // the contiguity of the highest-rank tensors walked decides
    for (int n : members) {
      for (const EffLoad& el : infos_[n].eff) {
        const EffLoad* l = &el;
        if (std::find_if(sk.def.inputs.begin(), sk.def.inputs.end(), [&](const TensorDecl& t) {
              return t.name == l->tensor;
            }) == sk.def.inputs.end()) {
          continue;
        }
        int pos = -1;
        std::vector<int> axes, at;  // the reduced axes it walks, in its order, and where
        for (size_t d = 0; d < l->indices.size(); ++d) {
          if (int role = roles.role_of(n, l->indices[d]); role >= R) {
            pos = static_cast<int>(d);
            axes.push_back(role - R);
            at.push_back(static_cast<int>(d));
          }
        }
        if (pos < 0) continue;
        if (l->indices.size() > widest) {
          widest = l->indices.size();
          inner = outer = false;
          run = true;
        }
        if (l->indices.size() == widest) {
          (pos + 1 == static_cast<int>(l->indices.size()) ? inner : outer) = true;
          bool in_order = static_cast<int>(axes.size()) == m;
          for (int a = 0; in_order && a < m; ++a) in_order = axes[a] == a && at[a] == at[0] + a;
          run = run && in_order;
        }
      }
    }
    // Rows span the elements of a row-level loop in each step; compute phases.
    // How many threads share a row, and whether it is held on chip, loops or is split over
    // blocks, depends on the sizes at launch: the kernel plan's rule (kernel_plan.h).
    sk.row_phases = row_phases(sk, members);
    // What runs: "the reduced index N", or for several the flattening and its layout.
    std::string r = fmt::format("the reduced index {}", product_text(sk.reduced));
    if (m > 1) {
      std::vector<std::string> names;
      for (int n : members) {
        if (const Reduce* red = infos_[n].reduce) {
          names = red->indices;
          break;
        }
      }
      sk.flattening =
          run ? fmt::format("{} flattened to one axis of {}", fmt::join(names, ", "),
                            product_text(sk.reduced))
              : fmt::format(
                    "{} as one flat index of {} (the general path: the tensors it walks do not "
                    "hold {} as one run, so their indices are recomputed from the flat one: by "
                    "division at each element of a row held on chip, at the first element of "
                    "each chunk of a looped or split row and of an outer kernel, whose other "
                    "elements, and the inputs' offsets, are stepped by additions; "
                    "where a tensor's innermost indices are the last of them, in "
                    "order, it is read in vectors along that run when its length is a multiple "
                    "of the vector, else an element at a time)",
                    fmt::join(names, ", "), product_text(sk.reduced), fmt::join(names, ", "));
      r = fmt::format("a reduction over {}: {}", sk.flattening,
                      run ? "that axis" : "the innermost of them");
    }
    std::string why_not;  // a product over a 2-D space or more that is not a contraction
    for (int n : members) {
      if (!infos_[n].not_contraction.empty()) {
        why_not = fmt::format(" (not a contraction: {})", infos_[n].not_contraction);
        break;
      }
    }
    if (outer && !inner) {
      sk.kind = StepKind::outer_reduction;
      sk.kind_reason = fmt::format(
          "{} is not the contiguous one of the tensors "
          "it walks: threads run along the contiguous index{}",
          r, why_not);
      return;
    }
    sk.kind = StepKind::row_reduction;
    sk.kind_reason = fmt::format(
        "{} is the contiguous one of the tensors it walks: threads share "
        "a row{}",
        r, why_not);
  }

  // Dependent passes over a row: an element-level value or reduction that needs a completed
  // reduction of the same kernel starts a new pass.
  int row_phases(const ScheduledKernel& sk, const std::vector<int>& members) const {
    std::map<int, int> done;  // node -> pass in which its value is complete
    int phases = 1;
    for (int n : members) {
      const ScheduleNode& sn = s_.nodes[n];
      bool element = !sn.reduced.empty() || sn.space.size() == sk.space.size() + sk.reduced.size();
      int pass = element ? 1 : 0;
      for (int d : infos_[n].eff_deps) {
        auto it = done.find(d);
        if (it == done.end()) continue;
        const ScheduleNode& ds = s_.nodes[d];
        bool d_row = !ds.reduced.empty() || ds.space.size() == sk.space.size();
        pass = std::max(pass, it->second + (element && d_row ? 1 : 0));
      }
      done[n] = pass;
      phases = std::max(phases, pass);
    }
    return phases;
  }

  void set_bytes(ScheduledKernel& sk) {
    std::vector<std::string> terms;
    double total = 0;
    bool known = true;
    auto add = [&](const TensorDecl& t) {
      std::string term = std::to_string(size_of(t.dtype));
      double v = static_cast<double>(size_of(t.dtype));
      for (const Dim& d : t.shape) {
        term += "*" + d.to_string();
        std::optional<int64_t> x = value_of(d);
        if (x)
          v *= static_cast<double>(*x);
        else
          known = false;
      }
      terms.push_back(term);
      total += v;
    };
    for (const TensorDecl& t : sk.def.inputs) {
      if (loads_tensor(sk.def, t.name)) add(t);
    }
    for (const TensorDecl& t : sk.def.outputs) add(t);
    sk.bytes = fmt::format("{}", fmt::join(terms, " + "));
    if (known) sk.bytes_value = total;
  }

  const ScheduleOptions& opts_;
  Schedule s_;
  std::vector<NodeInfo> infos_;
  std::map<std::string, int> producer_;
  std::vector<Group> groups_;
  std::vector<int> group_of_;
  std::vector<bool> live_;
};

std::string names(const std::vector<TensorDecl>& ts) {
  std::vector<std::string> out;
  for (const TensorDecl& t : ts) out.push_back(t.name);
  return out.empty() ? "-" : fmt::format("{}", fmt::join(out, " "));
}

}  // namespace

const Stmt& scan_statement(const ScheduledKernel& sk) {
  for (const Stmt& st : sk.def.body) {
    if (st.value.as<Scan>()) return st;
  }
  throw InternalError("scan_statement: not a scan kernel");
}

Schedule schedule_kernel(const KernelDef& k, const ScheduleOptions& opts) {
  return Scheduler(k, opts).run();
}

std::string print_schedule(const Schedule& s) {
  std::string out = fmt::format("schedule {}: {} kernel(s), {} buffer(s)\n", s.normalized.name,
                                s.kernels.size(), s.buffers.size());
  for (const TensorDecl& b : s.buffers) {
    out += fmt::format("buffer {}: {}{}\n", b.name, to_string(b.dtype), dims_text(b.shape));
  }
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    const ScheduledKernel& k = s.kernels[i];
    out += fmt::format("k{} {}: {}", i, k.name, to_string(k.kind));
    if (!k.reduced.empty()) {
      out += fmt::format(" rows={} reduce={} phases={}", dims_text(k.space),
                         product_text(k.reduced), k.row_phases);
    } else if (k.scan_axis) {
      out += fmt::format(" space={} scan_axis={}", dims_text(k.space), *k.scan_axis);
    } else {
      out += fmt::format(" space={}", dims_text(k.space));
    }
    std::vector<std::string> nodes;
    for (int n : k.nodes) nodes.push_back(s.nodes[n].target);
    out += fmt::format("\n  nodes: {}\n  reads: {}\n  writes: {}\n  bytes: {}\n",
                       fmt::join(nodes, " "), read_names(k.def), names(k.def.outputs), k.bytes);
  }
  for (const FusionRefusal& r : s.refusals) {
    out += fmt::format("not fused: {} -> k{}: {}\n", s.nodes[r.node].target, r.kernel, r.reason);
  }
  return out;
}

std::string explain_schedule(const Schedule& s) {
  const KernelDef& k = s.normalized;
  int lifted = 0, operands = 0;
  for (const TensorDecl& t : k.temps) {
    lifted += t.name.rfind("_r", 0) == 0;
    operands += t.name.rfind("_o", 0) == 0;
  }
  std::vector<std::string> from;
  if (lifted) from.push_back(fmt::format("{} from lifted reductions", lifted));
  if (operands) from.push_back(fmt::format("{} from lifted contraction operands", operands));
  std::string out = fmt::format(
      "kernel {}: {} statement(s){} -> {} GPU kernel(s)\n", k.name, k.body.size(),
      from.empty() ? "" : fmt::format(" ({})", fmt::join(from, ", ")), s.kernels.size());
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    const ScheduledKernel& sk = s.kernels[i];
    out += fmt::format("\nk{} {}: {}", i, sk.name, to_string(sk.kind));
    if (!sk.reduced.empty()) {
      out += fmt::format(" over rows {}, reducing {}, {} phase(s) per row", dims_text(sk.space),
                         product_text(sk.reduced), sk.row_phases);
    } else if (sk.scan_axis) {
      out += fmt::format(" over {}, scanning axis {}", dims_text(sk.space), *sk.scan_axis);
    } else {
      out += fmt::format(" over {}", dims_text(sk.space));
    }
    out += fmt::format("\n  kind: {}\n  statements:\n", sk.kind_reason);
    for (int n : sk.nodes) {
      const Stmt& st = k.body[n];
      std::string lhs = st.target + "[" + fmt::format("{}", fmt::join(st.indices, ", ")) + "]";
      out += fmt::format("    {} = {}\n", lhs, print(st.value));
    }
    std::vector<std::string> on_chip;
    for (const TensorDecl& t : sk.def.temps) on_chip.push_back(t.name);
    out += fmt::format("  reads: {}\n  writes: {}\n  on chip, never in memory: {}\n",
                       read_names(sk.def), names(sk.def.outputs),
                       on_chip.empty() ? "-" : fmt::format("{}", fmt::join(on_chip, " ")));
    out += fmt::format("  bytes that must move: {}", sk.bytes);
    if (sk.bytes_value) out += fmt::format(" = {:.1f} MB", *sk.bytes_value / 1e6);
    out += "\n";
  }
  if (!s.buffers.empty()) {
    out += "\nmaterialized between kernels:\n";
    for (const TensorDecl& b : s.buffers) {
      out += fmt::format("  {}: {}{}\n", b.name, to_string(b.dtype), dims_text(b.shape));
    }
  }
  if (!s.refusals.empty()) {
    out += "\nnot fused:\n";
    for (const FusionRefusal& r : s.refusals) {
      out += fmt::format("  {} did not join k{}: {}\n", s.nodes[r.node].target, r.kernel, r.reason);
    }
  }
  return out;
}

void run_schedule(const Schedule& s, const SymbolValues& symbols,
                  std::map<std::string, HostTensor*, std::less<>>& tensors) {
  std::map<std::string, HostTensor, std::less<>> buffers;
  for (const TensorDecl& b : s.buffers) {
    buffers.emplace(b.name, HostTensor(b.dtype, resolve_shape(b.shape, symbols)));
  }
  for (const ScheduledKernel& k : s.kernels) {
    std::map<std::string, HostTensor*, std::less<>> args;
    for (const TensorDecl* t : k.def.params()) {
      auto b = buffers.find(t->name);
      if (b != buffers.end()) {
        args[t->name] = &b->second;
        continue;
      }
      auto it = tensors.find(t->name);
      if (it == tensors.end())
        throw UserError({}, fmt::format("run_schedule: no buffer for '{}'", t->name));
      args[t->name] = it->second;
    }
    interpret(k.def, symbols, args);
  }
}

}  // namespace kiln
