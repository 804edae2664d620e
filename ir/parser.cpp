// The parser: spec text -> verified Program.
//
// A lexer turns the text into tokens (identifiers, integers, decimal numbers, punctuation),
// each with its line and column; `#` comments and all whitespace are dropped. A recursive
// descent parser then follows the grammar of docs/language.md, one function per rule, and
// builds expressions through the make_* constructors, which type-check them. Names are
// resolved while parsing, so every error points at the offending token:
//  1. A kernel's header declares its inputs and outputs; their shapes name its symbols.
//  2. Before the body, a scan collects every statement target, so that a temporary read before
//     its definition is reported as such rather than as an unknown name.
//  3. Each statement brings its left-hand side indices into scope; a reduction brings its
//     indices into scope for its body. Since they are the call's last arguments, the
//     arguments of sum/prod/mean/max/min are scanned ahead of parsing the body.
//  4. After each statement the extents of its indices are inferred (a temporary's shape); after
//     each kernel the verifier checks the kernel rules.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <optional>
#include <set>

#include "ir/text.h"

namespace kiln {
namespace {

enum class Tok { ident, integer, number, punct, eof };

struct Token {
  Tok kind;
  std::string_view text;
  SourceLoc loc;
};

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::vector<Token> lex(std::string_view src) {
  std::vector<Token> out;
  uint32_t line = 1, col = 1;
  size_t i = 0;
  auto digits = [&] {
    while (i < src.size() && is_digit(src[i])) ++i;
  };
  while (i < src.size()) {
    char c = src[i];
    if (c == '\n') {
      ++line;
      col = 1;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      ++col;
      continue;
    }
    if (c == '#') {
      while (i < src.size() && src[i] != '\n') ++i;
      continue;
    }
    SourceLoc loc{line, col};
    size_t start = i;
    Tok kind = Tok::punct;
    if (is_ident_start(c)) {
      while (i < src.size() && is_ident_char(src[i])) ++i;
      kind = Tok::ident;
    } else if (is_digit(c)) {
      kind = Tok::integer;
      digits();
      if (i < src.size() && src[i] == '.') {
        kind = Tok::number;
        ++i;
        digits();
      }
      if (i < src.size() && (src[i] == 'e' || src[i] == 'E')) {
        size_t j = i + 1;
        if (j < src.size() && (src[j] == '+' || src[j] == '-')) ++j;
        if (j < src.size() && is_digit(src[j])) {
          kind = Tok::number;
          i = j;
          digits();
        }
      }
    } else {
      static constexpr std::string_view two[] = {"->", "<=", ">=", "==", "!=", "&&", "||"};
      std::string_view rest = src.substr(i);
      if (std::any_of(std::begin(two), std::end(two),
                      [&](std::string_view p) { return rest.starts_with(p); })) {
        i += 2;
      } else if (std::string_view("()[]{},:;+-*/<>=!").find(c) != std::string_view::npos) {
        i += 1;
      } else {
        std::string shown = std::isprint(static_cast<unsigned char>(c))
                                ? fmt::format("'{}'", c)
                                : fmt::format("0x{:02x}", static_cast<unsigned char>(c));
        throw UserError(loc, fmt::format("unexpected character {}", shown));
      }
    }
    col += static_cast<uint32_t>(i - start);
    out.push_back({kind, src.substr(start, i - start), loc});
  }
  out.push_back({Tok::eof, "", {line, col}});
  return out;
}

std::string describe(const Token& t) {
  return t.kind == Tok::eof ? std::string("end of input") : fmt::format("'{}'", t.text);
}

/// A weak i32 operand (literal, symbol, index) retyped as `to`, for a store into a tensor of
/// another number type (a negative literal becomes u32 modulo 2^32).
Expr weak_to(const Expr& e, DType to) {
  if (const auto* c = e.as<Const>()) {
    double v = to == DType::u32 && c->value < 0 ? c->value + 4294967296.0 : c->value;
    return make_const(v, to, e.loc());
  }
  if (const auto* s = e.as<SymRef>()) return make_sym(s->name, to, e.loc());
  return make_index(e.as<IndexRef>()->name, to, e.loc());
}

bool uses_index(const Expr& e, const std::string& index) {
  if (const auto* r = e.as<IndexRef>(); r && r->name == index) return true;
  if (const auto* l = e.as<Load>()) {
    if (std::find(l->indices.begin(), l->indices.end(), index) != l->indices.end()) return true;
  }
  bool found = false;
  for_each_child(e, [&](const Expr& c) { found = found || uses_index(c, index); });
  return found;
}

std::optional<UnaryOp> math_function(std::string_view f) {
  static constexpr std::pair<std::string_view, UnaryOp> table[] = {
      {"exp", UnaryOp::exp},     {"log", UnaryOp::log},   {"sqrt", UnaryOp::sqrt},
      {"rsqrt", UnaryOp::rsqrt}, {"tanh", UnaryOp::tanh}, {"sigmoid", UnaryOp::sigmoid},
      {"erf", UnaryOp::erf},     {"abs", UnaryOp::abs},   {"tf32", UnaryOp::tf32}};
  for (const auto& [name, op] : table) {
    if (name == f) return op;
  }
  return std::nullopt;
}

std::optional<ReduceOp> reduce_function(std::string_view f) {
  static constexpr std::pair<std::string_view, ReduceOp> table[] = {{"sum", ReduceOp::sum},
                                                                    {"prod", ReduceOp::prod},
                                                                    {"mean", ReduceOp::mean},
                                                                    {"max", ReduceOp::max},
                                                                    {"min", ReduceOp::min}};
  for (const auto& [name, op] : table) {
    if (name == f) return op;
  }
  return std::nullopt;
}

std::optional<ReduceOp> scan_function(std::string_view f) {
  static constexpr std::pair<std::string_view, ReduceOp> table[] = {{"cumsum", ReduceOp::sum},
                                                                    {"cumprod", ReduceOp::prod},
                                                                    {"cummax", ReduceOp::max},
                                                                    {"cummin", ReduceOp::min}};
  for (const auto& [name, op] : table) {
    if (name == f) return op;
  }
  return std::nullopt;
}

class Parser {
 public:
  explicit Parser(std::string_view src) : toks_(lex(src)) {}

