// Verifier and diagnostics tests: every rule of the language rejects a bad spec with the
// message a user would see, at the line and column of the offending token; programs built
// through the API are checked by the same rules.
#include <catch2/catch.hpp>

#include "ir/text.h"

using namespace kiln;

namespace {

struct Diagnostic {
  std::string message;
  uint32_t line, col;
};

Diagnostic error_of(const std::string& src) {
  try {
    parse_program(src);
  } catch (const UserError& e) {
    return {e.what(), e.loc().line, e.loc().col};
  }
  return {"<no error>", 0, 0};
}

void check_error(const std::string& src, const std::string& message, uint32_t line, uint32_t col) {
  INFO(src);
  Diagnostic d = error_of(src);
  CHECK(d.message == message);
  CHECK(d.line == line);
  CHECK(d.col == col);
}

// Statements go on line 2, so the expression after "  y[i, j] = " starts at column 12.
const std::string kHead = "kernel k(x: f32[M, N], n: i32[N]) -> (y: f32[M, N]) {\n";
std::string in_kernel(const std::string& stmts) {
  return kHead + stmts + "\n}\n";
}

// With one-dimensional tensors: the expression after "  y[i] = " starts at column 10.
const std::string kHead1 = "kernel k(x: f32[N], n: i32[N]) -> (y: f32[N]) {\n";
std::string in_kernel1(const std::string& stmts) {
  return kHead1 + stmts + "\n}\n";
}

}  // namespace

TEST_CASE("names: unknown names, functions, tensors and misuse", "[ir]") {
  check_error(in_kernel("  y[i, j] = x[i, j] + q"), "unknown name 'q'", 2, 23);
  check_error(in_kernel("  y[i, j] = foo(x[i, j])"), "unknown function 'foo'", 2, 13);
  check_error(in_kernel("  y[i, j] = q[i, j]"), "unknown tensor 'q'", 2, 13);
  check_error(in_kernel("  y[i, j] = x + 1.0"), "tensor 'x' must be indexed: write x[...]", 2, 13);
  check_error(in_kernel("  y[i, j] = x(i)"), "'x' is a tensor; index it with x[...]", 2, 13);
  check_error(in_kernel("  y[i, j] = M[i]"), "'M' is not a tensor", 2, 13);
  check_error(in_kernel("  y[M, j] = x[M, j]"), "index 'M' has the same name as a symbol", 2, 5);
  check_error(in_kernel("  y[x, j] = 1.0"), "index 'x' has the same name as a tensor", 2, 5);
  check_error(in_kernel("  y[i, i] = 1.0"), "index 'i' appears twice on the left-hand side", 2, 8);
  check_error(in_kernel("  N[i] = 1.0"), "temporary 'N' has the same name as a symbol", 2, 3);
}

TEST_CASE("calls: argument counts", "[ir]") {
  check_error(in_kernel("  y[i, j] = exp(x[i, j], 2)"), "exp takes 1 argument but 2 were given", 2,
              13);
  check_error(in_kernel("  y[i, j] = where(x[i, j] > 0.0, 1.0)"),
              "where takes 3 arguments but 2 were given", 2, 13);
  check_error(in_kernel("  y[i, j] = max(x[i, j], 1.0, 2.0)"),
              "max takes 2 arguments but 3 were given", 2, 13);
  check_error(in_kernel1("  y[i] = sum(x[i])"),
              "sum takes 2 or more arguments (a body and index variables) but 1 was given", 2, 10);
  check_error(in_kernel1("  y[i] = sum(x[i], i + 1)"),
              "the second argument of sum must be an index variable", 2, 20);
}

TEST_CASE("indices: binding, rank and extents", "[ir]") {
  check_error(in_kernel("  y[i, j] = x[i, k]"), "index 'k' is not bound by the left-hand side", 2,
              18);
  check_error(in_kernel("  y[i, j] = x[i, j] + k"), "unknown name 'k'", 2, 23);
  check_error(in_kernel("  y[i, j] = x[i]"), "tensor 'x' has rank 2 but is indexed with 1 index", 2,
              13);
  check_error(in_kernel("  y[i] = 1.0"), "output 'y' has rank 2 but the left-hand side has 1 index",
              2, 3);
  check_error(in_kernel("  y[i, j] = x[i, j] + f32(n[i])"),
              "index 'i' has extent N here but M at 2:3", 2, 27);
  check_error(in_kernel("  t[i] = sum(x[i, j], j) + sum(x[j, i], j)\n  y[i, j] = t[i]"),
              "index 'j' has extent M here but N at 2:14", 2, 32);
  check_error(in_kernel("  t[i, k] = x[i, i] + k\n  y[i, j] = t[i, j]"),
              "index 'i' has extent N here but M at 2:13", 2, 13);
  check_error(in_kernel1("  t[i, k] = x[i] + k\n  y[i] = t[i, i]"),
              "cannot infer the extent of index 'k': it never indexes a tensor", 2, 3);
}

