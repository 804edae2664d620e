// Parser tests: the design examples and every construct of the language parse into the
// expected IR; syntax errors are reported at the offending token.
#include <catch2/catch.hpp>

#include "ir/text.h"

using namespace kiln;

namespace {

const char* kSoftmax = R"(
kernel softmax(x: bf16[M, N]) -> (y: bf16[M, N]) {
  mx[i]   = max(x[i, j], j)
  e[i, j] = exp(x[i, j] - mx[i])
  s[i]    = sum(e[i, j], j)
  y[i, j] = e[i, j] / s[i]
}
)";

const char* kLayernorm = R"(
kernel layernorm(x: bf16[M, N], w: bf16[N], b: bf16[N]) -> (y: bf16[M, N]) {
  mean[i] = sum(x[i, j], j) / N
  d[i, j] = x[i, j] - mean[i]
  var[i]  = sum(d[i, j] * d[i, j], j) / N
  y[i, j] = d[i, j] * rsqrt(var[i] + 1e-5) * w[j] + b[j]
}
)";

const char* kColsum = R"(
kernel colsum(x: f32[M, N]) -> (s: f32[N]) {
  s[j] = sum(x[i, j], i)
}
)";

void check_syntax_error(const std::string& src, const std::string& message, uint32_t line,
                        uint32_t col) {
  INFO(src);
  try {
    parse_program(src);
    FAIL("expected the error: " << message);
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) == message);
    CHECK(e.loc().line == line);
    CHECK(e.loc().col == col);
  }
}

}  // namespace

TEST_CASE("the design examples parse", "[ir]") {
  Program p = parse_program(std::string(kSoftmax) + kLayernorm + kColsum);
  REQUIRE(p.kernels.size() == 3);

  const KernelDef& sm = *p.find_kernel("softmax");
  REQUIRE(sm.inputs.size() == 1);
  CHECK(sm.inputs[0].dtype == DType::bf16);
  CHECK(sm.inputs[0].shape == std::vector<Dim>{Dim::symbol("M"), Dim::symbol("N")});
  CHECK(sm.symbols() == std::vector<std::string>{"M", "N"});
  REQUIRE(sm.temps.size() == 3);
  CHECK(sm.temps[0].name == "mx");
  CHECK(sm.temps[0].dtype == DType::f32);
  CHECK(sm.temps[0].shape == std::vector<Dim>{Dim::symbol("M")});
  CHECK(sm.temps[1].shape == std::vector<Dim>{Dim::symbol("M"), Dim::symbol("N")});
  REQUIRE(sm.body.size() == 4);
  const Reduce* r = sm.body[0].value.as<Reduce>();
  REQUIRE(r);
  CHECK(r->op == ReduceOp::max);
  CHECK(r->indices == std::vector<std::string>{"j"});
  CHECK(sm.body[0].loc == SourceLoc{3, 3});

  const KernelDef& ln = *p.find_kernel("layernorm");
  // sum(...) / N: the symbol adopts f32.
  const Binary* div = ln.body[0].value.as<Binary>();
  REQUIRE(div);
  CHECK(div->op == BinaryOp::div);
  CHECK(wrap(div->b) == make_sym("N", DType::f32));
  CHECK(ln.temps.size() == 3);

  const KernelDef& cs = *p.find_kernel("colsum");
  CHECK(cs.body[0].value ==
        make_reduce(ReduceOp::sum, "i", make_load("x", {"i", "j"}, DType::f32)));
  CHECK(cs.temps.empty());
}

TEST_CASE("pointwise add with broadcast and a transpose", "[ir]") {
  Program p = parse_program(R"(
    kernel add(x: f32[M, N], b: f32[N]) -> (y: f32[M, N]) {
      y[i, j] = x[i, j] + b[j]
    }
    kernel transpose(x: f16[N, M]) -> (y: f16[M, N]) { y[i, j] = x[j, i] }
  )");
  const KernelDef& add = p.kernels[0];
  CHECK(add.body[0].value == make_binary(BinaryOp::add, make_load("x", {"i", "j"}, DType::f32),
                                         make_load("b", {"j"}, DType::f32)));
  CHECK(add.body[0].value.loc() == SourceLoc{3, 25});
  const KernelDef& t = p.kernels[1];
  CHECK(t.body[0].value == make_load("x", {"j", "i"}, DType::f16));
  CHECK(t.body[0].value.type() == DType::f32);
  CHECK(index_extents(t, t.body[0]) ==
        std::map<std::string, Dim>{{"i", Dim::symbol("M")}, {"j", Dim::symbol("N")}});
}

