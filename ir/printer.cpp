// The canonical printer and the content hash.
//
// One spelling per program: two-space indentation, one statement per line, one blank line
// between kernels, single spaces around binary operators and after commas, and the fewest
// parentheses that parse back to the same tree (binary operators are left-associative, so a
// right operand of equal precedence keeps its parentheses; comparisons do not associate).
// f32 literals print as the shortest decimal that reads back to the same float, with ".0"
// added when that would look like an integer; i32 literals print as integers. A scalar
// parameter prints without brackets, and rand always with its counter (rand(seed, offset)
// parses to the counter spelled out).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>

#include "ir/text.h"

namespace kiln {
namespace {

// Precedence levels: the grammar's rules from loosest to tightest.
constexpr int kOr = 1, kAnd = 2, kCompare = 3, kAdditive = 4, kTerm = 5, kUnary = 6, kPrimary = 7;

int precedence(const Expr& e) {
  if (const auto* b = e.as<Binary>()) {
    switch (b->op) {
      case BinaryOp::add:
      case BinaryOp::sub:
        return kAdditive;
      case BinaryOp::mul:
      case BinaryOp::div:
        return kTerm;
      case BinaryOp::max:
      case BinaryOp::min:
      case BinaryOp::pow:
        return kPrimary;
      case BinaryOp::land:
        return kAnd;
      case BinaryOp::lor:
        return kOr;
      default:
        return kCompare;
    }
  }
  if (const auto* u = e.as<Unary>(); u && (u->op == UnaryOp::neg || u->op == UnaryOp::lnot)) {
    return kUnary;
  }
  if (const auto* c = e.as<Const>();
      c && (std::signbit(c->value) || (e.type() == DType::u32 && c->value > INT32_MAX))) {
    return kUnary;  // printed with a '-'
  }
  return kPrimary;
}

std::string print_const(const Expr& e, double v) {
  if (e.type() == DType::u32 && v > INT32_MAX) {
    // Literals are i32 values: a u32 above INT32_MAX came from a negative one (modulo 2^32).
    return fmt::format("{}", static_cast<int64_t>(v) - 4294967296LL);
  }
  if (e.type() != DType::f32) return fmt::format("{}", static_cast<int64_t>(v));
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
  std::string s(buf, end);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // 'n': inf, nan
  return s;
}

std::string paren(const std::string& s, bool wrap) {
  return wrap ? fmt::format("({})", s) : s;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += v[i];
  }
  return out;
}

std::string print_decl(const TensorDecl& t) {
  if (t.scalar) return fmt::format("{}: {}", t.name, to_string(t.dtype));
  std::vector<std::string> dims;
  for (const Dim& d : t.shape) dims.push_back(d.to_string());
  return fmt::format("{}: {}[{}]{}", t.name, to_string(t.dtype), join(dims),
                     t.strided ? " strided" : "");
}

std::string print_decls(const std::vector<TensorDecl>& list) {
  std::vector<std::string> parts;
  for (const TensorDecl& t : list) parts.push_back(print_decl(t));
  return join(parts);
}

}  // namespace

std::string print(const Expr& e) {
  return std::visit(
      [&](const auto& n) -> std::string {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, Const>) {
          return print_const(e, n.value);
        } else if constexpr (std::is_same_v<T, SymRef> || std::is_same_v<T, IndexRef>) {
          return n.name;
        } else if constexpr (std::is_same_v<T, Load>) {
          return fmt::format("{}[{}]", n.tensor, join(n.indices));
        } else if constexpr (std::is_same_v<T, Gather>) {
          std::vector<std::string> idx;
          for (const auto& i : n.indices) idx.push_back(print(wrap(i)));
          return fmt::format("{}[{}]", n.tensor, join(idx));
        } else if constexpr (std::is_same_v<T, Unary>) {
          Expr a = wrap(n.a);
          if (n.op == UnaryOp::lnot)
            return fmt::format("!{}", paren(print(a), precedence(a) <= kUnary));
          if (n.op == UnaryOp::neg)
            return fmt::format("-{}", paren(print(a), precedence(a) <= kUnary));
          return fmt::format("{}({})", to_string(n.op), print(a));
        } else if constexpr (std::is_same_v<T, Binary>) {
          Expr a = wrap(n.a), b = wrap(n.b);
          int p = precedence(e);
          if (p == kPrimary) return fmt::format("{}({}, {})", to_string(n.op), print(a), print(b));
          bool wrap_a = precedence(a) < p || (p == kCompare && precedence(a) == p);
          return fmt::format("{} {} {}", paren(print(a), wrap_a), to_string(n.op),
                             paren(print(b), precedence(b) <= p));
        } else if constexpr (std::is_same_v<T, Select>) {
          return fmt::format("where({}, {}, {})", print(wrap(n.cond)), print(wrap(n.a)),
                             print(wrap(n.b)));
        } else if constexpr (std::is_same_v<T, Cast>) {
          return fmt::format("{}({})", to_string(n.to), print(wrap(n.a)));
        } else if constexpr (std::is_same_v<T, Scan>) {
          return fmt::format("{}({}, {})", scan_name(n.op), print(wrap(n.body)), n.index);
        } else if constexpr (std::is_same_v<T, ScalarRef>) {
          return n.name;
        } else if constexpr (std::is_same_v<T, Rand>) {
          return fmt::format("rand({}, {}, {})", print(wrap(n.seed)), print(wrap(n.offset)),
                             print(wrap(n.counter)));
        } else {
          return fmt::format("{}({}, {})", to_string(n.op), print(wrap(n.body)),
                             fmt::join(n.indices, ", "));
        }
      },
      e.node().v);
}

std::string print(const KernelDef& k) {
  std::string out = fmt::format("kernel {}({}) -> ({}) {{\n", k.name, print_decls(k.inputs),
                                print_decls(k.outputs));
  for (const Stmt& s : k.body) {
    out += fmt::format("  {}[{}] = {}\n", s.target, join(s.indices), print(s.value));
  }
  return out + "}\n";
}

std::string print(const Program& p) {
  std::string out;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    if (i) out += '\n';
    out += print(p.kernels[i]);
  }
  return out;
}

std::string content_hash(const KernelDef& k) {
  return content_hash(print(k));
}

}  // namespace kiln
