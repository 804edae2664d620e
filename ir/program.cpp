// Kernels and programs: lookups, structural equality, and the inference of index extents.
//
// index_extents walks one statement in order (the left-hand side of a declared target first, then
// the expression left to right) and records, for every index variable, the first declared dimension
// it indexes; every later use must name the same Dim (an integer or the same symbol), otherwise the
// later use is reported as a conflict.
#include "ir/program.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln {

bool operator==(const TensorDecl& a, const TensorDecl& b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.role == b.role &&
         a.scalar == b.scalar && a.strided == b.strided && a.tf32 == b.tf32;
}

bool operator==(const Stmt& a, const Stmt& b) {
  return a.target == b.target && a.indices == b.indices && a.value == b.value;
}

bool operator==(const KernelDef& a, const KernelDef& b) {
  return a.name == b.name && a.inputs == b.inputs && a.outputs == b.outputs && a.temps == b.temps &&
         a.body == b.body;
}

const TensorDecl* KernelDef::find_tensor(std::string_view name) const {
  for (const auto* list : {&inputs, &outputs, &temps}) {
    for (const TensorDecl& t : *list) {
      if (t.name == name) return &t;
    }
  }
  return nullptr;
}

std::vector<const TensorDecl*> KernelDef::params() const {
  std::vector<const TensorDecl*> out;
  for (const TensorDecl& t : inputs) out.push_back(&t);
  for (const TensorDecl& t : outputs) out.push_back(&t);
  return out;
}

std::vector<std::string> KernelDef::symbols() const {
  std::vector<std::string> out;
  for (const TensorDecl* t : params()) {
    for (const Dim& d : t->shape) {
      if (!d.is_fixed() && std::find(out.begin(), out.end(), d.name()) == out.end()) {
        out.push_back(d.name());
      }
    }
  }
  return out;
}

const KernelDef* Program::find_kernel(std::string_view name) const {
  for (const KernelDef& k : kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

namespace {

std::string count_indices(size_t n) {
  return fmt::format("{} ind{}", n, n == 1 ? "ex" : "ices");
}

std::string where(SourceLoc loc) {
  return loc.known() ? fmt::format("at {}:{}", loc.line, loc.col) : std::string("elsewhere");
}

struct ExtentFinder {
  const KernelDef& k;
  struct Use {
    Dim dim;
    SourceLoc loc;
  };
  std::map<std::string, Use> found;
  std::vector<std::pair<std::string, SourceLoc>> reductions;

  void record(const std::string& index, const Dim& d, SourceLoc loc) {
    auto [it, inserted] = found.try_emplace(index, Use{d, loc});
    if (!inserted && !(it->second.dim == d)) {
      throw UserError(loc,
                      fmt::format("index '{}' has extent {} here but {} {}", index, d.to_string(),
                                  it->second.dim.to_string(), where(it->second.loc)));
    }
  }

  void walk(const Expr& e) {
    if (const auto* l = e.as<Load>()) {
      const TensorDecl* t = k.find_tensor(l->tensor);
      if (!t) throw UserError(e.loc(), fmt::format("unknown tensor '{}'", l->tensor));
      if (t->shape.size() != l->indices.size()) {
        throw UserError(e.loc(),
                        fmt::format("tensor '{}' has rank {} but is indexed with {}", l->tensor,
                                    t->shape.size(), count_indices(l->indices.size())));
      }
      for (size_t d = 0; d < l->indices.size(); ++d) record(l->indices[d], t->shape[d], e.loc());
    } else if (const auto* g = e.as<Gather>()) {
      const TensorDecl* t = k.find_tensor(g->tensor);
      if (!t) throw UserError(e.loc(), fmt::format("unknown tensor '{}'", g->tensor));
      if (t->shape.size() != g->indices.size()) {
        throw UserError(e.loc(),
                        fmt::format("tensor '{}' has rank {} but is indexed with {}", g->tensor,
                                    t->shape.size(), count_indices(g->indices.size())));
      }
      // Plain index variables among the positions index the dimension as a Load's do.
      for (size_t d = 0; d < g->indices.size(); ++d) {
        if (const auto* r = wrap(g->indices[d]).as<IndexRef>())
          record(r->name, t->shape[d], e.loc());
      }
    } else if (const auto* r = e.as<Reduce>()) {
      for (const std::string& v : r->indices) reductions.emplace_back(v, e.loc());
    }
    for_each_child(e, [&](const Expr& c) { walk(c); });
  }
};

}  // namespace

std::map<std::string, Dim> index_extents(const KernelDef& k, const Stmt& s) {
  ExtentFinder f{k, {}, {}};
  const TensorDecl* target = k.find_tensor(s.target);
  // A declared target seeds its left-hand side's extents: an output always, a temporary once
  // declared (the parser declares temporaries after inferring their shape; a scheduler's
  // lifted reductions arrive declared, since their indices may only appear as values).
  if (target && target->role != TensorRole::input) {
    if (target->shape.size() != s.indices.size()) {
      throw UserError(
          s.loc, fmt::format("{} '{}' has rank {} but the left-hand side has {}",
                             target->role == TensorRole::output ? "output" : "temporary", s.target,
                             target->shape.size(), count_indices(s.indices.size())));
    }
    for (size_t d = 0; d < s.indices.size(); ++d) f.record(s.indices[d], target->shape[d], s.loc);
  }
  internal_check(s.value.defined(), "index_extents: statement without a value");
  f.walk(s.value);
  std::map<std::string, Dim> out;
  auto take = [&](const std::string& index, SourceLoc loc) {
    auto it = f.found.find(index);
    if (it == f.found.end()) {
      throw UserError(loc, fmt::format("cannot infer the extent of index '{}': it never indexes "
                                       "a tensor",
                                       index));
    }
    out.emplace(index, it->second.dim);
  };
  for (const std::string& i : s.indices) take(i, s.loc);
  for (const auto& [i, loc] : f.reductions) take(i, loc);
  return out;
}

namespace {

bool loads(const Expr& e, std::string_view name) {
  if (const Load* l = e.as<Load>(); l != nullptr && l->tensor == name) return true;
  if (const Gather* g = e.as<Gather>(); g != nullptr && g->tensor == name) return true;
  bool found = false;
  for_each_child(e, [&](const Expr& c) { found = found || loads(c, name); });
  return found;
}

}  // namespace

bool loads_tensor(const KernelDef& k, std::string_view name) {
  return std::any_of(k.body.begin(), k.body.end(),
                     [&](const Stmt& st) { return loads(st.value, name); });
}

std::vector<int64_t> resolve_shape(const std::vector<Dim>& shape, const SymbolValues& syms) {
  std::vector<int64_t> out;
  for (const Dim& d : shape) {
    if (d.is_fixed()) {
      out.push_back(d.value());
      continue;
    }
    auto it = syms.find(d.name());
    if (it == syms.end()) throw UserError({}, fmt::format("symbol '{}' is not bound", d.name()));
    if (it->second < 0) {
      throw UserError(
          {}, fmt::format("symbol '{}' must not be negative, got {}", d.name(), it->second));
    }
    out.push_back(it->second);
  }
  return out;
}

}  // namespace kiln
