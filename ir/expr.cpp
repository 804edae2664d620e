// Expression constructors, structural equality and hashing.
//
// The make_* functions are the type checker: every rule of expr.h is enforced here, so that
// an Expr that exists is well typed, whether it came from the parser or from the API. Weak
// operands (literals, symbols, index variables) are converted i32 -> f32 when the other side
// of a binary operator or select is f32, and when a math function or mean needs f32. A
// negated literal folds into a negative literal, so that `-1` means the same when parsed and
// when built.
#include "ir/expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <functional>

namespace kiln {
namespace {

template <class T>
Expr make_node(DType type, SourceLoc loc, T v) {
  return Expr(std::make_shared<const ExprNode>(ExprNode{type, loc, std::move(v)}));
}

bool is_number_type(DType t) {
  return t == DType::f32 || is_integer(t);
}

/// e converted to `to` when it already has that type or is a weak i32 and `to` is f32, i64 or
/// u32 (a negative literal becomes u32 modulo 2^32, as in C); otherwise an undefined Expr.
Expr convert_weak(const Expr& e, DType to) {
  if (e.type() == to) return e;
  if (!is_weak(e) || e.type() != DType::i32 || !is_number_type(to)) return Expr();
  if (const auto* c = e.as<Const>()) {
    double v = to == DType::u32 && c->value < 0 ? c->value + 4294967296.0 : c->value;
    return make_const(v, to, e.loc());
  }
  if (const auto* s = e.as<SymRef>()) return make_sym(s->name, to, e.loc());
  return make_index(e.as<IndexRef>()->name, to, e.loc());
}

/// The f32 operand of a math function (or pow, mean): f32 itself or a converted weak i32.
Expr require_f32(const Expr& a, std::string_view what, SourceLoc loc) {
  if (Expr c = convert_weak(a, DType::f32); c.defined()) return c;
  if (is_integer(a.type())) {
    throw UserError(loc, fmt::format("{} needs an f32 operand but got {}; convert it with "
                                     "f32(...)",
                                     what, to_string(a.type())));
  }
  throw UserError(loc,
                  fmt::format("{} needs an f32 operand but got {}", what, to_string(a.type())));
}

/// Gives a and b one type by converting a weak operand; false when they cannot agree.
bool unify(Expr& a, Expr& b) {
  if (a.type() == b.type()) return true;
  if (Expr c = convert_weak(a, b.type()); c.defined()) {
    a = c;
    return true;
  }
  if (Expr c = convert_weak(b, a.type()); c.defined()) {
    b = c;
    return true;
  }
  return false;
}

std::string_view quoted_op(BinaryOp op) {
  return to_string(op);
}

bool same_const(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

size_t hash_combine(size_t seed, size_t v) {
  return seed ^ (v + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

bool nodes_equal(const ExprNode& x, const ExprNode& y);

bool ptr_equal(const std::shared_ptr<const ExprNode>& a, const std::shared_ptr<const ExprNode>& b) {
  return a == b || (a && b && nodes_equal(*a, *b));
}

bool nodes_equal(const ExprNode& x, const ExprNode& y) {
  if (x.type != y.type || x.v.index() != y.v.index()) return false;
  return std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        const T& b = std::get<T>(y.v);
        if constexpr (std::is_same_v<T, Const>) {
          return same_const(a.value, b.value);
        } else if constexpr (std::is_same_v<T, SymRef> || std::is_same_v<T, IndexRef>) {
          return a.name == b.name;
        } else if constexpr (std::is_same_v<T, Load>) {
          return a.tensor == b.tensor && a.indices == b.indices && a.stored == b.stored;
        } else if constexpr (std::is_same_v<T, Gather>) {
          if (a.tensor != b.tensor || a.stored != b.stored || !(a.shape == b.shape) ||
              a.indices.size() != b.indices.size()) {
            return false;
          }
          for (size_t i = 0; i < a.indices.size(); ++i) {
            if (!ptr_equal(a.indices[i], b.indices[i])) return false;
          }
          return true;
        } else if constexpr (std::is_same_v<T, Unary>) {
          return a.op == b.op && ptr_equal(a.a, b.a);
        } else if constexpr (std::is_same_v<T, Binary>) {
          return a.op == b.op && ptr_equal(a.a, b.a) && ptr_equal(a.b, b.b);
        } else if constexpr (std::is_same_v<T, Select>) {
          return ptr_equal(a.cond, b.cond) && ptr_equal(a.a, b.a) && ptr_equal(a.b, b.b);
        } else if constexpr (std::is_same_v<T, Cast>) {
          return a.to == b.to && ptr_equal(a.a, b.a);
        } else if constexpr (std::is_same_v<T, ScalarRef>) {
          return a.name == b.name && a.stored == b.stored;
        } else if constexpr (std::is_same_v<T, Rand>) {
          return ptr_equal(a.seed, b.seed) && ptr_equal(a.offset, b.offset) &&
                 ptr_equal(a.counter, b.counter);
        } else if constexpr (std::is_same_v<T, Reduce>) {
          return a.op == b.op && a.indices == b.indices && ptr_equal(a.body, b.body);
        } else {
          return a.op == b.op && a.index == b.index && ptr_equal(a.body, b.body);
        }
      },
      x.v);
}

}  // namespace

bool operator==(const Expr& a, const Expr& b) {
  return ptr_equal(a.ptr(), b.ptr());
}

size_t Expr::hash() const {
  if (!node_) return 0;
  size_t h = hash_combine(static_cast<size_t>(node_->type), node_->v.index());
  std::hash<std::string> hs;
  std::visit(
      [&](const auto& n) {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, Const>) {
          h = hash_combine(h, std::bit_cast<uint64_t>(n.value));
        } else if constexpr (std::is_same_v<T, SymRef> || std::is_same_v<T, IndexRef>) {
          h = hash_combine(h, hs(n.name));
        } else if constexpr (std::is_same_v<T, Load>) {
          h = hash_combine(h, hs(n.tensor));
          for (const auto& i : n.indices) h = hash_combine(h, hs(i));
          h = hash_combine(h, static_cast<size_t>(n.stored));
        } else if constexpr (std::is_same_v<T, Gather>) {
          h = hash_combine(h, hs(n.tensor));
          h = hash_combine(h, static_cast<size_t>(n.stored));
        } else if constexpr (std::is_same_v<T, Unary> || std::is_same_v<T, Binary>) {
          h = hash_combine(h, static_cast<size_t>(n.op));
        } else if constexpr (std::is_same_v<T, Cast>) {
          h = hash_combine(h, static_cast<size_t>(n.to));
        } else if constexpr (std::is_same_v<T, Reduce>) {
          h = hash_combine(h, static_cast<size_t>(n.op));
          for (const auto& i : n.indices) h = hash_combine(h, hs(i));
        } else if constexpr (std::is_same_v<T, Scan>) {
          h = hash_combine(h, static_cast<size_t>(n.op));
          h = hash_combine(h, hs(n.index));
        } else if constexpr (std::is_same_v<T, ScalarRef>) {
          h = hash_combine(h, hs(n.name));
          h = hash_combine(h, static_cast<size_t>(n.stored));
        }
      },
      node_->v);
  for_each_child(*this, [&](const Expr& c) { h = hash_combine(h, c.hash()); });
  return h;
}

bool is_weak(const Expr& e) {
  return e.as<Const>() || e.as<SymRef>() || e.as<IndexRef>();
}

bool is_launch_invariant(const Expr& e) {
  if (e.as<Load>() || e.as<Gather>() || e.as<IndexRef>() || e.as<Reduce>() || e.as<Scan>())
    return false;
  bool invariant = true;
  for_each_child(e, [&](const Expr& c) { invariant = invariant && is_launch_invariant(c); });
  return invariant;
}

Expr make_const(double value, DType type, SourceLoc loc) {
  switch (type) {
    case DType::f32:
      value = static_cast<float>(value);
      if (!std::isfinite(value)) throw UserError(loc, "an f32 literal must be finite");
      break;
    case DType::i32:
      if (value != std::trunc(value) || value < INT32_MIN || value > INT32_MAX) {
        throw UserError(loc, fmt::format("{} is not an i32 value", value));
      }
      break;
    case DType::i64:  // literals are i32 values converted; 2^53 keeps them exact in a double
      if (value != std::trunc(value) || std::fabs(value) > 9007199254740992.0) {
        throw UserError(loc, fmt::format("{} is not an i64 literal", value));
      }
      break;
    case DType::u32:
      if (value != std::trunc(value) || value < 0 || value > UINT32_MAX) {
        throw UserError(loc, fmt::format("{} is not a u32 value", value));
      }
      break;
    case DType::boolean:
      internal_check(value == 0 || value == 1, "a bool constant must be 0 or 1");
      break;
    default:
      throw UserError(loc, fmt::format("a literal cannot have type {}", to_string(type)));
  }
  return make_node(type, loc, Const{value});
}

Expr make_sym(std::string name, DType type, SourceLoc loc) {
  internal_check(is_number_type(type), "a symbol is a number");
  return make_node(type, loc, SymRef{std::move(name)});
}

Expr make_index(std::string name, DType type, SourceLoc loc) {
  internal_check(is_number_type(type), "an index variable is a number");
  return make_node(type, loc, IndexRef{std::move(name)});
}

Expr make_load(std::string tensor, std::vector<std::string> indices, DType stored, SourceLoc loc) {
  if (!is_storage_type(stored)) throw UserError(loc, "a tensor cannot hold bool");
  return make_node(compute_type(stored), loc, Load{std::move(tensor), std::move(indices), stored});
}

Expr make_gather(std::string tensor, std::vector<Expr> indices, std::vector<Dim> shape,
                 DType stored, SourceLoc loc) {
  if (!is_storage_type(stored)) throw UserError(loc, "a tensor cannot hold bool");
  internal_check(indices.size() == shape.size(), "make_gather: one position per dimension");
  std::vector<std::shared_ptr<const ExprNode>> ptrs;
  for (const Expr& i : indices) {
    internal_check(i.defined(), "make_gather: undefined position");
    if (!is_integer(i.type())) {
      throw UserError(i.loc(), fmt::format("a subscript must be an integer (i32, i64 or u32) but "
                                           "got {}",
                                           to_string(i.type())));
    }
    ptrs.push_back(i.ptr());
  }
  return make_node(compute_type(stored), loc,
                   Gather{std::move(tensor), std::move(ptrs), std::move(shape), stored});
}

Expr make_scalar_ref(std::string name, DType stored, SourceLoc loc) {
  if (!is_storage_type(stored)) throw UserError(loc, "a scalar cannot be a bool");
  return make_node(compute_type(stored), loc, ScalarRef{std::move(name), stored});
}

Expr make_rand(Expr seed, Expr offset, Expr counter, SourceLoc loc) {
  static constexpr std::string_view names[] = {"seed", "offset", "counter"};
  Expr* ops[] = {&seed, &offset, &counter};
  for (int i = 0; i < 3; ++i) {
    internal_check(ops[i]->defined(), "make_rand: undefined operand");
    Expr c = convert_weak(*ops[i], DType::i64);
    if (!c.defined()) {
      throw UserError(ops[i]->loc(), fmt::format("rand's {} must be i64 but got {}; convert it "
                                                 "with i64(...)",
                                                 names[i], to_string(ops[i]->type())));
    }
    *ops[i] = c;
  }
  return make_node(DType::f32, loc, Rand{seed.ptr(), offset.ptr(), counter.ptr()});
}

// Philox 4x32-10: ten rounds of two 32 x 32 -> 64-bit multiplications, the key bumped by the
// Weyl constants between rounds (the constants of Salmon et al. and of cuRAND).
void philox4x32_10(uint32_t c[4], uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * c[2];
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = static_cast<uint32_t>(p1);
    c[2] = n2;
    c[3] = static_cast<uint32_t>(p0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

float philox_uniform(uint64_t seed, uint64_t offset, uint64_t counter) {
  const uint64_t block = counter >> 2;
  uint32_t c[4] = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                   static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)};
  philox4x32_10(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return static_cast<float>(c[counter & 3] >> 8) * 0x1p-24f;
}

Expr make_unary(UnaryOp op, Expr a, SourceLoc loc) {
  internal_check(a.defined(), "make_unary: undefined operand");
  if (op == UnaryOp::lnot) {
    if (a.type() != DType::boolean) {
      throw UserError(loc, fmt::format("'!' needs a bool operand (a comparison) but got {}",
                                       to_string(a.type())));
    }
    return make_node(DType::boolean, loc, Unary{op, a.ptr()});
  }
  if (op == UnaryOp::neg || op == UnaryOp::abs) {
    if (!is_number_type(a.type())) {
      throw UserError(loc,
                      fmt::format("{} needs a number operand (f32, i32, i64 or u32) but got {}",
                                  op == UnaryOp::neg ? "unary '-'" : "abs", to_string(a.type())));
    }
    if (const auto* c = a.as<Const>(); c && op == UnaryOp::neg) {
      double v = -c->value;
      if (a.type() == DType::i32 && v > INT32_MAX) v = INT32_MIN;  // -INT32_MIN wraps
      if (a.type() == DType::u32 && v < 0) v += 4294967296.0;      // modulo 2^32
      return make_const(v, a.type(), loc);
    }
    return make_node(a.type(), loc, Unary{op, a.ptr()});
  }
  Expr x = require_f32(a, to_string(op), loc);
  return make_node(DType::f32, loc, Unary{op, x.ptr()});
}

Expr make_binary(BinaryOp op, Expr a, Expr b, SourceLoc loc) {
  internal_check(a.defined() && b.defined(), "make_binary: undefined operand");
  if (op == BinaryOp::pow) {
    Expr x = require_f32(a, "pow", loc), y = require_f32(b, "pow", loc);
    return make_node(DType::f32, loc, Binary{op, x.ptr(), y.ptr()});
  }
  bool call = op == BinaryOp::max || op == BinaryOp::min;
  std::string what = call ? std::string(to_string(op)) : fmt::format("'{}'", quoted_op(op));
  if (is_logical(op)) {
    for (const Expr* x : {&a, &b}) {
      if (x->type() != DType::boolean) {
        throw UserError(loc, fmt::format("{} needs bool operands (comparisons) but got {}", what,
                                         to_string(x->type())));
      }
    }
    return make_node(DType::boolean, loc, Binary{op, a.ptr(), b.ptr()});
  }
  if (!unify(a, b)) {
    throw UserError(loc, fmt::format("type mismatch: {} {} {}; convert one side with f32(...) "
                                     "or i32(...)",
                                     to_string(a.type()), quoted_op(op), to_string(b.type())));
  }
  if (!is_number_type(a.type())) {
    throw UserError(loc, fmt::format("{} needs number operands (f32, i32, i64 or u32) but got {}",
                                     what, to_string(a.type())));
  }
  DType result = is_comparison(op) ? DType::boolean : a.type();
  return make_node(result, loc, Binary{op, a.ptr(), b.ptr()});
}

Expr make_select(Expr cond, Expr a, Expr b, SourceLoc loc) {
  internal_check(cond.defined() && a.defined() && b.defined(), "make_select: undefined operand");
  if (cond.type() != DType::boolean) {
    throw UserError(loc, fmt::format("where() needs a bool condition (a comparison) but got {}",
                                     to_string(cond.type())));
  }
  if (!unify(a, b)) {
    throw UserError(loc, fmt::format("where() branches have different types: {} and {}",
                                     to_string(a.type()), to_string(b.type())));
  }
  return make_node(a.type(), loc, Select{cond.ptr(), a.ptr(), b.ptr()});
}

Expr make_cast(DType to, Expr a, SourceLoc loc) {
  internal_check(a.defined(), "make_cast: undefined operand");
  if (!is_storage_type(to)) throw UserError(loc, "cannot cast to bool; use a comparison");
  return make_node(compute_type(to), loc, Cast{to, a.ptr()});
}

Expr make_reduce(ReduceOp op, std::string index, Expr body, SourceLoc loc) {
  return make_reduce(op, std::vector<std::string>{std::move(index)}, std::move(body), loc);
}

Expr make_reduce(ReduceOp op, std::vector<std::string> indices, Expr body, SourceLoc loc) {
  internal_check(body.defined(), "make_reduce: undefined body");
  internal_check(!indices.empty(), "make_reduce: no index");
  for (size_t i = 0; i < indices.size(); ++i) {
    internal_check(!indices[i].empty(), "make_reduce: empty index name");
    internal_check(
        std::find(indices.begin(), indices.begin() + i, indices[i]) == indices.begin() + i,
        "make_reduce: a repeated index");
  }
  if (op == ReduceOp::mean) {
    body = require_f32(body, "mean", loc);
  } else if (body.type() != DType::f32 && body.type() != DType::i32) {
    throw UserError(loc, fmt::format("{} needs an f32 or i32 body but got {}{}", to_string(op),
                                     to_string(body.type()),
                                     is_integer(body.type()) ? " (reductions over i64 and u32 are "
                                                               "not supported yet)"
                                                             : ""));
  }
  return make_node(body.type(), loc, Reduce{op, std::move(indices), body.ptr()});
}

Expr make_scan(ReduceOp op, std::string index, Expr body, SourceLoc loc) {
  internal_check(body.defined(), "make_scan: undefined body");
  internal_check(!index.empty(), "make_scan: empty index name");
  internal_check(op != ReduceOp::mean, "make_scan: there is no cumulative mean");
  if (body.type() != DType::f32 && body.type() != DType::i32) {
    throw UserError(loc, fmt::format("{} needs an f32 or i32 body but got {}{}", scan_name(op),
                                     to_string(body.type()),
                                     is_integer(body.type()) ? " (scans over i64 and u32 are "
                                                               "not supported yet)"
                                                             : ""));
  }
  return make_node(body.type(), loc, Scan{op, std::move(index), body.ptr()});
}

bool cut_to_tf32(const Expr& value) {
  const Unary* u = value.as<Unary>();
  return u && u->op == UnaryOp::tf32;
}

std::string_view to_string(UnaryOp op) {
  static constexpr std::string_view names[] = {"neg",  "abs",     "exp", "log", "sqrt", "rsqrt",
                                               "tanh", "sigmoid", "erf", "!",   "tf32"};
  return names[static_cast<int>(op)];
}

std::string_view to_string(BinaryOp op) {
  static constexpr std::string_view names[] = {"+",  "-", "*",  "/",  "max", "min", "pow", "<",
                                               "<=", ">", ">=", "==", "!=",  "&&",  "||"};
  return names[static_cast<int>(op)];
}

std::string_view to_string(ReduceOp op) {
  static constexpr std::string_view names[] = {"sum", "max", "min", "prod", "mean"};
  return names[static_cast<int>(op)];
}

std::string_view scan_name(ReduceOp op) {
  static constexpr std::string_view names[] = {"cumsum", "cummax", "cummin", "cumprod", "cummean"};
  return names[static_cast<int>(op)];
}

bool is_comparison(BinaryOp op) {
  return op >= BinaryOp::lt && op <= BinaryOp::ne;
}

bool is_logical(BinaryOp op) {
  return op == BinaryOp::land || op == BinaryOp::lor;
}

Expr map_children(const Expr& e, const std::function<Expr(const Expr&)>& f) {
  return std::visit(
      [&](const auto& n) -> Expr {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, Unary>) {
          return make_unary(n.op, f(wrap(n.a)), e.loc());
        } else if constexpr (std::is_same_v<T, Binary>) {
          return make_binary(n.op, f(wrap(n.a)), f(wrap(n.b)), e.loc());
        } else if constexpr (std::is_same_v<T, Select>) {
          return make_select(f(wrap(n.cond)), f(wrap(n.a)), f(wrap(n.b)), e.loc());
        } else if constexpr (std::is_same_v<T, Cast>) {
          return make_cast(n.to, f(wrap(n.a)), e.loc());
        } else if constexpr (std::is_same_v<T, Reduce>) {
          return make_reduce(n.op, n.indices, f(wrap(n.body)), e.loc());
        } else if constexpr (std::is_same_v<T, Scan>) {
          return make_scan(n.op, n.index, f(wrap(n.body)), e.loc());
        } else if constexpr (std::is_same_v<T, Gather>) {
          std::vector<Expr> idx;
          for (const auto& i : n.indices) idx.push_back(f(wrap(i)));
          return make_gather(n.tensor, std::move(idx), n.shape, n.stored, e.loc());
        } else if constexpr (std::is_same_v<T, Rand>) {
          return make_rand(f(wrap(n.seed)), f(wrap(n.offset)), f(wrap(n.counter)), e.loc());
        } else {
          return e;  // Const, SymRef, IndexRef, Load, ScalarRef
        }
      },
      e.node().v);
}

}  // namespace kiln