  Program parse() {
    Program p;
    while (peek().kind != Tok::eof) {
      if (!is_word("kernel")) fail(peek().loc, "expected 'kernel' but found " + describe(peek()));
      p.kernels.push_back(parse_kernel());
    }
    verify(p);
    return p;
  }

 private:
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int nesting_ = 0;
  bool flat_rand_ = false;  // the statement holds rand(seed, offset): fill in its counters
  // The printed form of a tree of depth d may need up to 2d levels of nesting (a
  // parenthesis and a sign per level), so every accepted program parses back.
  static constexpr int kMaxDepth = 256;
  static constexpr int kMaxNesting = 2 * kMaxDepth + 64;

  // Long operator chains are parsed in loops but make deep trees, which every later pass
  // walks recursively: bound the depth of each statement's tree (measured without recursion).
  void check_depth(const Expr& e) {
    std::vector<std::pair<const ExprNode*, int>> stack{{e.ptr().get(), 1}};
    while (!stack.empty()) {
      const ExprNode* n = stack.back().first;
      const int d = stack.back().second;  // not a structured binding: lambdas capture it
      stack.pop_back();
      if (d > kMaxDepth) {
        fail(e.loc(), fmt::format("expression too deep (more than {} levels of operators); "
                                  "split it into several statements",
                                  kMaxDepth));
      }
      for_each_child(Expr(std::shared_ptr<const ExprNode>(e.ptr(), n)), [&](const Expr& c) {
        stack.push_back({c.ptr().get(), d + 1});
      });
    }
  }
  KernelDef k_;
  std::vector<std::string> symbols_;
  std::set<std::string, std::less<>> targets_;             // every statement target of the body
  std::map<std::string, SourceLoc, std::less<>> defined_;  // outputs and temps written so far
  std::vector<std::string> scope_;                         // index variables in scope

  [[noreturn]] static void fail(SourceLoc loc, std::string message) {
    throw UserError(loc, std::move(message));
  }

