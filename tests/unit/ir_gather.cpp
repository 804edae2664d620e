// Gathers, i64 and u32, and the logical operators, through the layers that run without a GPU:
// the parser and printer (round trips), the verifier's located errors, the interpreter's
// hand-computed results (wrapping, casts, clamped positions) and the scheduler (a gather is a
// read of the whole input; the cross-entropy example is one kernel).
#include <catch2/catch.hpp>
#include <climits>
#include <cstring>

#include "compiler/schedule.h"
#include "ir/interpreter.h"
#include "ir/text.h"
#include "tests/unit/test_support.h"

using namespace kiln;
using kiln::testing::read_example;

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

/// One kernel with host buffers for its parameters; integer tensors are set and read through
/// their raw elements, so i64 values beyond 2^53 stay exact.
struct Run {
  Program program;
  SymbolValues symbols;
  std::map<std::string, HostTensor, std::less<>> tensors;

  Run(const std::string& src, SymbolValues syms)
      : program(parse_program(src)), symbols(std::move(syms)) {
    for (const TensorDecl* t : kernel().params()) {
      tensors[t->name] = HostTensor(t->dtype, resolve_shape(t->shape, symbols));
    }
  }
  const KernelDef& kernel() const { return program.kernels.at(0); }
  Run& set(const std::string& name, const std::vector<double>& values) {
    HostTensor& t = tensors.at(name);
    REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
    for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
    return *this;
  }
  Run& set_i64(const std::string& name, const std::vector<int64_t>& values) {
    HostTensor& t = tensors.at(name);
    REQUIRE(t.dtype == DType::i64);
    REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
    std::memcpy(t.data(), values.data(), values.size() * 8);
    return *this;
  }
  Run& go() {
    std::map<std::string, HostTensor*, std::less<>> ptrs;
    for (auto& [name, t] : tensors) ptrs[name] = &t;
    interpret(kernel(), symbols, ptrs);
    return *this;
  }
  std::vector<double> get(const std::string& name) const {
    const HostTensor& t = tensors.at(name);
    std::vector<double> out;
    for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.get(i));
    return out;
  }
  std::vector<int64_t> get_i64(const std::string& name) const {
    const HostTensor& t = tensors.at(name);
    REQUIRE(t.dtype == DType::i64);
    std::vector<int64_t> out(static_cast<size_t>(t.numel()));
    std::memcpy(out.data(), t.data(), out.size() * 8);
    return out;
  }
};

}  // namespace

// ---- parser and printer ----------------------------------------------------------------------

TEST_CASE("gathers, i64, u32 and logical operators print canonically and parse back",
          "[ir][gather]") {
  const std::string ok =
      "kernel k(x: bf16[M, V], t: i64[M], h: u32[M], w: f32[V, D]) -> (a: f32[M], b: i64[M], "
      "c: u32[M], e: f32[M, D], f: f32[M]) {\n"
      "  a[i] = x[i, t[i]] + x[i, V - 1] + x[i, i32(h[i] / 7)]\n"
      "  b[i] = t[i] * 3 + i64(h[i]) - i64(-1)\n"
      "  c[i] = h[i] * -1 + u32(i)\n"
      "  e[i, d] = w[t[i] + 1, d]\n"
      "  f[i] = where(!(t[i] < 0) && (h[i] > 3 || !(a[i] == 0.0)), 1.0, 0.0)\n"
      "}\n";
  Program p = parse_program(ok);
  CHECK(print(p) == ok);
  CHECK(parse_program(print(p)).kernels[0].body[0].value == p.kernels[0].body[0].value);
  const Stmt& a = p.kernels[0].body[0];
  const Expr first = wrap(a.value.as<Binary>()->a);
  const Gather* g = wrap(first.as<Binary>()->a).as<Gather>();
  REQUIRE(g);
  CHECK(g->tensor == "x");
  CHECK(g->stored == DType::bf16);
  // The plain position is an i64 index variable; the computed one is t's i64 value.
  CHECK(wrap(g->indices[0]).as<IndexRef>());
  CHECK(wrap(g->indices[0]).type() == DType::i64);
  CHECK(wrap(g->indices[1]).as<Load>());
  CHECK(wrap(g->indices[1]).type() == DType::i64);
  // A read whose subscripts are all index variables stays a Load.
  CHECK(wrap(g->indices[1]).as<Load>()->indices == std::vector<std::string>{"i"});
  // `h[i] * -1` on u32: the literal wraps modulo 2^32 and prints back as -1.
  const Binary* mul = wrap(p.kernels[0].body[2].value.as<Binary>()->a).as<Binary>();
  REQUIRE(mul);
  CHECK(wrap(mul->b).as<Const>()->value == 4294967295.0);
}

