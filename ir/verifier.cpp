// The verifier: the kernel rules of program.h and expr.h, for parsed and API-built programs.
//
// The parser already rejects most mistakes at their token; the verifier is the single place
// where every rule is checked on the IR itself, so a program built through the API gets the
// same guarantees. Steps, per kernel:
//  1. Parameters: distinct names, storage dtypes, positive fixed dimensions, symbols that do
//     not shadow tensors, scalars among the inputs only (read as ScalarRef, never indexed).
//  2. Statements in order: the target is an output written once or a new temporary (never an
//     input); the left-hand side's indices are distinct; the expression only reads tensors
//     already available, with one bound index per dimension; reductions bind a fresh index
//     used in their body; index extents agree (index_extents); the stored value's type fits
//     the target; temporaries match the kernel's temps list.
//  3. Every output is written.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

#include "ir/text.h"

namespace kiln {
namespace {

class KernelVerifier {
 public:
  explicit KernelVerifier(const KernelDef& k) : k_(k), symbols_(k.symbols()) {}

  void run() {
    check_params();
    for (const Stmt& s : k_.body) check_stmt(s);
    for (const TensorDecl& t : k_.outputs) {
      if (!written_.count(t.name)) fail(t.loc, fmt::format("output '{}' is never written", t.name));
    }
    if (temp_count_ != k_.temps.size()) {
      const TensorDecl& t = k_.temps[temp_count_];
      fail(t.loc, fmt::format("temporary '{}' is declared but never defined", t.name));
    }
  }

 private:
  const KernelDef& k_;
  std::vector<std::string> symbols_;
  std::map<std::string, SourceLoc, std::less<>> written_;  // outputs and temps defined so far
  size_t temp_count_ = 0;
  std::vector<std::string> scope_;

  [[noreturn]] static void fail(SourceLoc loc, std::string message) {
    throw UserError(loc, std::move(message));
  }
  static std::string at(SourceLoc loc) {
    return loc.known() ? fmt::format(" (first at {}:{})", loc.line, loc.col) : std::string();
  }
  bool is_symbol(std::string_view n) const {
    return std::find(symbols_.begin(), symbols_.end(), n) != symbols_.end();
  }
  bool in_scope(std::string_view n) const {
    return std::find(scope_.begin(), scope_.end(), n) != scope_.end();
  }
  bool is_temp_target(std::string_view n) const {
    return std::any_of(k_.body.begin(), k_.body.end(),
                       [&](const Stmt& s) { return s.target == n; });
  }

  void check_index_name(const std::string& name, SourceLoc loc) const {
    if (k_.find_tensor(name) || is_temp_target(name)) {
      fail(loc, fmt::format("index '{}' has the same name as a tensor", name));
    }
    if (is_symbol(name)) fail(loc, fmt::format("index '{}' has the same name as a symbol", name));
  }

  void check_params() {
    std::set<std::string, std::less<>> names;
    for (const TensorDecl* t : k_.params()) {
      if (!names.insert(t->name).second) {
        fail(t->loc, fmt::format("duplicate parameter '{}'", t->name));
      }
      if (!is_storage_type(t->dtype))
        fail(t->loc, fmt::format("tensor '{}' cannot be bool", t->name));
      if (t->scalar && t->role != TensorRole::input) {
        fail(t->loc, fmt::format("output '{}' cannot be a scalar; write {}: {}[] for a rank-0 "
                                 "output",
                                 t->name, t->name, to_string(t->dtype)));
      }
      internal_check(!t->scalar || t->shape.empty(), "a scalar parameter has no shape");
      if (t->strided && (t->scalar || t->role != TensorRole::input || t->shape.empty())) {
        fail(t->loc, fmt::format("'{}' cannot be strided: only tensor inputs of rank 1 or more "
                                 "take strides",
                                 t->name));
      }
      for (const Dim& d : t->shape) {
        if (d.is_fixed() && d.value() <= 0) {
          fail(t->loc, fmt::format("a dimension must be a positive integer, not {}", d.value()));
        }
      }
    }
    for (const TensorDecl& t : k_.inputs) internal_check(t.role == TensorRole::input, "input role");
    for (const TensorDecl& t : k_.outputs) {
      internal_check(t.role == TensorRole::output, "output role");
    }
    for (const std::string& s : symbols_) {
      if (names.count(s)) {
        const TensorDecl* t = k_.find_tensor(s);
        fail(t->loc, fmt::format("symbol '{}' has the same name as a tensor", s));
      }
    }
  }

