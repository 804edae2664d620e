// Expressions of the Kiln IR: immutable nodes behind a cheap value handle.
//
// An expression computes one element of a statement's iteration space. Every node has a
// compute type (DType::f32, i32 or boolean) and the source location it was parsed from
// (ignored by equality and hashing). Semantics, which the CPU interpreter
// (ir/interpreter.h) and the GPU code generator must both honour:
//  - f32 arithmetic is IEEE single precision (the interpreter computes in f64 and rounds only
//    where a value is stored or cast; the comparison tolerance absorbs the difference). The
//    code generator may fuse a * b + c into one fma with a single rounding, as nvcc does.
//  - Integer arithmetic (i32, i64, u32) wraps: two's complement for i32 and i64, modulo 2^32
//    for u32. Division truncates toward zero; x / 0 is 0 and INT32_MIN / -1 is INT32_MIN
//    (INT64_MIN / -1 is INT64_MIN), so no input traps. Comparisons, max and min of u32 are
//    unsigned. Sums and other reductions take f32 or i32 bodies only.
//  - max/min on f32 propagate NaN (like torch.maximum); on i32 they are the usual ones.
//  - Comparisons yield bool; bool is consumed by where(), a cast (false->0, true->1) and the
//    logical operators && || ! (bool operands, bool result; both operands are evaluated).
//  - Cast to f16/bf16 rounds to nearest even and the result is computed on in f32; cast from
//    f32 to an integer type truncates toward zero (NaN -> 0, out of range saturates); between
//    integer types it wraps (i64 -> i32 and -> u32 keep the low 32 bits, i32 -> i64 sign-extends,
//    u32 -> i64 zero-extends, i32 <-> u32 reinterpret the bits); integer -> f32 rounds to
//    nearest even.
//  - A gather (Gather) reads a tensor at positions computed from tensor values. Each computed
//    position is clamped into [0, extent - 1] of its dimension, so no gather reads out of
//    bounds; addresses are computed in 64 bits.
//  - Math functions (exp, log, sqrt, rsqrt, tanh, sigmoid, erf, pow) take and return f32;
//    abs and neg take f32 or i32.
//  - A scalar parameter (ScalarRef) is a value passed at launch, the same at every point.
//  - rand(seed, offset, counter) (Rand) is a uniform f32 in [0, 1) from Philox 4x32-10, a
//    pure function of its three i64 operands (docs/language.md gives the algorithm bit for
//    bit; philox_uniform below is the reference both the interpreter and the GPU follow).
//  - A reduction folds its body over one or more index variables (not bound by the statement's
//    left-hand side; several fold over the product of their extents as one reduction) in f64
//    in the interpreter and f32 on the GPU; mean is sum / (product of the extents).
//  - A scan (Scan: cumsum, cumprod, cummax, cummin) is inclusive along an index variable the
//    statement's left-hand side binds: at index = j it folds the body over index = 0, 1, .., j.
//    The interpreter folds in that order in f64; the GPU accumulates in f32 (i32 bodies wrap)
//    in an order of its choosing (blocked prefix sums). max/min propagate NaN as reductions do.
//
// Weak operands: a literal, a dimension symbol (SymRef) or an index variable (IndexRef) has
// no fixed type; make_binary and make_select convert such an operand to the other operand's
// type when that is lossless in kind (i32 -> f32). Everything else must match exactly.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/diag.h"
#include "ir/dtype.h"
#include "ir/shape.h"