TEST_CASE("comparisons, where, casts and every math function", "[ir]") {
  Program p = parse_program(R"(
kernel f(x: f32[N], n: i32[N]) -> (y: f32[N], z: i32[N], h: bf16[N]) {
  y[i] = where(x[i] > 0.5, exp(x[i]) + log(x[i]) + sqrt(x[i]) + rsqrt(x[i]), tanh(x[i]))
         + sigmoid(x[i]) * erf(x[i]) - abs(x[i]) + pow(x[i], 2) + f32(n[i] <= 3)
  z[i] = where(n[i] != 0, abs(n[i]), -n[i]) + i32(x[i]) + max(n[i], 2) * min(n[i], i)
  h[i] = bf16(x[i] * f32(n[i])) + f16(1.5) + where(i == 3, 1.0, 0)  # the weak 0 adopts f32
}
)");
  const KernelDef& k = p.kernels[0];
  CHECK(k.body[0].value.type() == DType::f32);
  CHECK(k.body[1].value.type() == DType::i32);
  CHECK(k.body[2].value.type() == DType::f32);
  // pow's weak i32 exponent became an f32 literal.
  CHECK(print(k.body[0].value).find("pow(x[i], 2.0)") != std::string::npos);
}

TEST_CASE("literals: f32, i32, folded negation, i32 limits", "[ir]") {
  auto value_of = [](const std::string& expr) {
    Program p = parse_program("kernel k(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] + " + expr + " }");
    return wrap(p.kernels[0].body[0].value.as<Binary>()->b);
  };
  CHECK(value_of("1e-5") == make_const(1e-5, DType::f32));
  CHECK(value_of("1e-5").as<Const>()->value == static_cast<double>(1e-5f));
  CHECK(value_of("2.") == make_const(2, DType::f32));
  CHECK(value_of("3") == make_const(3, DType::f32));  // weak: adopted f32
  CHECK(value_of("-4.25") == make_const(-4.25, DType::f32));
  CHECK(value_of("--4.25") == make_const(4.25, DType::f32));
  CHECK(value_of("-(1.5)") == make_const(-1.5, DType::f32));

  Program p = parse_program(
      "kernel k(x: i32[N]) -> (y: i32[N]) { y[i] = x[i] + -2147483648 + 2147483647 }");
  const Binary* b = p.kernels[0].body[0].value.as<Binary>();
  CHECK(wrap(b->b) == make_const(2147483647, DType::i32));
  CHECK(wrap(wrap(b->a).as<Binary>()->b) == make_const(-2147483648.0, DType::i32));
}

TEST_CASE("max and min are reductions only over a fresh index", "[ir]") {
  Program p = parse_program(R"(
kernel k(x: f32[M, N]) -> (a: f32[M], b: f32[M, N], c: f32[M, N], d: f32[M]) {
  a[i] = max(x[i, j], j)        # j is fresh: a reduction
  b[i, j] = min(x[i, j], j)     # j is bound: elementwise with the index value
  c[i, j] = max(x[i, j], N)     # a symbol: elementwise
  d[i] = min(max(x[i, j], 0.0), j)
})");
  const KernelDef& k = p.kernels[0];
  CHECK(k.body[0].value.as<Reduce>());
  CHECK(k.body[1].value.as<Binary>());
  CHECK(k.body[1].value == make_binary(BinaryOp::min, make_load("x", {"i", "j"}, DType::f32),
                                       make_index("j", DType::f32)));
  CHECK(k.body[2].value.as<Binary>());
  REQUIRE(k.body[3].value.as<Reduce>());
  CHECK(wrap(k.body[3].value.as<Reduce>()->body).as<Binary>());
}

TEST_CASE("comments, semicolons, rank-0 tensors and outputs read after written", "[ir]") {
  Program p = parse_program(R"(# a comment
kernel total(x: f32[N], s: f32[]) -> (t: f32[], u: f32[N]) {  # trailing comment
  t[] = sum(x[i], i) * s[]; u[i] = x[i] - t[];
  ;
}
)");
  const KernelDef& k = p.kernels[0];
  CHECK(k.body.size() == 2);
  CHECK(k.outputs[0].shape.empty());
  CHECK(k.body[1].value == make_binary(BinaryOp::sub, make_load("x", {"i"}, DType::f32),
                                       make_load("t", {}, DType::f32)));
}

TEST_CASE("nested reductions and sibling reductions", "[ir]") {
  Program p = parse_program(R"(
kernel k(x: f32[M, N], z: i32[M, N]) -> (s: f32[], c: i32[M]) {
  s[] = sum(sum(x[i, j], j) * mean(x[i, j], j), i)
  c[i] = prod(z[i, j], j) + min(z[i, j] + 1, j)
})");
  CHECK(p.kernels[0].body[0].value.type() == DType::f32);
  CHECK(p.kernels[0].body[1].value.type() == DType::i32);
}