TEST_CASE("logical operators: precedence and canonical parentheses", "[ir][gather]") {
  auto round_trip = [](const std::string& expr) {
    std::string src =
        "kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = where(" + expr + ", 1.0, 0.0)\n}\n";
    std::string printed = print(parse_program(src));
    size_t at = printed.find("where(") + 6;
    return printed.substr(at, printed.rfind(", 1.0") - at);
  };
  CHECK(round_trip("x[i] > 0.0 && x[i] < 1.0 || x[i] == 5.0") ==
        "x[i] > 0.0 && x[i] < 1.0 || x[i] == 5.0");
  CHECK(round_trip("x[i] > 0.0 && (x[i] < 1.0 || x[i] == 5.0)") ==
        "x[i] > 0.0 && (x[i] < 1.0 || x[i] == 5.0)");
  CHECK(round_trip("(((x[i] > 0.0)))") == "x[i] > 0.0");
  CHECK(round_trip("!!(x[i] > 0.0)") == "!(!(x[i] > 0.0))");
  CHECK(round_trip("!(x[i] > 0.0 || x[i] < -1.0)") == "!(x[i] > 0.0 || x[i] < -1.0)");
}

// ---- verifier: located errors ----------------------------------------------------------------

TEST_CASE("gather and integer-type errors are located", "[ir][gather]") {
  const std::string head = "kernel k(x: f32[M, V], t: i64[M], f: f32[M]) -> (y: f32[M]) {\n";
  // A float subscript, at the subscript.
  check_error(head + "  y[i] = x[i, f[i]]\n}\n",
              "a subscript must be an integer (i32, i64 or u32) but got f32", 2, 15);
  // A gather of a temporary.
  check_error(head + "  h[i, j] = x[i, j] * 2.0\n  y[i] = h[i, t[i]]\n}\n",
              "a gather (a subscript computed from values) reads an input; 'h' is a temporary "
              "(not supported yet)",
              3, 10);
  // A subscript that reads a temporary.
  check_error(head + "  p[i] = t[i] + 1\n  y[i] = x[i, p[i]]\n}\n",
              "a subscript may read inputs only; 'p' is a temporary (not supported yet)", 3, 15);
  // A reduction in a subscript.
  check_error(head + "  y[i] = x[i, max(i32(t[j]), j)]\n}\n",
              "a subscript cannot hold a reduction (not supported yet)", 2, 15);
  // The old mistake keeps its message: an unbound index variable.
  check_error(head + "  y[i] = x[i, k]\n}\n", "index 'k' is not bound by the left-hand side", 2,
              15);
  // Wrong rank of a gather.
  check_error(head + "  y[i] = x[t[i]]\n}\n",
              "tensor 'x' has rank 2 but is indexed with 1 subscript", 2, 10);
  // Storing across integer types needs a cast; i64 sums are not supported.
  check_error("kernel k(t: i64[M]) -> (y: i32[M]) {\n  y[i] = t[i] + 1\n}\n",
              "cannot store an i64 value into i32 output 'y'; convert it with i32(...)", 2, 15);
  check_error("kernel k(t: i32[M]) -> (y: u32[M]) {\n  y[i] = t[i]\n}\n",
              "cannot store an i32 value into u32 output 'y'; convert it with u32(...)", 2, 10);
  check_error("kernel k(t: i64[M, N]) -> (y: i64[M]) {\n  y[i] = sum(t[i, j], j)\n}\n",
              "sum needs an f32 or i32 body but got i64 (reductions over i64 and u32 are not "
              "supported yet)",
              2, 10);
  // Mixed integer types do not convert implicitly.
  check_error("kernel k(t: i64[M], n: i32[M]) -> (y: i64[M]) {\n  y[i] = t[i] + n[i]\n}\n",
              "type mismatch: i64 + i32; convert one side with f32(...) or i32(...)", 2, 15);
  // Logical operators take bools.
  check_error(
      "kernel k(x: f32[M]) -> (y: f32[M]) {\n  y[i] = where(x[i] && x[i] > 0.0, 1.0, 0.0)\n}\n",
      "'&&' needs bool operands (comparisons) but got f32", 2, 21);
  check_error("kernel k(x: i32[M]) -> (y: i32[M]) {\n  y[i] = where(!x[i], 1, 0)\n}\n",
              "'!' needs a bool operand (a comparison) but got i32", 2, 16);
  check_error("kernel k(x: f64[M]) -> (y: f32[M]) {\n  y[i] = x[i]\n}\n",
              "unknown dtype 'f64'; expected f32, f16, bf16, i32, i64 or u32", 1, 13);
  check_error("kernel k(x: f32[M]) -> (y: f32[M]) {\n  y[i] = x[i] & 1.0\n}\n",
              "unexpected character '&'", 2, 15);
}

