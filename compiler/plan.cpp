// See plan.h.
#include "compiler/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

namespace kiln {

Inliner::Inliner(const KernelDef& k, std::function<bool(const Stmt&)> inline_it) : k_(k) {
  for (const Stmt& s : k.body) {
    if (!inline_it || inline_it(s)) defs_[s.target] = &s;
  }
}

Expr Inliner::rewrite(const Expr& e, const Rename& rename) {
  std::unordered_map<const ExprNode*, Expr> memo;
  return rewrite(e, rename, memo);
}

Expr Inliner::rewrite(const Expr& e, const Rename& rename,
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
    if (rename.find(red->index) == rename.end()) {
      throw UserError(e.loc(), fmt::format("'{}' is a reduction the code generator cannot place "
                                           "(the interpreter runs it)",
                                           to_string(red->op)));
    }
    out = make_reduce(red->op, var(red->index), rewrite(wrap(red->body), rename, memo), e.loc());
  } else {
    out = map_children(e, [&](const Expr& c) { return rewrite(c, rename, memo); });
  }
  memo.emplace(e.ptr().get(), out);
  return out;
}

Expr Inliner::inline_definition(const Stmt& s, const std::vector<std::string>& idx) {
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