  const Token& peek(size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool is(std::string_view punct, size_t ahead = 0) const {
    return peek(ahead).kind == Tok::punct && peek(ahead).text == punct;
  }
  bool is_word(std::string_view word) const {
    return peek().kind == Tok::ident && peek().text == word;
  }
  bool accept(std::string_view punct) {
    if (!is(punct)) return false;
    next();
    return true;
  }
  const Token& expect(std::string_view punct) {
    if (!is(punct))
      fail(peek().loc, fmt::format("expected '{}' but found {}", punct, describe(peek())));
    return next();
  }
  const Token& expect_ident(std::string_view what) {
    if (peek().kind != Tok::ident) {
      fail(peek().loc, fmt::format("expected {} but found {}", what, describe(peek())));
    }
    return next();
  }

  bool is_symbol(std::string_view name) const {
    return std::find(symbols_.begin(), symbols_.end(), name) != symbols_.end();
  }
  bool is_tensor(std::string_view name) const {
    return k_.find_tensor(name) != nullptr || targets_.count(name) > 0;
  }
  bool in_scope(std::string_view name) const {
    return std::find(scope_.begin(), scope_.end(), name) != scope_.end();
  }
  static std::string at(SourceLoc loc) { return fmt::format("{}:{}", loc.line, loc.col); }

  /// An index variable may not share its name with a tensor or a symbol.
  void check_index_name(const Token& t) const {
    if (is_tensor(t.text))
      fail(t.loc, fmt::format("index '{}' has the same name as a tensor", t.text));
    if (is_symbol(t.text))
      fail(t.loc, fmt::format("index '{}' has the same name as a symbol", t.text));
  }

  // kernel := 'kernel' IDENT '(' params ')' '->' '(' params ')' '{' stmt* '}'
  KernelDef parse_kernel() {
    next();
    const Token& name = expect_ident("a kernel name");
    k_ = KernelDef{};
    k_.name = std::string(name.text);
    k_.loc = name.loc;
    targets_.clear();
    defined_.clear();
    expect("(");
    if (!is(")")) parse_params(k_.inputs, TensorRole::input);
    expect(")");
    expect("->");
    expect("(");
    if (is(")")) fail(peek().loc, "a kernel needs at least one output");
    parse_params(k_.outputs, TensorRole::output);
    expect(")");
    const Token& open = expect("{");
    symbols_ = k_.symbols();
    scan_targets();
    while (!is("}")) {
      // A missing '}' shows as the end of input or the next kernel's header: point at the
      // brace that is never closed, not at the next kernel.
      if (peek().kind == Tok::eof || starts_kernel(pos_)) {
        fail(open.loc, fmt::format("unterminated kernel '{}': expected '}}' before {}", k_.name,
                                   peek().kind == Tok::eof
                                       ? std::string("end of input")
                                       : fmt::format("the next kernel at {}", at(peek().loc))));
      }
      if (!accept(";")) parse_stmt();
    }
    next();
    verify(k_);
    return std::move(k_);
  }

  // param := IDENT ':' DTYPE ['[' [dim (',' dim)*] ']' ['strided']]   (no brackets: a scalar)
  void parse_params(std::vector<TensorDecl>& list, TensorRole role) {
    do {
      const Token& name = expect_ident("a parameter name");
      if (k_.find_tensor(name.text)) {
        fail(name.loc, fmt::format("duplicate parameter '{}'", name.text));
      }
      expect(":");
      const Token& type = expect_ident("a dtype");
      std::optional<DType> dtype = parse_dtype(type.text);
      if (!dtype || !is_storage_type(*dtype)) {
        fail(type.loc, fmt::format("unknown dtype '{}'; expected f32, f16, bf16, i32, i64 or u32",
                                   type.text));
      }
      if (!is("[")) {
        // A scalar: passed by value at launch, read by its bare name.
        if (role == TensorRole::output) {
          fail(name.loc, fmt::format("output '{}' cannot be a scalar; write {}: {}[] for a rank-0 "
                                     "output",
                                     name.text, name.text, type.text));
        }
        if (peek().kind == Tok::ident && peek().text == "strided") {
          fail(peek().loc,
               fmt::format("scalar '{}' cannot be strided: only tensors have strides", name.text));
        }
        list.push_back(TensorDecl{std::string(name.text), *dtype, {}, role, name.loc, true});
        continue;
      }
      expect("[");
      std::vector<Dim> shape;
      if (!is("]")) {
        do {
          shape.push_back(parse_dim());
        } while (accept(","));
      }
      expect("]");
      TensorDecl decl{std::string(name.text), *dtype, std::move(shape), role, name.loc};
      if (peek().kind == Tok::ident && peek().text == "strided") {
        const Token& kw = next();
        if (role == TensorRole::output) {
          fail(kw.loc, fmt::format("output '{}' cannot be strided (not supported yet): outputs "
                                   "are written contiguously",
                                   name.text));
        }
        if (decl.shape.empty()) {
          fail(kw.loc, fmt::format("'{}' has rank 0: it has no strides", name.text));
        }
        decl.strided = true;
      }
      list.push_back(std::move(decl));
    } while (accept(","));
  }

  // dim := INT (> 0) | IDENT
  Dim parse_dim() {
    const Token& t = next();
    if (t.kind == Tok::ident) return Dim::symbol(std::string(t.text));
    if (t.kind == Tok::integer) {
      int64_t v = 0;
      auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
      if (ec == std::errc::result_out_of_range) {
        fail(t.loc, fmt::format("dimension {} is too large (at most {})", t.text, INT64_MAX));
      }
      if (ec != std::errc() || v <= 0) {
        fail(t.loc, fmt::format("a dimension must be a positive integer, not {}", t.text));
      }
      return Dim::fixed(v);
    }
    fail(t.loc,
         fmt::format("expected a dimension (an integer or a symbol) but found {}", describe(t)));
  }

  /// Whether the tokens at `p` start a kernel: 'kernel' IDENT '(' (a statement target named
  /// `kernel` is followed by '[').
  bool starts_kernel(size_t p) const {
    return p + 2 < toks_.size() && toks_[p].kind == Tok::ident && toks_[p].text == "kernel" &&
           toks_[p + 1].kind == Tok::ident && toks_[p + 2].kind == Tok::punct &&
           toks_[p + 2].text == "(";
  }

  /// Collects the target of every statement of the body: IDENT '[' ... ']' '=' up to the
  /// kernel's closing brace (or the next kernel, when the brace is missing).
  void scan_targets() {
    for (size_t p = pos_; p + 1 < toks_.size(); ++p) {
      const Token& t = toks_[p];
      if ((t.kind == Tok::punct && t.text == "}") || starts_kernel(p)) break;
      if (t.kind != Tok::ident || toks_[p + 1].text != "[" || toks_[p + 1].kind != Tok::punct) {
        continue;
      }
      size_t q = p + 2;
      while (q < toks_.size() && toks_[q].kind == Tok::ident) q += 1 + (toks_[q + 1].text == ",");
      if (q + 1 < toks_.size() && toks_[q].text == "]" && toks_[q + 1].kind == Tok::punct &&
          toks_[q + 1].text == "=") {
        targets_.insert(std::string(t.text));
      }
    }
  }

  // stmt := IDENT '[' [IDENT (',' IDENT)*] ']' '=' expr
  void parse_stmt() {
    const Token& target = expect_ident("a statement");
    std::string name(target.text);
    const TensorDecl* decl = k_.find_tensor(name);
    if (decl && decl->role == TensorRole::input) {
      fail(target.loc, fmt::format("cannot write to input '{}'", name));
    }
    if (auto it = defined_.find(name); it != defined_.end()) {
      fail(target.loc, fmt::format("{} '{}' is written twice (first at {})",
                                   decl->role == TensorRole::output ? "output" : "temporary", name,
                                   at(it->second)));
    }
    if (!decl && is_symbol(name)) {
      fail(target.loc, fmt::format("temporary '{}' has the same name as a symbol", name));
    }
    expect("[");
    std::vector<std::string> indices;
    if (!is("]")) {
      do {
        const Token& i = expect_ident("an index variable");
        check_index_name(i);
        if (std::find(indices.begin(), indices.end(), i.text) != indices.end()) {
          fail(i.loc, fmt::format("index '{}' appears twice on the left-hand side", i.text));
        }
        indices.emplace_back(i.text);
      } while (accept(","));
    }
    expect("]");
    expect("=");
    scope_ = indices;
    Expr value = parse_expr();
    check_depth(value);
    scope_.clear();
    if (!is(";") && !is("}") && peek().kind != Tok::ident && peek().kind != Tok::eof) {
      fail(peek().loc,
           fmt::format("expected the end of the statement but found {}", describe(peek())));
    }
    if (value.type() == DType::boolean) {
      fail(value.loc(), "cannot store a bool; use f32(...) or i32(...)");
    }
    if (decl && compute_type(decl->dtype) != DType::i32 && value.type() == DType::i32 &&
        is_weak(value)) {
      value = weak_to(value, compute_type(decl->dtype));
    }
    Stmt s{name, std::move(indices), value, target.loc};
    std::map<std::string, Dim> extents = index_extents(k_, s);
    if (flat_rand_) {
      s.value = with_flat_counters(s.value, s, extents);
      flat_rand_ = false;
    }
    if (!decl) {
      std::vector<Dim> shape;
      for (const std::string& i : s.indices) shape.push_back(extents.at(i));
      k_.temps.push_back(
          TensorDecl{name, value.type(), std::move(shape), TensorRole::temp, target.loc});
    }
    k_.body.push_back(std::move(s));
    defined_.emplace(name, target.loc);
  }

  // expr := and ('||' and)*
  Expr parse_expr() {
    Expr a = parse_and();
    while (is("||")) {
      SourceLoc loc = next().loc;
      a = make_binary(BinaryOp::lor, a, parse_and(), loc);
    }
    return a;
  }

  // and := compare ('&&' compare)*
  Expr parse_and() {
    Expr a = parse_compare();
    while (is("&&")) {
      SourceLoc loc = next().loc;
      a = make_binary(BinaryOp::land, a, parse_compare(), loc);
    }
    return a;
  }

  // compare := additive [cmpop additive]
  Expr parse_compare() {
    Expr a = parse_additive();
    static constexpr std::pair<std::string_view, BinaryOp> cmps[] = {
        {"<", BinaryOp::lt},  {"<=", BinaryOp::le}, {">", BinaryOp::gt},
        {">=", BinaryOp::ge}, {"==", BinaryOp::eq}, {"!=", BinaryOp::ne}};
    for (const auto& [text, op] : cmps) {
      if (!is(text)) continue;
      SourceLoc loc = next().loc;
      Expr b = parse_additive();
      for (const auto& c : cmps) {
        if (is(c.first)) fail(peek().loc, "comparisons do not chain; add parentheses");
      }
      return make_binary(op, a, b, loc);
    }
    return a;
  }

  // additive := term (('+'|'-') term)*
  Expr parse_additive() {
    Expr a = parse_term();
    while (is("+") || is("-")) {
      const Token& op = next();
      a = make_binary(op.text == "+" ? BinaryOp::add : BinaryOp::sub, a, parse_term(), op.loc);
    }
    return a;
  }

  // term := unary (('*'|'/') unary)*
  Expr parse_term() {
    Expr a = parse_unary();
    while (is("*") || is("/")) {
      const Token& op = next();
      a = make_binary(op.text == "*" ? BinaryOp::mul : BinaryOp::div, a, parse_unary(), op.loc);
    }
    return a;
  }

  // unary := '-' unary | '!' unary | primary
  // Every level of nesting (a sign, parentheses, a call's arguments) passes through here, so
  // the guard below bounds the parser's recursion on hostile input.
  Expr parse_unary() {
    struct Nest {
      int& d;
      explicit Nest(int& depth) : d(depth) { ++d; }
      ~Nest() { --d; }
    } nest(nesting_);
    if (nesting_ > kMaxNesting) {
      fail(peek().loc,
           fmt::format("expression nested too deeply (more than {} levels)", kMaxNesting));
    }
    if (is("!")) {
      SourceLoc loc = next().loc;
      return make_unary(UnaryOp::lnot, parse_unary(), loc);
    }
    if (!is("-")) return parse_primary();
    SourceLoc loc = next().loc;
    if (peek().kind == Tok::integer) return int_literal(next(), /*negated=*/true, loc);
    return make_unary(UnaryOp::neg, parse_unary(), loc);
  }

  /// An integer literal; `negated` allows -2147483648.
  static Expr int_literal(const Token& t, bool negated, SourceLoc loc) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    uint64_t limit = negated ? uint64_t{1} << 31 : INT32_MAX;
    if (ec != std::errc() || v > limit) {
      fail(t.loc, fmt::format("integer literal {} does not fit in i32", t.text));
    }
    double d = static_cast<double>(v);
    return make_const(negated ? -d : d, DType::i32, loc);
  }