TEST_CASE("the verifier checks API-built gathers", "[ir][gather]") {
  Program p =
      parse_program("kernel k(x: f32[M, V], t: i64[M]) -> (y: f32[M]) {\n  y[i] = x[i, t[i]]\n}\n");
  KernelDef k = p.kernels[0];
  // The same gather declared with the wrong stored type.
  const Gather* g = k.body[0].value.as<Gather>();
  REQUIRE(g);
  std::vector<Expr> idx;
  for (const auto& i : g->indices) idx.push_back(wrap(i));
  k.body[0].value = make_gather("x", idx, g->shape, DType::f16, {2, 10});
  try {
    verify(k);
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) == "gather of 'x' as f16 but it holds f32");
  }
  CHECK_THROWS_AS(make_gather("x", {make_const(1.5, DType::f32)}, {Dim::fixed(4)}, DType::f32),
                  UserError);
}

// ---- interpreter -------------------------------------------------------------------------------

TEST_CASE("interpreter: gathers clamp computed positions into range", "[ir][gather]") {
  Run r(
      "kernel k(x: f32[M, V], t: i64[M]) -> (y: f32[M], z: f32[M]) {\n"
      "  y[i] = x[i, t[i]]\n"
      "  z[i] = x[t[i], 0] + x[i, V]\n"  // V is past the end: the last column
      "}\n",
      {{"M", 5}, {"V", 3}});
  r.set("x", {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42});
  r.set_i64("t", {2, -1, 3, INT64_MIN, INT64_MAX});
  r.go();
  CHECK(r.get("y") == std::vector<double>{2, 10, 22, 30, 42});
  // x[t[i], 0]: rows 2, 0, 3, 0, 4 (clamped into [0, 4]); plus x[i, 2].
  CHECK(r.get("z") == std::vector<double>{20 + 2, 0 + 12, 30 + 22, 0 + 32, 40 + 42});
}

TEST_CASE("interpreter: an embedding lookup and the cross-entropy example", "[ir][gather]") {
  Run e(read_example("embedding"), {{"T", 4}, {"V", 3}, {"D", 2}});
  e.set("w", {1, 2, 3, 4, 5, 6});
  e.set_i64("ids", {2, 0, 7, -3});
  e.go();
  CHECK(e.get("y") == std::vector<double>{5, 6, 1, 2, 5, 6, 1, 2});

  Run c(read_example("cross_entropy"), {{"M", 3}, {"V", 4}});
  c.set("x", {0, 1, 2, 3, -1, -1, -1, -1, 5, 0, 0, 0});
  c.set_i64("t", {3, 0, 9});  // 9 is out of range: the last class
  c.go();
  auto lse = [](std::vector<double> row) {
    double s = 0;
    for (double v : row) s += std::exp(v);
    return std::log(s);
  };
  std::vector<double> loss = c.get("loss");
  CHECK(loss[0] == Approx(lse({0, 1, 2, 3}) - 3).epsilon(1e-6));
  CHECK(loss[1] == Approx(lse({-1, -1, -1, -1}) + 1).epsilon(1e-6));
  CHECK(loss[2] == Approx(lse({5, 0, 0, 0}) - 0).epsilon(1e-6));
}