  void check_stmt(const Stmt& s) {
    internal_check(s.value.defined(), "statement without a value");
    const TensorDecl* decl = k_.find_tensor(s.target);
    bool is_output = decl && decl->role == TensorRole::output;
    if (decl && decl->role == TensorRole::input) {
      fail(s.loc, fmt::format("cannot write to input '{}'", s.target));
    }
    if (auto it = written_.find(s.target); it != written_.end()) {
      fail(s.loc, fmt::format("{} '{}' is written twice{}", is_output ? "output" : "temporary",
                              s.target, at(it->second)));
    }
    if (!is_output && is_symbol(s.target)) {
      fail(s.loc, fmt::format("temporary '{}' has the same name as a symbol", s.target));
    }
    for (size_t i = 0; i < s.indices.size(); ++i) {
      check_index_name(s.indices[i], s.loc);
      if (std::find(s.indices.begin(), s.indices.begin() + i, s.indices[i]) !=
          s.indices.begin() + i) {
        fail(s.loc, fmt::format("index '{}' appears twice on the left-hand side", s.indices[i]));
      }
    }
    scope_ = s.indices;
    if (const auto* scan = s.value.as<Scan>()) {
      check_scan(s.value, *scan);
    } else {
      check_expr(s.value);
    }
    scope_.clear();
    std::map<std::string, Dim> extents = index_extents(k_, s);

    SourceLoc vloc = s.value.loc().known() ? s.value.loc() : s.loc;
    DType type = s.value.type();
    if (type == DType::boolean) fail(vloc, "cannot store a bool; use f32(...) or i32(...)");
    if (is_output) {
      if (compute_type(decl->dtype) != type) {
        fail(vloc, fmt::format("cannot store {} {} value into {} output '{}'; convert it with "
                               "{}(...)",
                               type == DType::u32 ? "a" : "an", to_string(type),
                               to_string(decl->dtype), s.target, to_string(decl->dtype)));
      }
    } else {
      std::vector<Dim> shape;
      for (const std::string& i : s.indices) shape.push_back(extents.at(i));
      // A temporary whose value is a cast to f16 or bf16 may be stored in that type (exactly:
      // the cast rounded it), as the scheduler's lifted contraction operands are.
      const Cast* cast = s.value.as<Cast>();
      const bool narrow = cast && (cast->to == DType::f16 || cast->to == DType::bf16) &&
                          temp_count_ < k_.temps.size() && k_.temps[temp_count_].dtype == cast->to;
      TensorDecl expected{s.target, narrow ? cast->to : type, std::move(shape), TensorRole::temp,
                          s.loc};
      // A temporary marked tf32 (a lifted contraction operand) must be a cut.
      expected.tf32 =
          temp_count_ < k_.temps.size() && k_.temps[temp_count_].tf32 && cut_to_tf32(s.value);
      if (temp_count_ >= k_.temps.size() || !(k_.temps[temp_count_] == expected)) {
        fail(s.loc, fmt::format("temporary '{}' does not match the kernel's temps list "
                                "(expected {} with {} dimensions, in order of definition)",
                                s.target, to_string(type), expected.shape.size()));
      }
      ++temp_count_;
    }
    written_.emplace(s.target, s.loc);
  }

  void check_expr(const Expr& e) {
    internal_check(e.defined(), "undefined expression");
    if (const auto* l = e.as<Load>()) {
      const TensorDecl* t = k_.find_tensor(l->tensor);
      if (!t) fail(e.loc(), fmt::format("unknown tensor '{}'", l->tensor));
      if (t->scalar) {
        fail(e.loc(), fmt::format("'{}' is a scalar, not a tensor: write {} without brackets",
                                  l->tensor, l->tensor));
      }
      if (t->role != TensorRole::input && !written_.count(l->tensor)) {
        fail(e.loc(), t->role == TensorRole::output
                          ? fmt::format("output '{}' is read before it is written", l->tensor)
                          : fmt::format("temporary '{}' is used before it is defined", l->tensor));
      }
      if (l->stored != t->dtype) {
        fail(e.loc(), fmt::format("load of '{}' as {} but it holds {}", l->tensor,
                                  to_string(l->stored), to_string(t->dtype)));
      }
      for (const std::string& i : l->indices) {
        if (!in_scope(i))
          fail(e.loc(), fmt::format("index '{}' is not bound by the left-hand side", i));
      }
    } else if (const auto* g = e.as<Gather>()) {
      check_gather(e, *g);
    } else if (const auto* sr = e.as<ScalarRef>()) {
      const TensorDecl* t = k_.find_tensor(sr->name);
      if (!t || !t->scalar) fail(e.loc(), fmt::format("unknown scalar '{}'", sr->name));
      if (sr->stored != t->dtype) {
        fail(e.loc(), fmt::format("scalar '{}' read as {} but it is {}", sr->name,
                                  to_string(sr->stored), to_string(t->dtype)));
      }
    } else if (const auto* r = e.as<IndexRef>()) {
      if (!in_scope(r->name)) {
        fail(e.loc(), fmt::format("index '{}' is not bound by the left-hand side", r->name));
      }
    } else if (const auto* s = e.as<SymRef>()) {
      if (!is_symbol(s->name)) fail(e.loc(), fmt::format("unknown symbol '{}'", s->name));
    } else if (const auto* red = e.as<Reduce>()) {
      for (size_t i = 0; i < red->indices.size(); ++i) {
        const std::string& v = red->indices[i];
        check_index_name(v, e.loc());
        if (std::find(red->indices.begin(), red->indices.begin() + i, v) !=
            red->indices.begin() + i) {
          fail(e.loc(), fmt::format("reduction index '{}' is named twice", v));
        }
        if (in_scope(v)) fail(e.loc(), fmt::format("reduction index '{}' is already bound", v));
      }
      scope_.insert(scope_.end(), red->indices.begin(), red->indices.end());
      check_expr(wrap(red->body));
      scope_.resize(scope_.size() - red->indices.size());
      for (const std::string& v : red->indices) {
        if (!uses(wrap(red->body), v)) {
          fail(e.loc(), fmt::format("reduction index '{}' is not used in its body", v));
        }
      }
      return;
    } else if (const auto* scan = e.as<Scan>()) {
      fail(e.loc(), fmt::format("{} must be the whole right-hand side of a statement (not "
                                "supported yet): write t[...] = {}(..., {}) and read t",
                                scan_name(scan->op), scan_name(scan->op), scan->index));
    }
    for_each_child(e, [&](const Expr& c) { check_expr(c); });
  }