  Expr parse_primary() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::integer:
        next();
        return int_literal(t, false, t.loc);
      case Tok::number: {
        next();
        double d = std::strtod(std::string(t.text).c_str(), nullptr);
        if (std::isinf(static_cast<float>(d))) {
          fail(t.loc, fmt::format("f32 literal {} is out of range", t.text));
        }
        return make_const(d, DType::f32, t.loc);
      }
      case Tok::ident:
        if (is("[", 1)) return parse_load();
        if (is("(", 1)) return parse_call();
        return parse_name();
      default:
        if (accept("(")) {
          Expr e = parse_expr();
          expect(")");
          return e;
        }
        fail(t.loc, fmt::format("expected an expression but found {}", describe(t)));
    }
  }

  Expr parse_name() {
    const Token& t = next();
    std::string name(t.text);
    if (const TensorDecl* d = k_.find_tensor(name); d && d->scalar) {
      return make_scalar_ref(name, d->dtype, t.loc);
    }
    if (is_tensor(name)) {
      fail(t.loc, fmt::format("tensor '{}' must be indexed: write {}[...]", name, name));
    }
    if (in_scope(name)) return make_index(name, DType::i32, t.loc);
    if (is_symbol(name)) return make_sym(name, DType::i32, t.loc);
    fail(t.loc, fmt::format("unknown name '{}'", name));
  }