TEST_CASE("interpreter: i64 arithmetic wraps, bit for bit", "[ir][gather]") {
  Run r(
      "kernel k(a: i64[N], b: i64[N]) -> (s: i64[N], p: i64[N], q: i64[N], n: i64[N], "
      "m: i64[N], l: i32[N]) {\n"
      "  s[i] = a[i] + b[i]\n"
      "  p[i] = a[i] * b[i]\n"
      "  q[i] = a[i] / b[i]\n"
      "  n[i] = -abs(a[i])\n"
      "  m[i] = where(a[i] < b[i], max(a[i], b[i]), min(a[i], b[i]))\n"
      "  l[i] = i32(a[i])\n"
      "}\n",
      {{"N", 4}});
  r.set_i64("a", {INT64_MAX, INT64_MIN, 9007199254740993, -7});
  r.set_i64("b", {1, -1, 3, 0});
  r.go();
  CHECK(r.get_i64("s") == std::vector<int64_t>{INT64_MIN, INT64_MAX, 9007199254740996, -7});
  CHECK(r.get_i64("p") == std::vector<int64_t>{INT64_MAX, INT64_MIN, 27021597764222979, 0});
  CHECK(r.get_i64("q") == std::vector<int64_t>{INT64_MAX, INT64_MIN, 3002399751580331, 0});
  CHECK(r.get_i64("n") == std::vector<int64_t>{-INT64_MAX, INT64_MIN, -9007199254740993, -7});
  CHECK(r.get_i64("m") == std::vector<int64_t>{1, -1, 3, 0});
  // i64 -> i32 keeps the low 32 bits: 2^53 + 1 -> 1, INT64_MAX -> -1.
  CHECK(r.get("l") == std::vector<double>{-1, 0, 1, -7});
}

TEST_CASE("interpreter: u32 wraps modulo 2^32 and compares unsigned", "[ir][gather]") {
  // -1640531535 is 2654435761 - 2^32: a weak literal converted to u32 wraps, as in C.
  Run r(
      "kernel k(a: u32[N], b: u32[N]) -> (s: u32[N], d: u32[N], q: u32[N], lt: i32[N], "
      "w: i64[N], f: f32[N]) {\n"
      "  s[i] = a[i] * -1640531535 + b[i]\n"
      "  d[i] = b[i] - a[i]\n"
      "  q[i] = a[i] / b[i]\n"
      "  lt[i] = i32(a[i] < b[i]) + 2 * i32(max(a[i], b[i]) == a[i])\n"
      "  w[i] = i64(a[i]) + i64(i32(a[i]))\n"
      "  f[i] = f32(a[i])\n"
      "}\n",
      {{"N", 3}});
  r.set("a", {4294967295, 7, 0});
  r.set("b", {1, 2, 0});
  r.go();
  CHECK(r.get("s") == std::vector<double>{1640531536, 1401181145, 0});
  CHECK(r.get("d") == std::vector<double>{2, 4294967291, 0});
  CHECK(r.get("q") == std::vector<double>{4294967295, 3, 0});
  CHECK(r.get("lt") == std::vector<double>{2, 2, 2});  // signed, the first would be 1
  CHECK(r.get_i64("w") == std::vector<int64_t>{4294967294, 14, 0});
  CHECK(r.get("f") == std::vector<double>{4294967296, 7, 0});
}