  // A scan runs along one of its statement's indices; its body is any expression without
  // another scan (reductions in it are lifted by the scheduler like any other).
  void check_scan(const Expr& e, const Scan& scan) {
    if (std::find(scope_.begin(), scope_.end(), scan.index) == scope_.end()) {
      fail(e.loc(), fmt::format("scan index '{}' is not bound by the left-hand side (a scan "
                                "runs along one of its statement's indices)",
                                scan.index));
    }
    check_expr(wrap(scan.body));
    if (!uses(wrap(scan.body), scan.index)) {
      fail(e.loc(), fmt::format("scan index '{}' is not used in its body", scan.index));
    }
  }

  // A gather reads an input (temporaries and outputs may be computed in the same kernel, at
  // positions a gather cannot know). Its computed positions read inputs only and hold no
  // reduction: the scheduler and the code generators evaluate them where they stand.
  void check_gather(const Expr& e, const Gather& g) {
    const TensorDecl* t = k_.find_tensor(g.tensor);
    if (!t) fail(e.loc(), fmt::format("unknown tensor '{}'", g.tensor));
    if (t->scalar) {
      fail(e.loc(), fmt::format("'{}' is a scalar, not a tensor: write {} without brackets",
                                g.tensor, g.tensor));
    }
    if (t->role != TensorRole::input) {
      fail(e.loc(),
           fmt::format("a gather (a subscript computed from values) reads an input; '{}' "
                       "is {} (not supported yet)",
                       g.tensor, t->role == TensorRole::output ? "an output" : "a temporary"));
    }
    if (g.stored != t->dtype || !(g.shape == t->shape)) {
      fail(e.loc(), fmt::format("gather of '{}' as {} but it holds {}", g.tensor,
                                to_string(g.stored), to_string(t->dtype)));
    }
    for (const auto& p : g.indices) {
      Expr i = wrap(p);
      if (i.as<IndexRef>()) continue;
      std::function<void(const Expr&)> walk = [&](const Expr& x) {
        if (x.as<Reduce>()) {
          fail(x.loc(), "a subscript cannot hold a reduction (not supported yet)");
        }
        std::string read;
        if (const auto* l = x.as<Load>()) read = l->tensor;
        if (const auto* h = x.as<Gather>()) read = h->tensor;
        if (const TensorDecl* d = read.empty() ? nullptr : k_.find_tensor(read);
            !read.empty() && (!d || d->role != TensorRole::input)) {
          fail(x.loc(),
               fmt::format("a subscript may read inputs only; '{}' is {} (not supported "
                           "yet)",
                           read, d && d->role == TensorRole::output ? "an output" : "a temporary"));
        }
        for_each_child(x, walk);
      };
      walk(i);
    }
  }

  static bool uses(const Expr& e, const std::string& index) {
    if (const auto* r = e.as<IndexRef>(); r && r->name == index) return true;
    if (const auto* l = e.as<Load>()) {
      if (std::find(l->indices.begin(), l->indices.end(), index) != l->indices.end()) return true;
    }
    bool found = false;
    for_each_child(e, [&](const Expr& c) { found = found || uses(c, index); });
    return found;
  }
};

}  // namespace

void verify(const KernelDef& k) {
  KernelVerifier(k).run();
}

void verify(const Program& p) {
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (p.kernels[j].name == p.kernels[i].name) {
        throw UserError(p.kernels[i].loc, fmt::format("duplicate kernel '{}'", p.kernels[i].name));
      }
    }
    verify(p.kernels[i]);
  }
}

}  // namespace kiln