TEST_CASE("syntax errors point at the offending token", "[ir]") {
  check_syntax_error("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] +\n}",
                     "expected an expression but found '}'", 3, 1);
  // A missing '}' points at the brace left open, whatever follows.
  check_syntax_error("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i]\n",
                     "unterminated kernel 'k': expected '}' before end of input", 1, 36);
  check_syntax_error(
      "kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i]\n\n"
      "kernel g(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i]\n}\n",
      "unterminated kernel 'k': expected '}' before the next kernel at 4:1", 1, 36);
  check_syntax_error("kernel k(x: f32[99999999999999999999]) -> (y: f32[N]) {\n  y[i] = x[i]\n}",
                     "dimension 99999999999999999999 is too large (at most 9223372036854775807)", 1,
                     17);
  // A statement target may be called `kernel`.
  CHECK_NOTHROW(
      parse_program("kernel k(x: f32[N]) -> (y: f32[N]) {\n  kernel[i] = x[i]\n"
                    "  y[i] = kernel[i]\n}\n"));
  // A subscript is an expression: a gather (tests/unit/ir_gather.cpp); what follows one must
  // be ',' or ']'.
  CHECK_NOTHROW(parse_program(
      "kernel k(x: f32[N, M], t: i32[N]) -> (y: f32[N]) {\n  y[i] = x[i, t[i]] + x[i + 1, 0]\n}"));
  check_syntax_error("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i 1]\n}",
                     "expected ',' or ']' but found '1'", 2, 14);
  check_syntax_error("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = (x[i] + 1\n}",
                     "expected ')' but found '}'", 3, 1);
  check_syntax_error("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] ) \n}",
                     "expected the end of the statement but found ')'", 2, 15);
  check_syntax_error("kernel k(x: f32[N]) (y: f32[N]) {}", "expected '->' but found '('", 1, 21);
  check_syntax_error("kernal k() -> (y: f32[N]) {}", "expected 'kernel' but found 'kernal'", 1, 1);
  check_syntax_error("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] @ 2\n}",
                     "unexpected character '@'", 2, 15);
  check_syntax_error("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] < 1 < 2\n}",
                     "comparisons do not chain; add parentheses", 2, 19);
  check_syntax_error("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] * 1e39\n}",
                     "f32 literal 1e39 is out of range", 2, 17);
  check_syntax_error("kernel k(x: f32[0]) -> (y: f32[N]) {}",
                     "a dimension must be a positive integer, not 0", 1, 17);
  check_syntax_error("kernel k(x: f32[N]) -> () {}", "a kernel needs at least one output", 1, 25);
  check_syntax_error("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = sum(x[i], j\n}",
                     "expected ')' but found '}'", 3, 1);
  check_syntax_error("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = max(x[i], 1.0\n",
                     "expected ')' but found end of input", 3, 1);
  check_syntax_error("kernel k(x: f32[N]) -> (y: f32[N]) {\n  + y[i] = x[i]\n}",
                     "expected a statement but found '+'", 2, 3);
}

TEST_CASE("hostile nesting and operator chains are diagnosed, never a stack overflow", "[ir]") {
  // Found by fuzz/fuzz_spec: thousands of unary minuses overflowed the parser's stack.
  auto spec = [](const std::string& expr) {
    return "kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = " + expr + "\n}\n";
  };
  auto message = [&](const std::string& expr) {
    try {
      parse_program(spec(expr));
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(message(std::string(100000, '-') + "x[i]"), Catch::Contains("nested too deeply"));
  CHECK_THAT(message(std::string(50000, '(') + "x[i]" + std::string(50000, ')')),
             Catch::Contains("nested too deeply"));
  std::string chain = "x[i]";
  for (int i = 0; i < 5000; ++i) chain += " + x[i]";
  CHECK_THAT(message(chain), Catch::Contains("expression too deep"));
  // Within the limits, deep but reasonable expressions still parse and round-trip.
  std::string ok = "x[i]";
  for (int i = 0; i < 150; ++i) ok += " * 1.5";
  Program p = parse_program(spec(std::string(100, '-') + "(" + ok + ")"));
  CHECK(parse_program(print(p)) == p);
  // The deepest accepted tree, right-nested so that printing adds a parenthesis per level.
  std::string right = "x[i]";
  for (int i = 0; i < 255; ++i) right = "x[i] - (" + right + ")";
  Program q = parse_program(spec(right));
  CHECK(parse_program(print(q)) == q);
}