TEST_CASE("interpreter: float to integer casts truncate and saturate", "[ir][gather]") {
  Run r(
      "kernel k(x: f32[N], a: i64[N]) -> (l: i64[N], u: u32[N], g: f32[N], h: bf16[N]) {\n"
      "  l[i] = i64(x[i])\n"
      "  u[i] = u32(x[i])\n"
      "  g[i] = f32(a[i])\n"
      "  h[i] = bf16(a[i])\n"
      "}\n",
      {{"N", 4}});
  r.set("x", {1e30, -1e30, NAN, -2.7});
  r.set_i64("a", {9007199254740993, -1, 257, INT64_MIN});
  r.go();
  CHECK(r.get_i64("l") == std::vector<int64_t>{INT64_MAX, INT64_MIN, 0, -2});
  CHECK(r.get("u") == std::vector<double>{4294967295, 0, 0, 0});
  CHECK(r.get("g") == std::vector<double>{9007199254740992, -1, 257, -9223372036854775808.0});
  CHECK(r.get("h") == std::vector<double>{9007199254740992, -1, 256, -9223372036854775808.0});
}

TEST_CASE("interpreter: logical operators", "[ir][gather]") {
  Run r(
      "kernel k(x: f32[N]) -> (y: i32[N]) {\n"
      "  y[i] = i32(x[i] > 0.0 && x[i] < 2.0) + 2 * i32(x[i] < -1.0 || !(x[i] == x[i]))\n"
      "}\n",
      {{"N", 5}});
  r.set("x", {1, 3, -2, NAN, 0});
  r.go();
  CHECK(r.get("y") == std::vector<double>{1, 0, 2, 2, 0});
}

// ---- scheduler -------------------------------------------------------------------------------

TEST_CASE("scheduler: a gather is a read of its input, cross-entropy is one kernel",
          "[ir][gather][schedule]") {
  Program p = parse_program(read_example("cross_entropy"));
  Schedule s = schedule_kernel(p.kernels[0]);
  REQUIRE(s.kernels.size() == 1);
  CHECK(s.kernels[0].kind == StepKind::row_reduction);
  CHECK(s.buffers.empty());
  // Both x (the rows and the gathered logit) and t are inputs of the one kernel.
  CHECK(s.kernels[0].def.find_tensor("x"));
  CHECK(s.kernels[0].def.find_tensor("t"));
  // The scheduled kernels compute what the spec does.
  SymbolValues sym{{"M", 5}, {"V", 7}};
  std::map<std::string, HostTensor, std::less<>> a, b;
  for (auto* m : {&a, &b}) {
    (*m)["x"] = HostTensor(DType::bf16, {5, 7});
    (*m)["t"] = HostTensor(DType::i64, {5});
    (*m)["loss"] = HostTensor(DType::f32, {5});
    for (int64_t i = 0; i < 35; ++i) (*m)["x"].set(i, std::sin(double(i)));
    for (int64_t i = 0; i < 5; ++i) (*m)["t"].set(i, double(i * 3 - 2));
  }
  std::map<std::string, HostTensor*, std::less<>> pa, pb;
  for (auto& [n, t] : a) pa[n] = &t;
  for (auto& [n, t] : b) pb[n] = &t;
  interpret(p.kernels[0], sym, pa);
  run_schedule(s, sym, pb);
  for (int64_t i = 0; i < 5; ++i) CHECK(a["loss"].get(i) == b["loss"].get(i));

  Schedule e = schedule_kernel(parse_program(read_example("embedding")).kernels[0]);
  REQUIRE(e.kernels.size() == 1);
  CHECK(e.kernels[0].kind == StepKind::pointwise);
  CHECK(e.kernels[0].def.find_tensor("w"));
}

TEST_CASE("scheduler: gathers inside reductions are refused with a location",
          "[ir][gather][schedule]") {
  auto error = [](const std::string& src) -> Diagnostic {
    try {
      schedule_kernel(parse_program(src).kernels[0]);
    } catch (const UserError& e) {
      return {e.what(), e.loc().line, e.loc().col};
    }
    return {"<no error>", 0, 0};
  };
  const std::string msg =
      "a gather of 'w' inside a reduction is not compiled yet (the interpreter runs it); gather "
      "in a statement outside the reduction";
  Diagnostic d = error(
      "kernel k(ids: i64[T], w: f32[V, D]) -> (y: f32[D]) {\n"
      "  y[d] = sum(w[ids[t], d], t)\n}\n");
  CHECK(d.message == msg);
  CHECK(d.line == 2);
  CHECK(d.col == 14);
  // Through an inlined temporary as well.
  d = error(
      "kernel k(ids: i64[T], w: f32[V, D]) -> (y: f32[T]) {\n"
      "  g[t, d] = w[ids[t], d] * 2.0\n  y[t] = sum(g[t, d], d)\n}\n");
  CHECK(d.message == msg);
  // Outside the reduction it compiles: one row-reduction kernel.
  Schedule s = schedule_kernel(
      parse_program("kernel k(ids: i64[T], w: f32[V, D], x: f32[T, D]) -> (y: f32[T]) {\n"
                    "  y[t] = sum(x[t, d], d) + w[ids[t], 0]\n}\n")
          .kernels[0]);
  REQUIRE(s.kernels.size() == 1);
  CHECK(s.kernels[0].kind == StepKind::row_reduction);
}