  // IDENT '[' [subscript (',' subscript)*] ']'. A subscript is an expression: when every one is
  // an index variable the read is a Load, otherwise a Gather of an input (its plain index
  // variables become i64 positions; the verifier checks what a computed position may read).
  Expr parse_load() {
    const Token& t = next();
    std::string name(t.text);
    next();  // '['
    std::vector<Expr> subscripts;
    if (!is("]")) {
      do {
        const Token& i = peek();
        // A lone unknown name is an index the statement does not bind (the usual mistake).
        if (i.kind == Tok::ident && (is(",", 1) || is("]", 1)) && !in_scope(i.text) &&
            !is_symbol(i.text) && !is_tensor(i.text)) {
          fail(i.loc, fmt::format("index '{}' is not bound by the left-hand side", i.text));
        }
        subscripts.push_back(parse_expr());
      } while (accept(","));
    }
    if (!is("]")) {
      fail(peek().loc, fmt::format("expected ',' or ']' but found {}", describe(peek())));
    }
    expect("]");
    const TensorDecl* decl = k_.find_tensor(name);
    if (decl && decl->scalar) {
      fail(t.loc,
           fmt::format("'{}' is a scalar, not a tensor: write {} without brackets", name, name));
    }
    if (!decl || (decl->role == TensorRole::output && !defined_.count(name))) {
      if (decl) fail(t.loc, fmt::format("output '{}' is read before it is written", name));
      if (targets_.count(name)) {
        fail(t.loc, fmt::format("temporary '{}' is used before it is defined", name));
      }
      if (in_scope(name) || is_symbol(name)) fail(t.loc, fmt::format("'{}' is not a tensor", name));
      fail(t.loc, fmt::format("unknown tensor '{}'", name));
    }
    bool plain = std::all_of(subscripts.begin(), subscripts.end(),
                             [](const Expr& e) { return e.as<IndexRef>() != nullptr; });
    if (plain) {
      std::vector<std::string> indices;
      for (const Expr& e : subscripts) indices.push_back(e.as<IndexRef>()->name);
      return make_load(name, std::move(indices), decl->dtype, t.loc);
    }
    if (decl->shape.size() != subscripts.size()) {
      fail(t.loc,
           fmt::format("tensor '{}' has rank {} but is indexed with {} subscript{}", name,
                       decl->shape.size(), subscripts.size(), subscripts.size() == 1 ? "" : "s"));
    }
    for (Expr& e : subscripts) {
      if (const auto* r = e.as<IndexRef>()) e = make_index(r->name, DType::i64, e.loc());
    }
    return make_gather(name, std::move(subscripts), decl->shape, decl->dtype, t.loc);
  }

