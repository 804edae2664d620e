// See plan.h.
#include "compiler/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace kiln {
namespace {

using Rename = std::map<std::string, std::string>;

class Inliner {
 public:
  explicit Inliner(const KernelDef& k) : k_(k) {
    for (const Stmt& s : k.body) defs_[s.target] = &s;
  }

  /// `e` with index variables renamed by `rename` and every load of a tensor defined by a
  /// statement (temps, and outputs read back) replaced by its definition.
  Expr rewrite(const Expr& e, const Rename& rename) {
    std::unordered_map<const ExprNode*, Expr> memo;
    return rewrite(e, rename, memo);
  }

 private:
  Expr rewrite(const Expr& e, const Rename& rename,
               std::unordered_map<const ExprNode*, Expr>& memo) {
    if (auto it = memo.find(e.ptr().get()); it != memo.end()) return it->second;
    auto var = [&](const std::string& v) {
      auto it = rename.find(v);
      internal_check(it != rename.end(), "plan: unbound index variable");
      return it->second;
    };
    Expr out;
    if (const IndexRef* r = e.as<IndexRef>()) {
      out = make_index(var(r->name), e.type(), e.loc());
    } else if (const Load* ld = e.as<Load>()) {
      std::vector<std::string> idx;
      for (const auto& i : ld->indices) idx.push_back(var(i));
      auto def = defs_.find(ld->tensor);
      out = def == defs_.end() ? make_load(ld->tensor, idx, ld->stored, e.loc())
                               : inline_definition(*def->second, idx);
    } else if (const Reduce* red = e.as<Reduce>()) {
      throw UserError(e.loc(), fmt::format("'{}' is a reduction; the code generator does not "
                                           "support reductions yet (the interpreter does)",
                                           to_string(red->op)));
    } else {
      out = map_children(e, [&](const Expr& c) { return rewrite(c, rename, memo); });
    }
    memo.emplace(e.ptr().get(), out);
    return out;
  }

  // The definition of `s.target` read at `idx`, converted to the stored type when the
  // tensor is an output (a temp is stored at its compute type, so nothing changes).
  Expr inline_definition(const Stmt& s, const std::vector<std::string>& idx) {
    std::string key = s.target;
    for (const auto& i : idx) key += "," + i;
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    Rename r;
    for (size_t d = 0; d < s.indices.size(); ++d) r[s.indices[d]] = idx[d];
    Expr value = rewrite(s.value, r);
    const TensorDecl* t = k_.find_tensor(s.target);
    if (t->role == TensorRole::output && t->dtype != DType::f32 && t->dtype != DType::i32) {
      value = make_cast(t->dtype, value, value.loc());  // a read-back sees the rounded value
    }
    cache_.emplace(key, value);
    return value;
  }

  const KernelDef& k_;
  std::map<std::string, const Stmt*> defs_;
  std::map<std::string, Expr> cache_;
};

}  // namespace

std::vector<PointwiseStep> plan_pointwise(const KernelDef& k) {
  Inliner inliner(k);
  std::vector<const TensorDecl*> params = k.params();
  std::vector<PointwiseStep> steps;
  for (const Stmt& s : k.body) {
    const TensorDecl* target = k.find_tensor(s.target);
    if (target->role != TensorRole::output) continue;
    int param = 0;
    while (params[param] != target) ++param;

    Rename rename;
    std::vector<std::string> vars;
    for (size_t d = 0; d < s.indices.size(); ++d) {
      vars.push_back(fmt::format("s{}", d));
      rename[s.indices[d]] = vars.back();
    }
    Expr value = inliner.rewrite(s.value, rename);
    auto same_space = [&](const PointwiseStep& st) { return st.space == target->shape; };
    auto it = std::find_if(steps.begin(), steps.end(), same_space);
    if (it == steps.end()) {
      steps.push_back(PointwiseStep{vars, target->shape, {}});
      it = steps.end() - 1;
    }
    it->stores.push_back(StepStore{param, value});
  }
  return steps;
}

}  // namespace kiln