TEST_CASE("scheduler: the gather suite's kernels compute what the spec does",
          "[ir][gather][schedule]") {
  Program p = parse_program(read_example("gather_suite"));
  for (const KernelDef& k : p.kernels) {
    INFO(k.name);
    Schedule s = schedule_kernel(k);
    REQUIRE(s.kernels.size() == 1);
    const bool colsum = k.name == "colsum_gather";
    CHECK(s.kernels[0].kind == (colsum ? StepKind::outer_reduction : StepKind::pointwise));
    SymbolValues sym = colsum                         ? SymbolValues{{"M", 9}, {"N", 5}, {"V", 4}}
                       : k.name == "transpose_gather" ? SymbolValues{{"M", 7}, {"N", 9}}
                                                      : SymbolValues{{"R", 6}, {"C", 5}, {"K", 23}};
    std::map<std::string, HostTensor, std::less<>> a;
    uint64_t seed = 1;
    for (const TensorDecl* t : k.params()) {
      HostTensor h(t->dtype, resolve_shape(t->shape, sym));
      for (int64_t i = 0; i < h.numel(); ++i) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int64_t r = static_cast<int64_t>((seed >> 33) % 9) - 1;  // -1 .. 7: some out of range
        if (t->dtype == DType::u32 && r < 0) r = 4294967295LL;
        h.set(i, is_float(t->dtype) ? std::sin(double(seed % 1000)) : double(r));
      }
      a[t->name] = h;
    }
    std::map<std::string, HostTensor, std::less<>> b = a;
    std::map<std::string, HostTensor*, std::less<>> pa, pb;
    for (auto& [n, t] : a) pa[n] = &t;
    for (auto& [n, t] : b) pb[n] = &t;
    interpret(k, sym, pa);
    run_schedule(s, sym, pb);
    for (const TensorDecl& o : k.outputs) CHECK(a[o.name].bytes == b[o.name].bytes);
  }
  // The i64 product wraps: (n + 9) * (2^31 - 1)^2 * 8 - h, computed in uint64_t.
  SymbolValues sym{{"R", 1}, {"C", 1}, {"K", 1}};
  std::map<std::string, HostTensor, std::less<>> t;
  t["x"] = HostTensor(DType::bf16, {1, 1});
  t["h"] = HostTensor(DType::u32, {1});
  t["n"] = HostTensor(DType::i32, {1});
  t["y"] = HostTensor(DType::f32, {1});
  t["z"] = HostTensor(DType::u32, {1});
  t["p"] = HostTensor(DType::i64, {1});
  t["h"].set(0, 4294967295.0);
  t["n"].set(0, 5);
  std::map<std::string, HostTensor*, std::less<>> pt;
  for (auto& [n, h] : t) pt[n] = &h;
  interpret(p.kernels[1], sym, pt);
  uint64_t m = 2147483647ULL;
  uint64_t want = 14ULL * m * m * 8ULL - 4294967295ULL;
  int64_t got;
  std::memcpy(&got, t["p"].data(), 8);
  CHECK(static_cast<uint64_t>(got) == want);
  // h * 2 < h holds for h = 2^32 - 1 (it wraps), n != 2: y = x[clamped] + 1.
  CHECK(t["y"].get(0) == 1.0);
  CHECK(t["z"].get(0) == double(uint32_t(4294967295u * 2654435761u + 5u / 3u)));
}
