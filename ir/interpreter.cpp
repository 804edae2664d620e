// The CPU reference interpreter.
//
// Each statement is compiled once into a tree of evaluation nodes with every name resolved
// (tensor -> pointer, row-major strides per index variable, symbol -> value), then run over
// its iteration space in blocks: a node evaluates up to kBlock points at once along one
// "vector" index variable, into an array of doubles, so the per-node dispatch is paid once per
// block rather than once per element. Other index variables are held fixed in the context.
//
// Values are doubles throughout: f32 values are computed in f64 and rounded only where
// stored or cast; i32 values are exact integers kept wrapped to 32 bits by every i32
// operation; bools are 0 or 1. Temporaries are kept as doubles (not rounded to f32), so that
// the interpreter stays an upper bound on accuracy; comparisons with the GPU use a tolerance.
//
// A reduction either loops over its index and accumulates a whole block at once (when the
// block is long), or, for short blocks (e.g. one output row), makes its own index the vector
// variable and folds each block of the body. Both fold in increasing index order.
#include "ir/interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>

#include "ir/half.h"
#include "ir/text.h"

namespace kiln {

// --- HostTensor -------------------------------------------------------------------------------

HostTensor::HostTensor(DType t, std::vector<int64_t> s) : dtype(t), shape(std::move(s)) {
  bytes.assign(static_cast<size_t>(numel()) * size_of(t), std::byte{0});
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

double HostTensor::get(int64_t i) const {
  const std::byte* p = bytes.data() + i * size_of(dtype);
  switch (dtype) {
    case DType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::f16:
    case DType::bf16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return dtype == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
    case DType::boolean:
      return static_cast<double>(static_cast<uint8_t>(*p));
  }
  return 0;
}

void HostTensor::set(int64_t i, double v) {
  std::byte* p = bytes.data() + i * size_of(dtype);
  switch (dtype) {
    case DType::f32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::i32: {
      if (!(v == std::trunc(v) && v >= INT32_MIN && v <= INT32_MAX)) {
        throw UserError({}, fmt::format("{} is not an i32 value", v));
      }
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::f16:
    case DType::bf16: {
      float f = static_cast<float>(v);
      uint16_t h = dtype == DType::f16 ? f32_to_f16(f) : f32_to_bf16(f);
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::boolean:
      *p = std::byte{v != 0};
      break;
  }
}

// --- Evaluation nodes -------------------------------------------------------------------------

namespace {

constexpr int kBlock = 1024;

/// The current point: every index variable's value, except that the vector variable `vec`
/// takes the values vec_start + k for k in [0, n) of the block being evaluated.
struct Ctx {
  std::vector<int64_t> idx;
  int vec = -1;
  int64_t vec_start = 0;
};

struct Node {
  virtual ~Node() = default;
  /// Writes the values of the points k in [0, n) of the current block to out[k].
  virtual void eval(Ctx& c, double* out, int n) = 0;
};
using NodePtr = std::unique_ptr<Node>;

double wrap_i32(int64_t v) {
  return static_cast<int32_t>(static_cast<uint32_t>(v));
}
int64_t as_int(double v) {
  return static_cast<int64_t>(v);
}

double to_i32(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 2147483647.0) return INT32_MAX;
  if (v <= -2147483648.0) return INT32_MIN;
  return std::trunc(v);
}

double round_to(DType to, double v) {
  switch (to) {
    case DType::f32:
      return static_cast<float>(v);
    case DType::f16:
      return f16_to_f32(f32_to_f16(static_cast<float>(v)));
    case DType::bf16:
      return bf16_to_f32(f32_to_bf16(static_cast<float>(v)));
    case DType::i32:
      return to_i32(v);
    case DType::boolean:
      return v != 0;
  }
  return v;
}

/// Widening tables for the 16-bit formats (256 KiB each, built on first use).
const float* half_table(DType t) {
  auto build = [](float (*conv)(uint16_t)) {
    std::vector<float> v(65536);
    for (uint32_t i = 0; i < 65536; ++i) v[i] = conv(static_cast<uint16_t>(i));
    return v;
  };
  static const std::vector<float> f16 = build(f16_to_f32), bf16 = build(bf16_to_f32);
  return t == DType::f16 ? f16.data() : bf16.data();
}

struct ConstNode : Node {
  double value;
  explicit ConstNode(double v) : value(v) {}
  void eval(Ctx&, double* out, int n) override { std::fill(out, out + n, value); }
};

struct IndexNode : Node {
  int var;
  explicit IndexNode(int v) : var(v) {}
  void eval(Ctx& c, double* out, int n) override {
    if (c.vec == var) {
      for (int k = 0; k < n; ++k) out[k] = static_cast<double>(c.vec_start + k);
    } else {
      std::fill(out, out + n, static_cast<double>(c.idx[var]));
    }
  }
};

/// A tensor element: `src` is f32/f16/bf16/i32 memory, or doubles for a temporary.
struct LoadNode : Node {
  enum class Src { f32, f16, bf16, i32, f64 } src;
  const void* data;
  std::vector<std::pair<int, int64_t>> strides;  // (variable, element stride), one per variable
  const float* table = nullptr;

  void eval(Ctx& c, double* out, int n) override {
    int64_t base = 0, step = 0;
    for (auto [var, stride] : strides) {
      if (var == c.vec) {
        base += stride * c.vec_start;
        step = stride;
      } else {
        base += stride * c.idx[var];
      }
    }
    switch (src) {
      case Src::f32:
        gather(static_cast<const float*>(data), base, step, out, n);
        break;
      case Src::i32:
        gather(static_cast<const int32_t*>(data), base, step, out, n);
        break;
      case Src::f64:
        gather(static_cast<const double*>(data), base, step, out, n);
        break;
      case Src::f16:
      case Src::bf16: {
        const auto* p = static_cast<const uint16_t*>(data) + base;
        for (int k = 0; k < n; ++k) out[k] = table[p[k * step]];
        break;
      }
    }
  }

  template <class T>
  static void gather(const T* p, int64_t base, int64_t step, double* out, int n) {
    p += base;
    if (step == 1) {
      for (int k = 0; k < n; ++k) out[k] = static_cast<double>(p[k]);
    } else if (step == 0) {
      std::fill(out, out + n, static_cast<double>(p[0]));
    } else {
      for (int k = 0; k < n; ++k) out[k] = static_cast<double>(p[k * step]);
    }
  }
};

template <class F>
void map1(double* out, int n, F f) {
  for (int k = 0; k < n; ++k) out[k] = f(out[k]);
}
template <class F>
void map2(double* out, const double* b, int n, F f) {
  for (int k = 0; k < n; ++k) out[k] = f(out[k], b[k]);
}

double fmax_nan(double a, double b) {
  return std::isnan(a) || a > b ? a : b;
}
double fmin_nan(double a, double b) {
  return std::isnan(a) || a < b ? a : b;
}

double div_i32(double a, double b) {
  int64_t x = as_int(a), y = as_int(b);
  if (y == 0) return 0;
  if (x == INT32_MIN && y == -1) return INT32_MIN;
  return static_cast<double>(x / y);
}

struct UnaryNode : Node {
  UnaryOp op;
  bool is_int;
  NodePtr a;
  void eval(Ctx& c, double* out, int n) override {
    a->eval(c, out, n);
    switch (op) {
      case UnaryOp::neg:
        if (is_int) return map1(out, n, [](double x) { return wrap_i32(-as_int(x)); });
        return map1(out, n, [](double x) { return -x; });
      case UnaryOp::abs:
        if (is_int) return map1(out, n, [](double x) { return wrap_i32(std::abs(as_int(x))); });
        return map1(out, n, [](double x) { return std::fabs(x); });
      case UnaryOp::exp:
        return map1(out, n, [](double x) { return std::exp(x); });
      case UnaryOp::log:
        return map1(out, n, [](double x) { return std::log(x); });
      case UnaryOp::sqrt:
        return map1(out, n, [](double x) { return std::sqrt(x); });
      case UnaryOp::rsqrt:
        return map1(out, n, [](double x) { return 1.0 / std::sqrt(x); });
      case UnaryOp::tanh:
        return map1(out, n, [](double x) { return std::tanh(x); });
      case UnaryOp::sigmoid:
        return map1(out, n, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
      case UnaryOp::erf:
        return map1(out, n, [](double x) { return std::erf(x); });
    }
  }
};

struct BinaryNode : Node {
  BinaryOp op;
  bool is_int;  // the operands' type is i32
  NodePtr a, b;
  std::vector<double> tmp = std::vector<double>(kBlock);
  void eval(Ctx& c, double* out, int n) override {
    a->eval(c, out, n);
    b->eval(c, tmp.data(), n);
    const double* y = tmp.data();
    if (is_int) {
      switch (op) {
        case BinaryOp::add:
          return map2(out, y, n,
                      [](double p, double q) { return wrap_i32(as_int(p) + as_int(q)); });
        case BinaryOp::sub:
          return map2(out, y, n,
                      [](double p, double q) { return wrap_i32(as_int(p) - as_int(q)); });
        case BinaryOp::mul:
          return map2(out, y, n,
                      [](double p, double q) { return wrap_i32(as_int(p) * as_int(q)); });
        case BinaryOp::div:
          return map2(out, y, n, div_i32);
        case BinaryOp::max:
          return map2(out, y, n, [](double p, double q) { return std::max(p, q); });
        case BinaryOp::min:
          return map2(out, y, n, [](double p, double q) { return std::min(p, q); });
        default:
          break;
      }
    }
    switch (op) {
      case BinaryOp::add:
        return map2(out, y, n, [](double p, double q) { return p + q; });
      case BinaryOp::sub:
        return map2(out, y, n, [](double p, double q) { return p - q; });
      case BinaryOp::mul:
        return map2(out, y, n, [](double p, double q) { return p * q; });
      case BinaryOp::div:
        return map2(out, y, n, [](double p, double q) { return p / q; });
      case BinaryOp::max:
        return map2(out, y, n, fmax_nan);
      case BinaryOp::min:
        return map2(out, y, n, fmin_nan);
      case BinaryOp::pow:
        return map2(out, y, n, [](double p, double q) { return std::pow(p, q); });
      case BinaryOp::lt:
        return map2(out, y, n, [](double p, double q) { return double(p < q); });
      case BinaryOp::le:
        return map2(out, y, n, [](double p, double q) { return double(p <= q); });
      case BinaryOp::gt:
        return map2(out, y, n, [](double p, double q) { return double(p > q); });
      case BinaryOp::ge:
        return map2(out, y, n, [](double p, double q) { return double(p >= q); });
      case BinaryOp::eq:
        return map2(out, y, n, [](double p, double q) { return double(p == q); });
      case BinaryOp::ne:
        return map2(out, y, n, [](double p, double q) { return double(p != q); });
    }
  }
};

struct SelectNode : Node {
  NodePtr cond, a, b;
  std::vector<double> tc = std::vector<double>(kBlock), tb = std::vector<double>(kBlock);
  void eval(Ctx& c, double* out, int n) override {
    cond->eval(c, tc.data(), n);
    a->eval(c, out, n);
    b->eval(c, tb.data(), n);
    for (int k = 0; k < n; ++k) out[k] = tc[k] != 0 ? out[k] : tb[k];
  }
};

struct CastNode : Node {
  DType to;
  NodePtr a;
  void eval(Ctx& c, double* out, int n) override {
    a->eval(c, out, n);
    switch (to) {
      case DType::f32:
        return map1(out, n, [](double x) { return double(float(x)); });
      case DType::i32:
        return map1(out, n, to_i32);
      default:
        return map1(out, n, [this](double x) { return round_to(to, x); });
    }
  }
};

struct ReduceNode : Node {
  ReduceOp op;
  bool is_int;
  int var;
  int64_t extent;
  NodePtr body;
  std::vector<double> tmp = std::vector<double>(kBlock);

  double init() const {
    switch (op) {
      case ReduceOp::prod:
        return 1;
      case ReduceOp::max:
        return is_int ? INT32_MIN : -INFINITY;
      case ReduceOp::min:
        return is_int ? INT32_MAX : INFINITY;
      default:
        return 0;
    }
  }
  /// acc[k] = acc[k] (op) v[k] for k in [0, n).
  void fold(double* acc, const double* v, int n) const {
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::mean:
        if (is_int)
          return map2(acc, v, n,
                      [](double p, double q) { return wrap_i32(as_int(p) + as_int(q)); });
        return map2(acc, v, n, [](double p, double q) { return p + q; });
      case ReduceOp::prod:
        if (is_int)
          return map2(acc, v, n,
                      [](double p, double q) { return wrap_i32(as_int(p) * as_int(q)); });
        return map2(acc, v, n, [](double p, double q) { return p * q; });
      case ReduceOp::max:
        return map2(acc, v, n, fmax_nan);
      case ReduceOp::min:
        return map2(acc, v, n, fmin_nan);
    }
  }

  void eval(Ctx& c, double* out, int n) override {
    if (n >= 32 || extent < 64) {
      std::fill(out, out + n, init());
      for (int64_t r = 0; r < extent; ++r) {
        c.idx[var] = r;
        body->eval(c, tmp.data(), n);
        fold(out, tmp.data(), n);
      }
    } else {
      // Vectorize along the reduction index, one outer point at a time.
      int outer = c.vec;
      int64_t outer_start = c.vec_start;
      for (int k = 0; k < n; ++k) {
        if (outer >= 0) c.idx[outer] = outer_start + k;
        c.vec = var;
        double acc = init();
        for (int64_t r = 0; r < extent; r += kBlock) {
          int len = static_cast<int>(std::min<int64_t>(kBlock, extent - r));
          c.vec_start = r;
          body->eval(c, tmp.data(), len);
          for (int j = 0; j < len; ++j) fold(&acc, &tmp[j], 1);
        }
        out[k] = acc;
      }
      c.vec = outer;
      c.vec_start = outer_start;
    }
    if (op == ReduceOp::mean) map1(out, n, [this](double x) { return x / double(extent); });
  }
};

// --- Compilation of a statement --------------------------------------------------------------

/// Where a tensor's elements live during interpretation.
struct Buffer {
  DType dtype;  // storage type; temporaries hold doubles whatever their dtype
  std::vector<int64_t> shape;
  void* data;
  bool is_temp;
};

struct StmtCompiler {
  const std::map<std::string, Buffer, std::less<>>& buffers;
  const SymbolValues& symbols;
  std::map<std::string, int> vars;  // index variable -> slot in Ctx::idx
  std::vector<int64_t> extents;     // per slot

  int slot(const std::string& name) {
    auto it = vars.find(name);
    internal_check(it != vars.end(), "interpreter: unknown index variable");
    return it->second;
  }

  NodePtr compile(const Expr& e) {
    return std::visit(
        [&](const auto& n) -> NodePtr {
          using T = std::decay_t<decltype(n)>;
          if constexpr (std::is_same_v<T, Const>) {
            return std::make_unique<ConstNode>(n.value);
          } else if constexpr (std::is_same_v<T, SymRef>) {
            auto it = symbols.find(n.name);
            if (it == symbols.end())
              throw UserError({}, fmt::format("symbol '{}' is not bound", n.name));
            return std::make_unique<ConstNode>(static_cast<double>(it->second));
          } else if constexpr (std::is_same_v<T, IndexRef>) {
            return std::make_unique<IndexNode>(slot(n.name));
          } else if constexpr (std::is_same_v<T, Load>) {
            const Buffer& b = buffers.at(n.tensor);
            auto node = std::make_unique<LoadNode>();
            node->data = b.data;
            using Src = LoadNode::Src;
            node->src = b.is_temp               ? Src::f64
                        : b.dtype == DType::f32 ? Src::f32
                        : b.dtype == DType::i32 ? Src::i32
                        : b.dtype == DType::f16 ? Src::f16
                                                : Src::bf16;
            if (node->src == Src::f16 || node->src == Src::bf16) node->table = half_table(b.dtype);
            int64_t stride = 1;
            for (size_t d = n.indices.size(); d-- > 0;) {
              int v = slot(n.indices[d]);
              auto it = std::find_if(node->strides.begin(), node->strides.end(),
                                     [&](const auto& p) { return p.first == v; });
              if (it == node->strides.end()) {
                node->strides.emplace_back(v, stride);
              } else {
                it->second += stride;  // x[i, i]: the diagonal
              }
              stride *= b.shape[d];
            }
            return node;
          } else if constexpr (std::is_same_v<T, Unary>) {
            auto node = std::make_unique<UnaryNode>();
            node->op = n.op;
            node->is_int = e.type() == DType::i32;
            node->a = compile(wrap(n.a));
            return node;
          } else if constexpr (std::is_same_v<T, Binary>) {
            auto node = std::make_unique<BinaryNode>();
            node->op = n.op;
            node->is_int = wrap(n.a).type() == DType::i32;
            node->a = compile(wrap(n.a));
            node->b = compile(wrap(n.b));
            return node;
          } else if constexpr (std::is_same_v<T, Select>) {
            auto node = std::make_unique<SelectNode>();
            node->cond = compile(wrap(n.cond));
            node->a = compile(wrap(n.a));
            node->b = compile(wrap(n.b));
            return node;
          } else if constexpr (std::is_same_v<T, Cast>) {
            auto node = std::make_unique<CastNode>();
            node->to = n.to;
            node->a = compile(wrap(n.a));
            return node;
          } else {
            auto node = std::make_unique<ReduceNode>();
            node->op = n.op;
            node->is_int = e.type() == DType::i32;
            node->var = slot(n.index);
            node->extent = extents[node->var];
            node->body = compile(wrap(n.body));
            return node;
          }
        },
        e.node().v);
  }
};

void collect_reductions(const Expr& e, std::vector<std::string>& out) {
  if (const auto* r = e.as<Reduce>()) {
    if (std::find(out.begin(), out.end(), r->index) == out.end()) out.push_back(r->index);
  }
  for_each_child(e, [&](const Expr& c) { collect_reductions(c, out); });
}

/// Stores n values of a block at element offsets base + k * step of the target.
void store(const Buffer& t, int64_t base, int64_t step, const double* v, int n) {
  if (t.is_temp) {
    auto* p = static_cast<double*>(t.data) + base;
    for (int k = 0; k < n; ++k) p[k * step] = v[k];
    return;
  }
  switch (t.dtype) {
    case DType::f32: {
      auto* p = static_cast<float*>(t.data) + base;
      for (int k = 0; k < n; ++k) p[k * step] = static_cast<float>(v[k]);
      break;
    }
    case DType::i32: {
      auto* p = static_cast<int32_t*>(t.data) + base;
      for (int k = 0; k < n; ++k) p[k * step] = static_cast<int32_t>(to_i32(v[k]));
      break;
    }
    case DType::f16:
    case DType::bf16: {
      auto* p = static_cast<uint16_t*>(t.data) + base;
      bool f16 = t.dtype == DType::f16;
      for (int k = 0; k < n; ++k) {
        float f = static_cast<float>(v[k]);
        p[k * step] = f16 ? f32_to_f16(f) : f32_to_bf16(f);
      }
      break;
    }
    case DType::boolean:
      internal_check(false, "interpreter: a bool tensor");
  }
}

void run_stmt(const KernelDef& k, const Stmt& s, const SymbolValues& symbols,
              const std::map<std::string, Buffer, std::less<>>& buffers) {
  std::map<std::string, Dim> dims = index_extents(k, s);
  StmtCompiler sc{buffers, symbols, {}, {}};
  std::vector<std::string> names = s.indices;
  collect_reductions(s.value, names);
  for (const std::string& name : names) {
    sc.vars.emplace(name, static_cast<int>(sc.extents.size()));
    sc.extents.push_back(resolve_shape({dims.at(name)}, symbols)[0]);
  }
  NodePtr root = sc.compile(s.value);
  const Buffer& target = buffers.at(s.target);

  size_t rank = s.indices.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * target.shape[d];
  Ctx c;
  c.idx.assign(names.size(), 0);
  std::vector<double> out(kBlock);
  if (rank == 0) {
    root->eval(c, out.data(), 1);
    store(target, 0, 1, out.data(), 1);
    return;
  }
  for (int64_t e : target.shape) {
    if (e == 0) return;
  }
  // The vector variable: the innermost one, unless it is short and another is much longer.
  int vec = static_cast<int>(rank) - 1;
  for (int d = 0; d < static_cast<int>(rank); ++d) {
    if (target.shape[vec] < 64 && target.shape[d] > 4 * target.shape[vec]) vec = d;
  }
  c.vec = vec;
  int64_t vec_extent = target.shape[vec];
  while (true) {
    int64_t base = 0;
    for (size_t d = 0; d < rank; ++d) base += d == size_t(vec) ? 0 : c.idx[d] * strides[d];
    for (int64_t start = 0; start < vec_extent; start += kBlock) {
      int n = static_cast<int>(std::min<int64_t>(kBlock, vec_extent - start));
      c.vec = vec;
      c.vec_start = start;
      root->eval(c, out.data(), n);
      store(target, base + start * strides[vec], strides[vec], out.data(), n);
    }
    // Advance the other left-hand side variables, last fastest.
    int d = static_cast<int>(rank) - 1;
    for (; d >= 0; --d) {
      if (d == vec) continue;
      if (++c.idx[d] < target.shape[d]) break;
      c.idx[d] = 0;
    }
    if (d < 0) return;
  }
}

std::string shape_string(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace

void interpret(const KernelDef& k, const SymbolValues& symbols,
               std::map<std::string, HostTensor*, std::less<>>& tensors) {
  verify(k);
  std::map<std::string, Buffer, std::less<>> buffers;
  for (const TensorDecl* t : k.params()) {
    auto it = tensors.find(t->name);
    if (it == tensors.end() || !it->second) {
      throw UserError({}, fmt::format("no buffer for {} '{}'",
                                      t->role == TensorRole::input ? "input" : "output", t->name));
    }
    HostTensor& h = *it->second;
    std::vector<int64_t> shape = resolve_shape(t->shape, symbols);
    if (h.dtype != t->dtype) {
      throw UserError({}, fmt::format("tensor '{}' has dtype {} but the kernel expects {}", t->name,
                                      to_string(h.dtype), to_string(t->dtype)));
    }
    if (h.shape != shape) {
      throw UserError({}, fmt::format("tensor '{}' has shape {} but the kernel expects {}", t->name,
                                      shape_string(h.shape), shape_string(shape)));
    }
    if (h.bytes.size() != static_cast<size_t>(h.numel()) * size_of(h.dtype)) {
      throw UserError({}, fmt::format("tensor '{}' holds {} bytes but its shape needs {}", t->name,
                                      h.bytes.size(), h.numel() * size_of(h.dtype)));
    }
    buffers.emplace(t->name, Buffer{t->dtype, shape, h.data(), false});
  }
  std::vector<std::vector<double>> temps;
  temps.reserve(k.temps.size());
  for (const TensorDecl& t : k.temps) {
    std::vector<int64_t> shape = resolve_shape(t.shape, symbols);
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    temps.emplace_back(static_cast<size_t>(n));
    buffers.emplace(t.name, Buffer{t.dtype, shape, temps.back().data(), true});
  }
  for (const Stmt& s : k.body) run_stmt(k, s, symbols, buffers);
}

}  // namespace kiln