  /// Token ranges [begin, end) of the arguments of the call whose '(' was just consumed.
  /// Fails at the first token that cannot be inside an expression when the parentheses do not
  /// close before it.
  std::vector<std::pair<size_t, size_t>> scan_args() const {
    std::vector<std::pair<size_t, size_t>> args;
    int depth = 0;
    size_t begin = pos_;
    for (size_t p = pos_;; ++p) {
      const Token& t = toks_[p];
      if (t.kind == Tok::eof) fail(t.loc, "expected ')' but found end of input");
      if (t.kind != Tok::punct) continue;
      if (t.text == "{" || t.text == "}" || t.text == "=" || t.text == ";") {
        fail(t.loc, fmt::format("expected ')' but found {}", describe(t)));
      }
      if (t.text == "(" || t.text == "[") {
        ++depth;
      } else if ((t.text == ")" || t.text == "]") && depth > 0) {
        --depth;
      } else if (depth == 0 && (t.text == "," || t.text == ")")) {
        if (!(t.text == ")" && p == pos_ && args.empty())) args.emplace_back(begin, p);
        if (t.text == ")") return args;
        begin = p + 1;
      }
    }
  }

  // IDENT '(' args ')': functions, casts and reductions.
  Expr parse_call() {
    const Token& f = next();
    std::string_view name = f.text;
    next();  // '('
    if (std::optional<ReduceOp> sop = scan_function(name)) return parse_scan(*sop, f);
    if (std::optional<ReduceOp> rop = reduce_function(name)) {
      // sum(body, i, j, ..): every argument after the body is one identifier. max and min
      // with two arguments are elementwise unless the second names no tensor, symbol or bound
      // index; with more, they are a reduction when the second is an identifier.
      bool elementwise_ok = *rop == ReduceOp::max || *rop == ReduceOp::min;
      auto args = scan_args();
      auto ident_at = [&](size_t a) {
        return args[a].second == args[a].first + 1 && toks_[args[a].first].kind == Tok::ident;
      };
      bool reduce = args.size() >= 2 && ident_at(1);
      if (elementwise_ok && reduce && args.size() == 2) {
        std::string_view index = toks_[args[1].first].text;
        reduce = !is_tensor(index) && !is_symbol(index) && !in_scope(index);
      }
      if (elementwise_ok && reduce && args.size() > 2) {
        reduce = !is_tensor(toks_[args[1].first].text) && !is_symbol(toks_[args[1].first].text);
      }
      if (!elementwise_ok && args.size() < 2) {
        fail(f.loc, fmt::format("{} takes 2 or more arguments (a body and index variables) but "
                                "{} {} given",
                                name, args.size(), args.size() == 1 ? "was" : "were"));
      }
      if (!elementwise_ok || reduce) {
        std::vector<const Token*> indices;
        for (size_t a = 1; a < args.size(); ++a) {
          if (!ident_at(a)) {
            fail(toks_[args[a].first].loc,
                 a == 1 ? fmt::format("the second argument of {} must be an index variable", name)
                        : fmt::format("argument {} of {} must be an index variable", a + 1, name));
          }
          indices.push_back(&toks_[args[a].first]);
        }
        return parse_reduce(*rop, f, indices);
      }
    }
    if (name == "rand") return parse_rand(f);
    std::optional<UnaryOp> uop = math_function(name);
    std::optional<DType> cast = parse_dtype(name);
    if (cast && !is_storage_type(*cast)) cast.reset();
    int arity = uop || cast                                       ? 1
                : name == "where"                                 ? 3
                : name == "pow" || name == "max" || name == "min" ? 2
                                                                  : 0;
    if (arity == 0) {
      if (is_tensor(name)) {
        fail(f.loc, fmt::format("'{}' is a tensor; index it with {}[...]", name, name));
      }
      fail(f.loc, fmt::format("unknown function '{}'", name));
    }
    std::vector<Expr> args;
    if (!is(")")) {
      do {
        args.push_back(parse_expr());
      } while (accept(","));
    }
    expect(")");
    if (static_cast<int>(args.size()) != arity) {
      fail(f.loc,
           fmt::format("{} takes {} argument{} but {} {} given", name, arity, arity == 1 ? "" : "s",
                       args.size(), args.size() == 1 ? "was" : "were"));
    }
    if (uop) return make_unary(*uop, args[0], f.loc);
    if (cast) return make_cast(*cast, args[0], f.loc);
    if (arity == 3) return make_select(args[0], args[1], args[2], f.loc);
    BinaryOp op = name == "pow" ? BinaryOp::pow : name == "max" ? BinaryOp::max : BinaryOp::min;
    return make_binary(op, args[0], args[1], f.loc);
  }

