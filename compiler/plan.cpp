// See plan.h.
#include "compiler/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "compiler/config.h"

namespace kiln {

bool recomputed_temp(const KernelDef& k, const Stmt& st) {
  const TensorDecl* t = k.find_tensor(st.target);
  return t && t->role == TensorRole::temp && !st.value.as<Reduce>() && !st.value.as<Scan>() &&
         t->dtype == st.value.type() && !t->tf32;
}

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
    if (std::any_of(red->indices.begin(), red->indices.end(),
                    [&](const std::string& v) { return rename.find(v) == rename.end(); })) {
      throw UserError(e.loc(), fmt::format("'{}' is a reduction the code generator cannot place "
                                           "(the interpreter runs it)",
                                           to_string(red->op)));
    }
    std::vector<std::string> indices;
    for (const std::string& v : red->indices) indices.push_back(var(v));
    out = make_reduce(red->op, indices, rewrite(wrap(red->body), rename, memo), e.loc());
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

namespace {

bool narrow(DType t) {  // a 16-bit float
  return t == DType::f16 || t == DType::bf16;
}

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
      steps.push_back(PointwiseStep{vars, target->shape, {}, {}});
      it = steps.end() - 1;
    }
    it->stores.push_back(StepStore{param, value});
  }
  for (PointwiseStep& st : steps) {
    st.tiling = plan_tiling(st);
    std::vector<DType> stored;
    std::vector<Expr> values;
    for (const StepStore& store : st.stores) {
      stored.push_back(params[static_cast<size_t>(store.param)]->dtype);
      values.push_back(store.value);
    }
    st.fast_functions = fast_functions(stored, values);
    st.work_per_byte = pointwise_work_per_byte(k, st);
  }
  return steps;
}

namespace {

// The instructions one element of node e costs, its operands aside (pointwise_work_per_byte):
// SASS instructions of its usual lowering (compiler/emit.cpp), rounded.
double node_cost(const Expr& e, bool fast_functions) {
  if (const Load* ld = e.as<Load>()) return narrow(ld->stored) ? 2 : 1;  // with the widening
  if (const Gather* g = e.as<Gather>()) return narrow(g->stored) ? 2 : 1;
  if (e.as<Rand>()) return 16;  // Philox 4x32-10: ten rounds of 6 for 4 numbers, and the bits
  if (const Unary* u = e.as<Unary>()) {
    switch (u->op) {
      case UnaryOp::exp:
        return 2;  // ex2.approx and its scaling
      case UnaryOp::sqrt:
      case UnaryOp::rsqrt:
        return 4;
      case UnaryOp::tanh:
        return fast_functions ? 1 : 18;  // tanh.approx.f32, else libdevice
      case UnaryOp::sigmoid:
        return 13;  // exp, an add and a division
      case UnaryOp::log:
        return 12;  // libdevice
      case UnaryOp::erf:
        return fast_functions ? 7 : 20;  // a polynomial and tanh.approx.f32, else libdevice
      case UnaryOp::tf32:
        return 1;  // an and
      default:
        return 1;
    }
  }
  if (const Binary* b = e.as<Binary>()) {
    const bool wide = wrap(b->a).type() == DType::i64;
    switch (b->op) {
      case BinaryOp::div:
        return wrap(b->a).type() == DType::f32 ? 10 : 20;  // IEEE f32, or integer division
      case BinaryOp::pow:
        return 40;
      default:
        return wide ? 2 : 1;
    }
  }
  if (e.as<Select>() || e.as<Cast>()) return 1;
  return 0;  // constants, indices, symbols and scalars
}

}  // namespace

double pointwise_work_per_byte(const KernelDef& k, const PointwiseStep& step) {
  std::vector<const TensorDecl*> params = k.params();
  double work = 0, bytes = 0;
  std::unordered_set<Expr> seen;  // structurally equal nodes are evaluated once (ValueMemo)
  auto visit = [&](auto&& self, const Expr& e) -> void {
    // What is the same at every point (a scale 1 / (1 - p)) is evaluated once per thread.
    if (is_launch_invariant(e) || !seen.insert(e).second) return;
    work += node_cost(e, step.fast_functions);
    if (const Load* ld = e.as<Load>()) {
      const bool every = std::all_of(step.vars.begin(), step.vars.end(), [&](const std::string& v) {
        return std::find(ld->indices.begin(), ld->indices.end(), v) != ld->indices.end();
      });
      if (every) bytes += static_cast<double>(size_of(ld->stored));
    }
    if (const Gather* g = e.as<Gather>()) bytes += static_cast<double>(size_of(g->stored));
    for_each_child(e, [&](const Expr& c) { self(self, c); });
  };
  for (const StepStore& st : step.stores) {
    const DType t = params[static_cast<size_t>(st.param)]->dtype;
    work += narrow(t) ? 2 : 1;
    bytes += static_cast<double>(size_of(t));
    visit(visit, st.value);
  }
  return bytes > 0 ? work / bytes : work;
}

std::vector<Expr> statement_values(const KernelDef& k) {
  std::vector<Expr> values;
  for (const Stmt& s : k.body) values.push_back(s.value);
  return values;
}

