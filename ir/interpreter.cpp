// The CPU reference interpreter.
//
// Each statement is compiled once into a tree of evaluation nodes with every name resolved
// (tensor -> pointer, row-major strides per index variable, symbol -> value), then run over
// its iteration space in blocks: a node evaluates up to kBlock points at once along one
// "vector" index variable, into an array of doubles, so the per-node dispatch is paid once per
// block rather than once per element. Other index variables are held fixed in the context.
//
// Values are doubles throughout: f32 values are computed in f64 and rounded only where
// stored or cast; i32 and u32 values are exact integers kept wrapped to 32 bits by every
// operation; i64 values are held bit for bit (the double's 64 bits are the i64's: from_i64,
// as_i64), since a double cannot hold every i64; bools are 0 or 1. Each node knows the type of
// its values. A gather clamps each computed position into [0, extent - 1]. Temporaries are kept as
// doubles (not rounded to f32), so that the interpreter stays an upper bound on accuracy;
// comparisons with the GPU use a tolerance.
//
// A reduction either loops over its index and accumulates a whole block at once (when the
// block is long), or, for short blocks (e.g. one output row), makes its own index the vector
// variable and folds each block of the body. Both fold in increasing index order.
#include "ir/interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
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
    case DType::i64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case DType::u32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
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
    case DType::i64: {
      if (!(v == std::trunc(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0)) {
        throw UserError({}, fmt::format("{} is not an i64 value", v));
      }
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case DType::u32: {
      if (!(v == std::trunc(v) && v >= 0 && v <= UINT32_MAX)) {
        throw UserError({}, fmt::format("{} is not a u32 value", v));
      }
      uint32_t x = static_cast<uint32_t>(v);
      std::memcpy(p, &x, 4);
      break;
    }
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
/// An i64 value held in a double's bits, and back.
double from_i64(int64_t v) {
  return std::bit_cast<double>(v);
}
int64_t as_i64(double v) {
  return std::bit_cast<int64_t>(v);
}
double wrap_u32(uint64_t v) {
  return static_cast<uint32_t>(v);
}
/// The integer value of a value of integer or bool type t.
int64_t int_value(DType t, double v) {
  return t == DType::i64 ? as_i64(v) : static_cast<int64_t>(v);
}
/// The integer v as a value of type t (wrapped to t; f32: converted).
double int_encode(DType t, int64_t v) {
  switch (t) {
    case DType::i64:
      return from_i64(v);
    case DType::u32:
      return wrap_u32(static_cast<uint64_t>(v));
    case DType::i32:
      return wrap_i32(v);
    default:
      return static_cast<double>(v);
  }
}
/// f32 (held as a double) to an integer type: truncates, NaN gives 0, saturates.
double float_to_int(DType to, double v) {
  if (std::isnan(v)) return to == DType::i64 ? from_i64(0) : 0;
  v = std::trunc(v);
  switch (to) {
    case DType::i64:
      if (v >= 9223372036854775807.0) return from_i64(INT64_MAX);
      if (v <= -9223372036854775808.0) return from_i64(INT64_MIN);
      return from_i64(static_cast<int64_t>(v));
    case DType::u32:
      return std::clamp(v, 0.0, 4294967295.0);
    default:
      return std::clamp(v, -2147483648.0, 2147483647.0);
  }
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
    case DType::i64:
    case DType::u32:
      return float_to_int(to, v);
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
  DType type;
  IndexNode(int v, DType t) : var(v), type(t) {}
  void eval(Ctx& c, double* out, int n) override {
    // As the GPU does: the index as its type (wrapped to 32 bits for i32 and u32).
    auto value = [&](int64_t i) {
      return type == DType::f32 ? static_cast<double>(i) : int_encode(type, i);
    };
    if (c.vec == var) {
      for (int k = 0; k < n; ++k) out[k] = value(c.vec_start + k);
    } else {
      std::fill(out, out + n, value(c.idx[var]));
    }
  }
};

enum class Src { f32, f16, bf16, i32, i64, u32, f64 };

Src source_of(DType stored, bool is_temp) {
  switch (stored) {
    case DType::f32:
      return is_temp ? Src::f64 : Src::f32;
    case DType::f16:
      return Src::f16;
    case DType::bf16:
      return Src::bf16;
    case DType::i32:
      return is_temp ? Src::f64 : Src::i32;
    case DType::i64:
      return is_temp ? Src::f64 : Src::i64;
    case DType::u32:
      return is_temp ? Src::f64 : Src::u32;
    case DType::boolean:
      break;
  }
  internal_check(false, "interpreter: a bool tensor");
  return Src::f64;
}

/// Element `off` of memory of kind `src`, as a value (halves through `table`).
double read_element(Src src, const void* data, const float* table, int64_t off) {
  switch (src) {
    case Src::f32:
      return static_cast<const float*>(data)[off];
    case Src::i32:
      return static_cast<const int32_t*>(data)[off];
    case Src::u32:
      return static_cast<const uint32_t*>(data)[off];
    case Src::i64:
      return from_i64(static_cast<const int64_t*>(data)[off]);
    case Src::f64:
      return static_cast<const double*>(data)[off];
    case Src::f16:
    case Src::bf16:
      return table[static_cast<const uint16_t*>(data)[off]];
  }
  return 0;
}

/// A tensor element: `src` is typed memory, or doubles for a temporary.
struct LoadNode : Node {
  Src src;
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
      case Src::u32:
        gather(static_cast<const uint32_t*>(data), base, step, out, n);
        break;
      case Src::i64:
        for (int k = 0; k < n; ++k)
          out[k] = from_i64(static_cast<const int64_t*>(data)[base + k * step]);
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

/// A gather: each position is evaluated for the block, clamped into its dimension, and the
/// element read; a tensor with an empty dimension reads as 0.
struct GatherNode : Node {
  Src src;
  const void* data;
  const float* table = nullptr;
  std::vector<int64_t> extents, strides;
  std::vector<NodePtr> pos;
  std::vector<DType> pos_type;
  std::vector<std::vector<double>> tmp;
  DType type;

  void eval(Ctx& c, double* out, int n) override {
    const size_t rank = pos.size();
    for (size_t d = 0; d < rank; ++d) pos[d]->eval(c, tmp[d].data(), n);
    if (std::any_of(extents.begin(), extents.end(), [](int64_t e) { return e == 0; })) {
      std::fill(out, out + n, 0.0);  // 0.0's bits are i64 0 as well
      return;
    }
    for (int k = 0; k < n; ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < rank; ++d) {
        int64_t i = std::clamp<int64_t>(int_value(pos_type[d], tmp[d][k]), 0, extents[d] - 1);
        off += i * strides[d];
      }
      out[k] = read_element(src, data, table, off);
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
  DType type;  // of the operand and the result
  NodePtr a;
  void eval(Ctx& c, double* out, int n) override {
    a->eval(c, out, n);
    const bool is_int = type == DType::i32;
    switch (op) {
      case UnaryOp::lnot:
        return map1(out, n, [](double x) { return double(x == 0); });
      case UnaryOp::neg:
        if (type == DType::i64) {
          return map1(out, n, [](double x) {
            return from_i64(static_cast<int64_t>(0 - static_cast<uint64_t>(as_i64(x))));
          });
        }
        if (type == DType::u32) {
          return map1(out, n, [](double x) { return wrap_u32(0 - static_cast<uint64_t>(x)); });
        }
        if (is_int) return map1(out, n, [](double x) { return wrap_i32(-as_int(x)); });
        return map1(out, n, [](double x) { return -x; });
      case UnaryOp::abs:
        if (type == DType::i64) {
          return map1(out, n, [](double x) {
            uint64_t v = static_cast<uint64_t>(as_i64(x));
            return from_i64(static_cast<int64_t>(as_i64(x) < 0 ? 0 - v : v));
          });
        }
        if (type == DType::u32) return;
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
      case UnaryOp::tf32:
        return map1(out, n,
                    [](double x) { return static_cast<double>(to_tf32(static_cast<float>(x))); });
    }
  }
};

double div_i64(double a, double b) {
  int64_t x = as_i64(a), y = as_i64(b);
  if (y == 0) return from_i64(0);
  if (x == INT64_MIN && y == -1) return from_i64(INT64_MIN);
  return from_i64(x / y);
}

/// i64 operations on values held in doubles' bits (wrapping through uint64_t).
double binary_i64(BinaryOp op, double p, double q) {
  int64_t x = as_i64(p), y = as_i64(q);
  uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  switch (op) {
    case BinaryOp::add:
      return from_i64(static_cast<int64_t>(ux + uy));
    case BinaryOp::sub:
      return from_i64(static_cast<int64_t>(ux - uy));
    case BinaryOp::mul:
      return from_i64(static_cast<int64_t>(ux * uy));
    case BinaryOp::div:
      return div_i64(p, q);
    case BinaryOp::max:
      return from_i64(std::max(x, y));
    case BinaryOp::min:
      return from_i64(std::min(x, y));
    case BinaryOp::lt:
      return x < y;
    case BinaryOp::le:
      return x <= y;
    case BinaryOp::gt:
      return x > y;
    case BinaryOp::ge:
      return x >= y;
    case BinaryOp::eq:
      return x == y;
    case BinaryOp::ne:
      return x != y;
    default:
      internal_check(false, "interpreter: i64 operator");
      return 0;
  }
}

struct BinaryNode : Node {
  BinaryOp op;
  DType type;  // of the operands
  NodePtr a, b;
  std::vector<double> tmp = std::vector<double>(kBlock);
  void eval(Ctx& c, double* out, int n) override {
    a->eval(c, out, n);
    b->eval(c, tmp.data(), n);
    const double* y = tmp.data();
    if (type == DType::i64) {
      const BinaryOp o = op;
      return map2(out, y, n, [o](double p, double q) { return binary_i64(o, p, q); });
    }
    if (op == BinaryOp::land)
      return map2(out, y, n, [](double p, double q) { return double(p != 0 && q != 0); });
    if (op == BinaryOp::lor)
      return map2(out, y, n, [](double p, double q) { return double(p != 0 || q != 0); });
    if (type == DType::u32) {  // exact in doubles; comparisons, max and min below are unsigned
      auto u = [](double v) { return static_cast<uint64_t>(v); };
      switch (op) {
        case BinaryOp::add:
          return map2(out, y, n, [&](double p, double q) { return wrap_u32(u(p) + u(q)); });
        case BinaryOp::sub:
          return map2(out, y, n, [&](double p, double q) { return wrap_u32(u(p) - u(q)); });
        case BinaryOp::mul:
          return map2(out, y, n, [&](double p, double q) { return wrap_u32(u(p) * u(q)); });
        case BinaryOp::div:
          return map2(out, y, n,
                      [&](double p, double q) { return q == 0 ? 0.0 : double(u(p) / u(q)); });
        case BinaryOp::max:
          return map2(out, y, n, [](double p, double q) { return std::max(p, q); });
        case BinaryOp::min:
          return map2(out, y, n, [](double p, double q) { return std::min(p, q); });
        default:
          break;
      }
    }
    if (type == DType::i32) {
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
      case BinaryOp::land:
      case BinaryOp::lor:
        break;  // above
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
  DType from;  // the operand's compute type
  NodePtr a;
  void eval(Ctx& c, double* out, int n) override {
    a->eval(c, out, n);
    if (from == DType::i64) {  // to a float type: rounded to f32 once, as the GPU does
      if (is_float(to)) {
        map1(out, n, [](double x) { return double(static_cast<float>(as_i64(x))); });
        if (to != DType::f32) map1(out, n, [this](double x) { return round_to(to, x); });
        return;
      }
      return map1(out, n, [this](double x) { return int_encode(to, as_i64(x)); });
    }
    if (is_integer(to) && from != DType::f32) {  // from i32, u32 or bool: wraps
      return map1(out, n, [this](double x) { return int_encode(to, static_cast<int64_t>(x)); });
    }
    switch (to) {
      case DType::f32:
        return map1(out, n, [](double x) { return double(float(x)); });
      case DType::i32:
      case DType::i64:
      case DType::u32:
        return map1(out, n, [this](double x) { return float_to_int(to, x); });
      default:
        return map1(out, n, [this](double x) { return round_to(to, x); });
    }
  }
};

struct ReduceNode : Node {
  ReduceOp op;
  bool is_int;
  int var;         // the last index of the reduction, walked innermost
  int64_t extent;  // its extent
  // A reduction over several indices: the others, each walked in full for every value of
  // the ones before it (an odometer), outside `var`.
  std::vector<int> outer_vars;
  std::vector<int64_t> outer_extents;
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

  // Calls f() once for every point of outer_vars (set in c.idx), in row-major order; false
  // when one of them is empty.
  template <class F>
  bool for_each_outer(Ctx& c, F&& f) const {
    for (int64_t e : outer_extents) {
      if (e <= 0) return false;
    }
    for (int v : outer_vars) c.idx[v] = 0;
    while (true) {
      f();
      size_t d = outer_vars.size();
      while (d > 0) {
        --d;
        if (++c.idx[outer_vars[d]] < outer_extents[d]) break;
        c.idx[outer_vars[d]] = 0;
        if (d == 0) return true;
      }
      if (outer_vars.empty()) return true;
    }
  }

  void eval(Ctx& c, double* out, int n) override {
    int64_t count = extent;
    for (int64_t e : outer_extents) count *= e;
    if (n >= 32 || extent < 64) {
      std::fill(out, out + n, init());
      for_each_outer(c, [&] {
        for (int64_t r = 0; r < extent; ++r) {
          c.idx[var] = r;
          body->eval(c, tmp.data(), n);
          fold(out, tmp.data(), n);
        }
      });
    } else {
      // Vectorize along the reduction index, one outer point at a time.
      int outer = c.vec;
      int64_t outer_start = c.vec_start;
      for (int k = 0; k < n; ++k) {
        if (outer >= 0) c.idx[outer] = outer_start + k;
        c.vec = var;
        double acc = init();
        for_each_outer(c, [&] {
          for (int64_t r = 0; r < extent; r += kBlock) {
            int len = static_cast<int>(std::min<int64_t>(kBlock, extent - r));
            c.vec_start = r;
            body->eval(c, tmp.data(), len);
            for (int j = 0; j < len; ++j) fold(&acc, &tmp[j], 1);
          }
        });
        out[k] = acc;
      }
      c.vec = outer;
      c.vec_start = outer_start;
    }
    if (op == ReduceOp::mean) map1(out, n, [count](double x) { return x / double(count); });
  }
};

/// rand(seed, offset, counter): philox_uniform (ir/expr.h) of the three i64 operands.
struct RandNode : Node {
  NodePtr seed, offset, counter;
  std::vector<double> s, o, k;

  void eval(Ctx& c, double* out, int n) override {
    s.resize(static_cast<size_t>(n));
    o.resize(static_cast<size_t>(n));
    k.resize(static_cast<size_t>(n));
    seed->eval(c, s.data(), n);
    offset->eval(c, o.data(), n);
    counter->eval(c, k.data(), n);
    for (int i = 0; i < n; ++i) {
      out[i] =
          philox_uniform(static_cast<uint64_t>(as_i64(s[i])), static_cast<uint64_t>(as_i64(o[i])),
                         static_cast<uint64_t>(as_i64(k[i])));
    }
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
            if (e.type() == DType::i64) {
              return std::make_unique<ConstNode>(from_i64(static_cast<int64_t>(n.value)));
            }
            return std::make_unique<ConstNode>(n.value);
          } else if constexpr (std::is_same_v<T, SymRef>) {
            auto it = symbols.find(n.name);
            if (it == symbols.end())
              throw UserError({}, fmt::format("symbol '{}' is not bound", n.name));
            return std::make_unique<ConstNode>(e.type() == DType::f32
                                                   ? static_cast<double>(it->second)
                                                   : int_encode(e.type(), it->second));
          } else if constexpr (std::is_same_v<T, IndexRef>) {
            return std::make_unique<IndexNode>(slot(n.name), e.type());
          } else if constexpr (std::is_same_v<T, Gather>) {
            const Buffer& b = buffers.at(n.tensor);
            auto node = std::make_unique<GatherNode>();
            node->data = b.data;
            node->src = source_of(b.dtype, b.is_temp);
            if (node->src == Src::f16 || node->src == Src::bf16) node->table = half_table(b.dtype);
            node->extents = b.shape;
            node->strides.assign(b.shape.size(), 1);
            for (size_t d = b.shape.size(); d-- > 1;) {
              node->strides[d - 1] = node->strides[d] * b.shape[d];
            }
            for (const auto& p : n.indices) {
              node->pos.push_back(compile(wrap(p)));
              node->pos_type.push_back(wrap(p).type());
              node->tmp.emplace_back(kBlock);
            }
            node->type = e.type();
            return node;
          } else if constexpr (std::is_same_v<T, Load>) {
            const Buffer& b = buffers.at(n.tensor);
            auto node = std::make_unique<LoadNode>();
            node->data = b.data;
            node->src = source_of(b.dtype, b.is_temp);
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
          } else if constexpr (std::is_same_v<T, ScalarRef>) {
            // A scalar parameter: its rank-0 host tensor's one element, the same everywhere.
            const Buffer& b = buffers.at(n.name);
            return std::make_unique<ConstNode>(
                read_element(source_of(b.dtype, b.is_temp), b.data, half_table(b.dtype), 0));
          } else if constexpr (std::is_same_v<T, Rand>) {
            auto node = std::make_unique<RandNode>();
            node->seed = compile(wrap(n.seed));
            node->offset = compile(wrap(n.offset));
            node->counter = compile(wrap(n.counter));
            return node;
          } else if constexpr (std::is_same_v<T, Unary>) {
            auto node = std::make_unique<UnaryNode>();
            node->op = n.op;
            node->type = e.type();
            node->a = compile(wrap(n.a));
            return node;
          } else if constexpr (std::is_same_v<T, Binary>) {
            auto node = std::make_unique<BinaryNode>();
            node->op = n.op;
            node->type = wrap(n.a).type();
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
            node->from = wrap(n.a).type();
            node->a = compile(wrap(n.a));
            return node;
          } else if constexpr (std::is_same_v<T, Scan>) {
            internal_check(false, "interpreter: a scan inside an expression");
            return NodePtr();
          } else {
            auto node = std::make_unique<ReduceNode>();
            node->op = n.op;
            node->is_int = e.type() == DType::i32;
            node->var = slot(n.indices.back());
            node->extent = extents[node->var];
            for (size_t i = 0; i + 1 < n.indices.size(); ++i) {
              node->outer_vars.push_back(slot(n.indices[i]));
              node->outer_extents.push_back(extents[node->outer_vars.back()]);
            }
            node->body = compile(wrap(n.body));
            return node;
          }
        },
        e.node().v);
  }
};

void collect_reductions(const Expr& e, std::vector<std::string>& out) {
  if (const auto* r = e.as<Reduce>()) {
    for (const std::string& v : r->indices) {
      if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
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
    case DType::i64: {
      auto* p = static_cast<int64_t*>(t.data) + base;
      for (int k = 0; k < n; ++k) p[k * step] = as_i64(v[k]);
      break;
    }
    case DType::u32: {
      auto* p = static_cast<uint32_t*>(t.data) + base;
      for (int k = 0; k < n; ++k) p[k * step] = static_cast<uint32_t>(v[k]);
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
  const Scan* scan = s.value.as<Scan>();
  NodePtr root = sc.compile(scan ? wrap(scan->body) : s.value);
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
  // The vector variable: the innermost one, unless it is short and another is much longer;
  // a scan's own index, along which each line is folded in increasing order.
  int vec = static_cast<int>(rank) - 1;
  for (int d = 0; d < static_cast<int>(rank); ++d) {
    if (target.shape[vec] < 64 && target.shape[d] > 4 * target.shape[vec]) vec = d;
  }
  ReduceNode folder;
  folder.op = ReduceOp::sum;
  folder.is_int = false;
  if (scan) {
    vec = sc.slot(scan->index);
    folder.op = scan->op;
    folder.is_int = s.value.type() == DType::i32;
  }
  c.vec = vec;
  int64_t vec_extent = target.shape[vec];
  while (true) {
    int64_t base = 0;
    for (size_t d = 0; d < rank; ++d) base += d == size_t(vec) ? 0 : c.idx[d] * strides[d];
    double acc = folder.init();
    for (int64_t start = 0; start < vec_extent; start += kBlock) {
      int n = static_cast<int>(std::min<int64_t>(kBlock, vec_extent - start));
      c.vec = vec;
      c.vec_start = start;
      root->eval(c, out.data(), n);
      if (scan) {
        for (int k = 0; k < n; ++k) {
          folder.fold(&acc, &out[k], 1);
          out[k] = acc;
        }
      }
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