  // rand(seed, offset [, counter]): without a counter, the flat row-major index of the
  // left-hand side's element, filled in by with_flat_counters once the statement's extents
  // are known (an i64 IndexRef with no name stands for it until then).
  Expr parse_rand(const Token& f) {
    std::vector<Expr> args;
    if (!is(")")) {
      do {
        args.push_back(parse_expr());
      } while (accept(","));
    }
    expect(")");
    if (args.size() != 2 && args.size() != 3) {
      fail(f.loc, fmt::format("rand takes 2 or 3 arguments (seed, offset[, counter]) but {} {} "
                              "given",
                              args.size(), args.size() == 1 ? "was" : "were"));
    }
    if (args.size() == 2) {
      flat_rand_ = true;
      args.push_back(make_index("", DType::i64, f.loc));
    }
    return make_rand(args[0], args[1], args[2], f.loc);
  }

  /// The counter of rand(seed, offset): i64(i0) * E1 + i1 ... over the left-hand side's
  /// indices and extents (0 for a rank-0 target), spelled as its canonical text reads back.
  Expr flat_index(const Stmt& s, const std::map<std::string, Dim>& extents, SourceLoc loc) {
    if (s.indices.empty()) return make_const(0, DType::i32, loc);
    Expr n = make_cast(DType::i64, make_index(s.indices[0], DType::i32, loc), loc);
    for (size_t d = 1; d < s.indices.size(); ++d) {
      const Dim& e = extents.at(s.indices[d]);
      if (e.is_fixed() && e.value() > INT32_MAX) {
        fail(loc, fmt::format("rand(seed, offset) in a statement whose extent {} does not fit in "
                              "i32: give the counter as a third argument",
                              e.value()));
      }
      Expr ext = e.is_fixed() ? make_const(static_cast<double>(e.value()), DType::i32, loc)
                              : make_sym(e.name(), DType::i32, loc);
      n = make_binary(BinaryOp::mul, n, ext, loc);
      n = make_binary(BinaryOp::add, n, make_index(s.indices[d], DType::i32, loc), loc);
    }
    return n;
  }