bool any_node(const std::vector<Expr>& values, const std::function<bool(const Expr&)>& pred) {
  auto any = [&](auto&& self, const Expr& e) -> bool {
    bool found = pred(e);
    for_each_child(e, [&](const Expr& c) { found = found || self(self, c); });
    return found;
  };
  return std::any_of(values.begin(), values.end(), [&](const Expr& v) { return any(any, v); });
}

namespace {

bool evaluates(const std::vector<Expr>& values, UnaryOp op) {
  return any_node(values, [op](const Expr& e) {
    const Unary* u = e.as<Unary>();
    return u && u->op == op;
  });
}

}  // namespace

bool fast_functions(const std::vector<DType>& stored, const std::vector<Expr>& values) {
  return !stored.empty() && std::all_of(stored.begin(), stored.end(), narrow) &&
         !approximated_functions(values).empty();
}

std::string approximated_functions(const std::vector<Expr>& values) {
  const bool tanh = evaluates(values, UnaryOp::tanh), erf = evaluates(values, UnaryOp::erf);
  return tanh && erf ? "tanh and erf" : tanh ? "tanh" : erf ? "erf" : "";
}

int Tiling::smem_bytes_per_element() const {
  int bytes = 0;
  for (const TiledLoad& l : loads) bytes += static_cast<int>(size_of(l.stored));
  return bytes;
}

namespace {

// Shared memory of tiles of rows x cols elements a load, each load's tile a multiple of 16 bytes.
int64_t tiles_smem_bytes(const std::vector<TiledLoad>& loads, int64_t rows, int64_t cols) {
  int64_t bytes = 0;
  for (const TiledLoad& l : loads) bytes += (rows * cols * size_of(l.stored) + 15) / 16 * 16;
  return bytes;
}

}  // namespace

int64_t Tiling::shifted_smem_bytes(int vec, int tile_in, int tile_out) const {
  return tiles_smem_bytes(loads, tile_in + vec, tile_out + vec);
}

bool Tiling::shifts(int vec, int tile_in, int tile_out) const {
  return odd_shifted && vec > 1 && shifted_smem_bytes(vec, tile_in, tile_out) <= kStaticSmemBytes;
}

int64_t Tiling::rows_smem_bytes(int vec, int tile_in, int tile_out) const {
  return tiles_smem_bytes(loads, tile_in, tile_out + vec);
}

bool Tiling::aligned_rows(int vec, int tile_in, int tile_out) const {
  // Step 4 joins a chunk from 32-bit words: a vector of every load is at least one.
  const bool words = std::all_of(loads.begin(), loads.end(), [&](const TiledLoad& l) {
    return vec * size_of(l.stored) % 4 == 0;
  });
  return vec > 1 && words && rows_smem_bytes(vec, tile_in, tile_out) <= kStaticSmemBytes;
}

int Tiling::registers(int vec, int tile_in, int tile_out, int block) const {
  if (vec < 2 || block < 1) return 0;
  auto per_thread = [&](int64_t items) { return (items + block - 1) / block; };
  int64_t bytes = 0, widest = 0;  // every load's element bytes; the widest load's
  for (const TiledLoad& l : loads) {
    bytes += static_cast<int64_t>(size_of(l.stored));
    widest = std::max(widest, static_cast<int64_t>(size_of(l.stored)));
  }
  const int64_t qs = tile_in / vec, block_bytes = int64_t{vec} * vec * bytes;
  int64_t in_flight = per_thread(qs * (tile_out / vec)) * block_bytes;  // the vector path's
  if (aligned_rows(vec, tile_in, tile_out)) {
    in_flight = std::max(in_flight, per_thread(qs * (tile_out / vec + 1)) * block_bytes);
  }
  // Step 4: every chunk's lanes, read from the tiles and from the other loads, live until the
  // chunks are stored.
  const int64_t chunks = per_thread(int64_t{tile_in} * (tile_out / vec));
  in_flight = std::max(in_flight, chunks * vec * (bytes + other_bytes));
  if (shifts(vec, tile_in, tile_out)) {
    in_flight = std::max(in_flight, per_thread(int64_t{tile_out + vec} * (qs + 1)) * vec * widest);
  } else {  // element by element: the vector path's elements, each with its 8-byte address
    const int64_t elements = per_thread(qs * (tile_out / vec)) * vec * vec;
    in_flight = std::max(in_flight, elements * (bytes + 8 * static_cast<int64_t>(loads.size())));
  }
  return static_cast<int>((in_flight / 4 + 32 + 7) / 8 * 8);
}

int registers_allowed(int blocks, int block) {
  const int quarter_warps = (blocks * ((block + 31) / 32) + 3) / 4;
  return 16384 / quarter_warps / 32 / 8 * 8;
}

int Tiling::blocks_per_sm(int vec, int tile_in, int tile_out, int block) const {
  // An SM's 64K registers are four quarters of 16K, each holding whole warps of 32 threads.
  // No more than a thread's 255 registers: nothing to ask.
  const int r = registers(vec, tile_in, tile_out, block);
  const int blocks = r > 0 ? 4 * (16384 / (r * 32)) / ((block + 31) / 32) : 0;
  return blocks > 0 && registers_allowed(blocks, block) < 255 ? blocks : 0;
}