namespace kiln {

class Expr;

/// `tf32` keeps an f32's sign, exponent and top 10 significand bits (toward zero, as tensor cores
/// read f32 operands in tf32 mode): ir/dtype.h to_tf32.
enum class UnaryOp : uint8_t { neg, abs, exp, log, sqrt, rsqrt, tanh, sigmoid, erf, lnot, tf32 };
enum class BinaryOp : uint8_t {
  add,
  sub,
  mul,
  div,
  max,
  min,
  pow,
  lt,
  le,
  gt,
  ge,
  eq,
  ne,
  land,
  lor
};
enum class ReduceOp : uint8_t { sum, max, min, prod, mean };

/// A literal. For f32 the value is already rounded to float; for i32 it is integral; for
/// boolean it is 0 or 1.
struct Const {
  double value;
};
/// The value of a dimension symbol bound at launch (e.g. `N` in `x / N`).
struct SymRef {
  std::string name;
};
/// The value of an index variable of the enclosing statement (e.g. `i` in `where(i > j, ..)`).
struct IndexRef {
  std::string name;
};
/// Element of a tensor (an input, or a temporary defined by an earlier statement) at the
/// given index variables, one per dimension. `stored` is the tensor's storage type; the
/// node's type is compute_type(stored).
struct Load {
  std::string tensor;
  std::vector<std::string> indices;
  DType stored;
};
/// Element of an input tensor at computed positions: `indices` holds one integer expression
/// (i32, i64 or u32) per dimension; a position that is a plain index variable is an IndexRef of
/// type i64. At least one position is computed (otherwise it is a Load). Computed positions
/// are clamped into [0, extent - 1]. `shape` is the tensor's declared shape; the node's type
/// is compute_type(stored).
struct Gather {
  std::string tensor;
  std::vector<std::shared_ptr<const struct ExprNode>> indices;
  std::vector<Dim> shape;
  DType stored;
};
/// The value of a scalar parameter (`eps: f32`, no brackets), passed by value at launch.
/// `stored` is its declared type; the node's type is compute_type(stored).
struct ScalarRef {
  std::string name;
  DType stored;
};
/// rand(seed, offset, counter): f32 in [0, 1), a function of three i64 operands only.
struct Rand {
  std::shared_ptr<const struct ExprNode> seed, offset, counter;
};
struct Unary {
  UnaryOp op;
  std::shared_ptr<const struct ExprNode> a;
};
struct Binary {
  BinaryOp op;
  std::shared_ptr<const struct ExprNode> a, b;
};
/// where(cond, a, b): cond is boolean, a and b share the result type.
struct Select {
  std::shared_ptr<const struct ExprNode> cond, a, b;
};
/// Conversion to `to` (a storage type); the node's type is compute_type(to).
struct Cast {
  DType to;
  std::shared_ptr<const struct ExprNode> a;
};
/// op(body, i, j, ..): folds body over every point of the product of the index variables
/// `indices` (one or more, distinct, in the order written; the order of accumulation is
/// unspecified). mean divides by the product of their extents.
struct Reduce {
  ReduceOp op;
  std::vector<std::string> indices;
  std::shared_ptr<const struct ExprNode> body;
};

/// cumop(body, index): the inclusive scan of body along `index`, which the statement's
/// left-hand side binds (not a new variable, unlike Reduce). op is sum, prod, max or min.
struct Scan {
  ReduceOp op;
  std::string index;
  std::shared_ptr<const struct ExprNode> body;
};

struct ExprNode {
  DType type;
  SourceLoc loc;
  std::variant<Const, SymRef, IndexRef, Load, Gather, Unary, Binary, Select, Cast, Reduce, Scan,
               ScalarRef, Rand>
      v;
};

/// Value handle to an immutable node; copy, compare and hash by structure.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}

  bool defined() const { return node_ != nullptr; }
  DType type() const { return node_->type; }
  SourceLoc loc() const { return node_->loc; }
  const ExprNode& node() const { return *node_; }
  const std::shared_ptr<const ExprNode>& ptr() const { return node_; }
  template <class T>
  const T* as() const {
    return std::get_if<T>(&node_->v);
  }

  /// Structural equality; source locations are ignored.
  friend bool operator==(const Expr& a, const Expr& b);
  /// Structural hash consistent with ==.
  size_t hash() const;

 private:
  std::shared_ptr<const ExprNode> node_;
};

/// Operand i of a node as a handle (Unary.a, Binary.a/b, ...).
inline Expr wrap(const std::shared_ptr<const ExprNode>& p) {
  return Expr(p);
}

// Constructors. Each validates its operands and throws UserError (at `loc`) when the types do
// not fit; that is how the parser reports type errors.
Expr make_const(double value, DType type, SourceLoc loc = {});
Expr make_sym(std::string name, DType type = DType::i32, SourceLoc loc = {});
Expr make_index(std::string name, DType type = DType::i32, SourceLoc loc = {});
Expr make_load(std::string tensor, std::vector<std::string> indices, DType stored,
               SourceLoc loc = {});