  Expr with_flat_counters(const Expr& e, const Stmt& s, const std::map<std::string, Dim>& extents) {
    if (const auto* r = e.as<Rand>()) {
      const auto* c = wrap(r->counter).as<IndexRef>();
      if (c && c->name.empty()) {
        return make_rand(with_flat_counters(wrap(r->seed), s, extents),
                         with_flat_counters(wrap(r->offset), s, extents),
                         flat_index(s, extents, e.loc()), e.loc());
      }
    }
    return map_children(e, [&](const Expr& c) { return with_flat_counters(c, s, extents); });
  }

  /// op(body, i, j, ..), with the indices in scope while the body is parsed.
  Expr parse_reduce(ReduceOp op, const Token& f, const std::vector<const Token*>& indices) {
    std::vector<std::string> names;
    for (const Token* index : indices) {
      std::string name(index->text);
      check_index_name(*index);
      if (std::find(names.begin(), names.end(), name) != names.end()) {
        fail(index->loc, fmt::format("reduction index '{}' is named twice", name));
      }
      if (in_scope(name)) {
        fail(index->loc, fmt::format("reduction index '{}' is already bound", name));
      }
      names.push_back(name);
    }
    scope_.insert(scope_.end(), names.begin(), names.end());
    Expr body = parse_expr();
    scope_.resize(scope_.size() - names.size());
    for (size_t i = 0; i < indices.size(); ++i) {
      expect(",");
      next();  // the index
    }
    expect(")");
    for (size_t i = 0; i < names.size(); ++i) {
      if (!uses_index(body, names[i])) {
        fail(indices[i]->loc,
             fmt::format("reduction index '{}' is not used in its body", names[i]));
      }
    }
    return make_reduce(op, names, body, f.loc);
  }

  /// cumop(body, index): `index` is one of the statement's own index variables.
  Expr parse_scan(ReduceOp op, const Token& f) {
    auto args = scan_args();
    if (args.size() != 2) {
      fail(f.loc, fmt::format("{} takes 2 arguments (a body and an index variable) but {} {} "
                              "given",
                              f.text, args.size(), args.size() == 1 ? "was" : "were"));
    }
    if (args[1].second != args[1].first + 1 || toks_[args[1].first].kind != Tok::ident) {
      fail(toks_[args[1].first].loc,
           fmt::format("the second argument of {} must be an index variable", f.text));
    }
    const Token& index = toks_[args[1].first];
    std::string name(index.text);
    if (!in_scope(name)) {
      fail(index.loc, fmt::format("scan index '{}' is not bound by the left-hand side (a scan "
                                  "runs along one of its statement's indices)",
                                  name));
    }
    Expr body = parse_expr();
    expect(",");
    next();  // the index
    expect(")");
    if (!uses_index(body, name)) {
      fail(index.loc, fmt::format("scan index '{}' is not used in its body", name));
    }
    return make_scan(op, name, body, f.loc);
  }
};

}  // namespace

Program parse_program(std::string_view text) {
  return Parser(text).parse();
}

}  // namespace kiln