std::vector<std::vector<int>> Tiling::dims(int rank) const {
  std::vector<std::vector<int>> out;
  for (int v = 0; v < rank; ++v) {
    if (v > 0 && !joined.empty() && joined[static_cast<size_t>(v)]) {
      out.back().push_back(v);
    } else {
      out.push_back({v});
    }
  }
  return out;
}

namespace {

// Tiling::joined: v joins v - 1 where every load indexes v right after v - 1 (or neither) and
// no value reads the index of either (a value of v - 1 or v would need the joined index split).
// `loads` holds every load's variable positions, `read` whether a value reads each variable.
std::vector<bool> joined_variables(const std::vector<std::vector<int>>& loads,
                                   const std::vector<bool>& read) {
  const int rank = static_cast<int>(read.size());
  std::vector<bool> joined(read.size(), false);
  for (int v = 1; v < rank; ++v) {
    if (read[static_cast<size_t>(v - 1)] || read[static_cast<size_t>(v)]) continue;
    joined[static_cast<size_t>(v)] = std::all_of(loads.begin(), loads.end(), [&](const auto& l) {
      const auto n = [&](int x) { return std::count(l.begin(), l.end(), x); };
      if (n(v - 1) == 0 && n(v) == 0) return true;
      if (n(v - 1) != 1 || n(v) != 1) return false;
      const auto at = std::find(l.begin(), l.end(), v - 1);
      return at + 1 != l.end() && at[1] == v;
    });
  }
  return joined;
}

}  // namespace

Tiling plan_tiling(const PointwiseStep& step) {
  const int rank = static_cast<int>(step.vars.size());
  if (rank < 2) return {};
  const int inner = rank - 1;
  // The distinct transposed loads, in order of first use (stores in order, operands first).
  std::vector<TiledLoad> transposed;
  std::vector<TiledLoad> all;             // every load (a repeated variable: vars empty)
  std::vector<std::vector<int>> indexed;  // every load's variable positions (joined_variables)
  std::vector<bool> read(static_cast<size_t>(rank), false);  // a value reads the index
  auto position = [&](const std::string& v) {
    auto pos = std::find(step.vars.begin(), step.vars.end(), v);
    internal_check(pos != step.vars.end(), "plan_tiling: unknown index variable");
    return static_cast<int>(pos - step.vars.begin());
  };
  std::unordered_map<const ExprNode*, bool> seen;
  auto visit = [&](auto&& self, const Expr& e) -> void {
    if (!seen.emplace(e.ptr().get(), true).second) return;
    for_each_child(e, [&](const Expr& c) { self(self, c); });
    if (const IndexRef* r = e.as<IndexRef>()) read[static_cast<size_t>(position(r->name))] = true;
    const Load* ld = e.as<Load>();
    if (!ld) return;
    all.push_back({ld->tensor, {}, ld->stored});
    std::vector<int>& vars = indexed.emplace_back();
    for (const std::string& v : ld->indices) vars.push_back(position(v));
    if (vars.empty()) return;
    TiledLoad t{ld->tensor, {}, ld->stored};
    for (int p : vars) {
      if (std::find(t.vars.begin(), t.vars.end(), p) != t.vars.end()) return;  // repeated
      t.vars.push_back(p);
    }
    all.back() = t;
    const bool uses_inner = std::find(t.vars.begin(), t.vars.end(), inner) != t.vars.end();
    if (!uses_inner || t.vars.back() == inner) return;
    if (std::find(transposed.begin(), transposed.end(), t) == transposed.end()) {
      transposed.push_back(t);
    }
  };
  for (const StepStore& s : step.stores) visit(visit, s.value);
  if (transposed.empty()) return {};
  // The variable whose transposed loads carry the most bytes per element (the first on ties).
  std::map<int, int> bytes;
  for (const TiledLoad& t : transposed) bytes[t.vars.back()] += size_of(t.stored);
  Tiling tiling;
  int best = 0;
  for (const TiledLoad& t : transposed) {
    const int b = bytes[t.vars.back()];
    if (b > best) best = b, tiling.across = t.vars.back();
  }
  for (const TiledLoad& t : transposed) {
    if (t.vars.back() == tiling.across) tiling.loads.push_back(t);
  }
  if (tiling.smem_bytes_per_element() > 12) return {};
  for (const TiledLoad& l : all) {
    const bool tiled = std::find(tiling.loads.begin(), tiling.loads.end(), l) != tiling.loads.end();
    if (!tiled || size_of(l.stored) < 4) tiling.odd_shifted = true;
    if (!tiled) tiling.other_bytes += static_cast<int>(size_of(l.stored));
  }
  tiling.joined = joined_variables(indexed, read);
  if (std::none_of(tiling.joined.begin(), tiling.joined.end(), [](bool j) { return j; })) {
    tiling.joined.clear();
  }
  return tiling;
}

}  // namespace kiln