TEST_CASE("types: mismatches, math on i32, bools and stores", "[ir]") {
  check_error(in_kernel("  y[i, j] = x[i, j] + n[j]"),
              "type mismatch: f32 + i32; convert one side with f32(...) or i32(...)", 2, 21);
  check_error(in_kernel1("  t[i] = n[i] * 1.5\n  y[i] = x[i]"),
              "type mismatch: i32 * f32; convert one side with f32(...) or i32(...)", 2, 15);
  check_error(in_kernel("  y[i, j] = exp(n[j])"),
              "exp needs an f32 operand but got i32; convert it with f32(...)", 2, 13);
  check_error(in_kernel1("  t[] = mean(n[i], i)\n  y[i] = x[i]"),
              "mean needs an f32 operand but got i32; convert it with f32(...)", 2, 9);
  check_error(in_kernel("  y[i, j] = x[i, j] > 0.0"),
              "cannot store a bool; use f32(...) or i32(...)", 2, 21);
  check_error(in_kernel("  y[i, j] = -(x[i, j] > 0.0)"),
              "unary '-' needs a number operand (f32, i32, i64 or u32) but got bool", 2, 13);
  check_error(in_kernel("  y[i, j] = where(x[i, j], 1.0, 0.0)"),
              "where() needs a bool condition (a comparison) but got f32", 2, 13);
  check_error(in_kernel("  y[i, j] = where(x[i, j] > 0.0, x[i, j], n[j])"),
              "where() branches have different types: f32 and i32", 2, 13);
  check_error(in_kernel1("  y[i] = n[i]"),
              "cannot store an i32 value into f32 output 'y'; convert it with f32(...)", 2, 10);
  check_error("kernel k(x: f32[N]) -> (y: i32[N]) {\n  y[i] = x[i] * 2.0\n}",
              "cannot store an f32 value into i32 output 'y'; convert it with i32(...)", 2, 15);
  check_error(in_kernel1("  y[i] = x[i] + 3000000000"),
              "integer literal 3000000000 does not fit in i32", 2, 17);
  check_error(in_kernel1("  y[i] = x[i] - -2147483649"),
              "integer literal 2147483649 does not fit in i32", 2, 18);
  check_error("kernel k(x: f64[N]) -> (y: f32[N]) {\n  y[i] = 1.0\n}",
              "unknown dtype 'f64'; expected f32, f16, bf16, i32, i64 or u32", 1, 13);
  check_error("kernel k(x: bool[N]) -> (y: f32[N]) {\n  y[i] = 1.0\n}",
              "unknown dtype 'bool'; expected f32, f16, bf16, i32, i64 or u32", 1, 13);
}

TEST_CASE("reductions: fresh index, used in the body", "[ir]") {
  check_error(in_kernel("  y[i, j] = sum(x[i, j], j)"), "reduction index 'j' is already bound", 2,
              26);
  check_error("kernel k(x: f32[N, N]) -> (y: f32[N]) {\n  y[i] = sum(x[i, i], k)\n}",
              "reduction index 'k' is not used in its body", 2, 23);
  check_error(in_kernel1("  y[i] = sum(sum(x[j], j), j)"), "reduction index 'j' is already bound",
              2, 24);
  check_error(in_kernel1("  y[i] = sum(x[i], N)"), "index 'N' has the same name as a symbol", 2,
              20);
}