/// A gather; throws UserError when a position is not an integer expression.
Expr make_gather(std::string tensor, std::vector<Expr> indices, std::vector<Dim> shape,
                 DType stored, SourceLoc loc = {});
Expr make_scalar_ref(std::string name, DType stored, SourceLoc loc = {});
/// rand(seed, offset, counter); each operand is i64 (a weak i32 operand becomes i64), else
/// UserError.
Expr make_rand(Expr seed, Expr offset, Expr counter, SourceLoc loc = {});
Expr make_unary(UnaryOp op, Expr a, SourceLoc loc = {});
Expr make_binary(BinaryOp op, Expr a, Expr b, SourceLoc loc = {});
Expr make_select(Expr cond, Expr a, Expr b, SourceLoc loc = {});
Expr make_cast(DType to, Expr a, SourceLoc loc = {});
/// A reduction over `indices` (one or more distinct names).
Expr make_reduce(ReduceOp op, std::vector<std::string> indices, Expr body, SourceLoc loc = {});
/// A reduction over one index.
Expr make_reduce(ReduceOp op, std::string index, Expr body, SourceLoc loc = {});
/// A scan (op: sum, prod, max or min; f32 or i32 body).
Expr make_scan(ReduceOp op, std::string index, Expr body, SourceLoc loc = {});

/// Philox 4x32-10 (Salmon et al., SC'11; cuRAND's and torch's generator) as Kiln's rand uses
/// it: key (seed low 32 bits, seed high 32 bits), counter words (block low, block high, offset
/// low, offset high) with block = counter >> 2 (logical); the result is word counter & 3 of
/// the output, w, as (w >> 8) * 2^-24.
float philox_uniform(uint64_t seed, uint64_t offset, uint64_t counter);
/// The bare Philox 4x32-10 block function (Random123's philox4x32, 10 rounds), in place.
void philox4x32_10(uint32_t counter[4], uint32_t k0, uint32_t k1);

/// True for Const, SymRef and IndexRef: operands that adopt the other side's type.
bool is_weak(const Expr& e);

/// True when e has one value at every point of a launch: it reads no tensor and no index
/// variable (constants, dimension symbols, scalar parameters and operations on them).
bool is_launch_invariant(const Expr& e);

/// Whether `value` (a statement's) is cut to tf32 at its top (a TensorDecl::tf32 temporary's is).
bool cut_to_tf32(const Expr& value);

std::string_view to_string(UnaryOp op);   // "neg", "exp", ...
std::string_view to_string(BinaryOp op);  // "+", "-", "max", "<", ...
std::string_view to_string(ReduceOp op);  // "sum", ...
std::string_view scan_name(ReduceOp op);  // "cumsum", "cumprod", "cummax", "cummin"
bool is_comparison(BinaryOp op);          // < <= > >= == !=
bool is_logical(BinaryOp op);             // && ||

/// Calls f(child) for each direct operand of e.
template <class F>
void for_each_child(const Expr& e, F&& f) {
  std::visit(
      [&](const auto& n) {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, Unary>) {
          f(wrap(n.a));
        } else if constexpr (std::is_same_v<T, Gather>) {
          for (const auto& i : n.indices) f(wrap(i));
        } else if constexpr (std::is_same_v<T, Binary>) {
          f(wrap(n.a));
          f(wrap(n.b));
        } else if constexpr (std::is_same_v<T, Select>) {
          f(wrap(n.cond));
          f(wrap(n.a));
          f(wrap(n.b));
        } else if constexpr (std::is_same_v<T, Cast>) {
          f(wrap(n.a));
        } else if constexpr (std::is_same_v<T, Reduce> || std::is_same_v<T, Scan>) {
          f(wrap(n.body));
        } else if constexpr (std::is_same_v<T, Rand>) {
          f(wrap(n.seed));
          f(wrap(n.offset));
          f(wrap(n.counter));
        }
      },
      e.node().v);
}

/// e rebuilt with each direct operand replaced by f(operand), through the make_* constructors
/// (so types are checked again); leaves come back as they are. The building block of passes
/// that rewrite expressions.
Expr map_children(const Expr& e, const std::function<Expr(const Expr&)>& f);

}  // namespace kiln

template <>
struct std::hash<kiln::Expr> {
  size_t operator()(const kiln::Expr& e) const { return e.hash(); }
};