TEST_CASE("kernel rules: parameters, outputs, inputs and temporaries", "[ir]") {
  check_error("kernel k(x: f32[N], x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i]\n}",
              "duplicate parameter 'x'", 1, 21);
  check_error("kernel k(x: f32[N]) -> (x: f32[N]) {\n  x[i] = 1.0\n}", "duplicate parameter 'x'", 1,
              25);
  check_error(in_kernel1("  y[i] = x[i]\n  y[i] = x[i] * 2.0"),
              "output 'y' is written twice (first at 2:3)", 3, 3);
  check_error("kernel k(x: f32[N]) -> (y: f32[N], z: f32[N]) {\n  y[i] = x[i]\n}",
              "output 'z' is never written", 1, 36);
  check_error(in_kernel1("  x[i] = 1.0\n  y[i] = x[i]"), "cannot write to input 'x'", 2, 3);
  check_error(in_kernel1("  y[i] = t[i]\n  t[i] = x[i]"),
              "temporary 't' is used before it is defined", 2, 10);
  check_error(in_kernel1("  t[i] = t[i] + 1.0\n  y[i] = t[i]"),
              "temporary 't' is used before it is defined", 2, 10);
  check_error(in_kernel1("  t[i] = x[i]\n  t[i] = x[i]\n  y[i] = t[i]"),
              "temporary 't' is written twice (first at 2:3)", 3, 3);
  check_error(in_kernel1("  y[i] = y[i] + 1.0"), "output 'y' is read before it is written", 2, 10);
  check_error(
      "kernel k(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] }\n"
      "kernel k(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] }",
      "duplicate kernel 'k'", 2, 8);
  check_error("kernel k(x: f32[x]) -> (y: f32[N]) { y[i] = 1.0 }",
              "symbol 'x' has the same name as a tensor", 1, 10);
}

TEST_CASE("render_diagnostic points at the column, copying tabs", "[ir]") {
  std::string src = "kernel k(x: f32[N]) -> (y: f32[N]) {\n\ty[i] = x[i] + q\n}\n";
  Diagnostic d = error_of(src);
  REQUIRE(d.message == "unknown name 'q'");
  CHECK(render_diagnostic("add.kiln", src, {d.line, d.col}, d.message) ==
        "add.kiln:2:16: error: unknown name 'q'\n"
        "\ty[i] = x[i] + q\n"
        "\t              ^\n");
  CHECK(render_diagnostic("a.kiln", src, {}, "no buffer") == "a.kiln: error: no buffer\n");
}

namespace {

KernelDef api_kernel() {
  KernelDef k;
  k.name = "scale";
  k.inputs.push_back({"x", DType::f32, {Dim::symbol("N")}, TensorRole::input, {}});
  k.outputs.push_back({"y", DType::f32, {Dim::symbol("N")}, TensorRole::output, {}});
  k.temps.push_back({"t", DType::f32, {Dim::symbol("N")}, TensorRole::temp, {}});
  Expr x = make_load("x", {"i"}, DType::f32);
  k.body.push_back({"t", {"i"}, make_binary(BinaryOp::mul, x, make_const(2, DType::i32)), {}});
  k.body.push_back({"y",
                    {"i"},
                    make_binary(BinaryOp::add, make_load("t", {"i"}, DType::f32), make_sym("N")),
                    {}});
  return k;
}

std::string verify_error(const KernelDef& k) {
  try {
    verify(k);
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("programs built through the API verify like parsed ones", "[ir]") {
  KernelDef k = api_kernel();
  REQUIRE_NOTHROW(verify(k));
  Program parsed = parse_program(print(k));
  CHECK(parsed.kernels[0] == k);
  CHECK(print(k) ==
        "kernel scale(x: f32[N]) -> (y: f32[N]) {\n"
        "  t[i] = x[i] * 2.0\n"
        "  y[i] = t[i] + N\n"
        "}\n");

  KernelDef no_temps = k;
  no_temps.temps.clear();
  CHECK(verify_error(no_temps) ==
        "temporary 't' does not match the kernel's temps list (expected f32 with 1 dimensions, "
        "in order of definition)");

  KernelDef unbound = k;
  unbound.body[1].value =
      make_binary(BinaryOp::add, make_load("t", {"j"}, DType::f32), make_index("i", DType::f32));
  CHECK(verify_error(unbound) == "index 'j' is not bound by the left-hand side");

  KernelDef bad_sym = k;
  bad_sym.body[1].value =
      make_binary(BinaryOp::add, make_load("t", {"i"}, DType::f32), make_sym("Q", DType::f32));
  CHECK(verify_error(bad_sym) == "unknown symbol 'Q'");

  KernelDef wrong_stored = k;
  wrong_stored.body[1].value = make_load("t", {"i"}, DType::bf16);
  CHECK(verify_error(wrong_stored) == "load of 't' as bf16 but it holds f32");

  KernelDef unwritten = k;
  unwritten.body.pop_back();
  CHECK(verify_error(unwritten) == "output 'y' is never written");

  KernelDef bound_red = k;
  bound_red.body[1].value = make_reduce(ReduceOp::sum, "i", make_load("t", {"i"}, DType::f32));
  CHECK(verify_error(bound_red) == "reduction index 'i' is already bound");
}
