// Interpreter tests: hand-computed results for broadcasts, transposes, i32 wrap-around and
// division, casts, rounding on store, reductions (including column sums and long rows), NaN
// propagation, and the checks on the buffers it is given.
#include <bit>
#include <catch2/catch.hpp>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ir/dtype.h"
#include "ir/half.h"
#include "ir/interpreter.h"
#include "ir/text.h"

using namespace kiln;

namespace {

/// One kernel with host buffers for all its parameters.
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
};

using V = std::vector<double>;

}  // namespace

TEST_CASE("pointwise add with broadcast", "[ir]") {
  Run r("kernel add(x: f32[M, N], b: f32[N]) -> (y: f32[M, N]) { y[i, j] = x[i, j] + b[j] }",
        {{"M", 2}, {"N", 3}});
  r.set("x", {1, 2, 3, 4, 5, 6}).set("b", {10, 20, 30}).go();
  CHECK(r.get("y") == V{11, 22, 33, 14, 25, 36});
}

TEST_CASE("transpose, index values and symbols", "[ir]") {
  Run r(R"(kernel t(x: f32[N, M]) -> (y: f32[M, N], z: i32[M, N]) {
             y[i, j] = x[j, i]
             z[i, j] = i * 10 + j + N
           })",
        {{"M", 2}, {"N", 3}});
  r.set("x", {1, 2, 3, 4, 5, 6}).go();
  CHECK(r.get("y") == V{1, 3, 5, 2, 4, 6});
  CHECK(r.get("z") == V{3, 4, 5, 13, 14, 15});
}

TEST_CASE("i32 arithmetic wraps and division never traps", "[ir]") {
  Run r(R"(kernel ints(a: i32[N], b: i32[N]) -> (s: i32[N], p: i32[N], q: i32[N], n: i32[N]) {
             s[i] = a[i] + b[i]
             p[i] = a[i] * b[i]
             q[i] = a[i] / b[i]
             n[i] = -a[i] + abs(b[i])
           })",
        {{"N", 5}});
  r.set("a", {INT_MAX, 7, -7, INT_MIN, 65536}).set("b", {1, -2, 2, -1, 0}).go();
  CHECK(r.get("s") == V{INT_MIN, 5, -5, INT_MAX, 65536});
  CHECK(r.get("p") == V{INT_MAX, -14, -14, INT_MIN, 0});
  CHECK(r.get("q") == V{INT_MAX, -3, -3, INT_MIN, 0});
  CHECK(r.get("n") == V{-INT_MAX + 1, -5, 9, INT_MIN + 1, -65536});
  Run m(
      "kernel m(a: i32[N]) -> (y: i32[N]) { y[i] = 65536 * a[i] * 65536 + abs(a[i] - a[i] - "
      "2147483647 - 1) }",
      {{"N", 1}});
  m.set("a", {3}).go();
  CHECK(m.get("y") == V{INT_MIN});  // 0 + abs(INT_MIN) wraps to INT_MIN
}

TEST_CASE("casts: bf16 and f16 rounding, truncation to i32, bools", "[ir]") {
  Run r(R"(kernel c(x: f32[N]) -> (b: f32[N], h: f32[N], t: i32[N], z: f32[N]) {
             b[i] = bf16(x[i])
             h[i] = f16(x[i])
             t[i] = i32(x[i])
             z[i] = f32(x[i] > 0.0) + f32(i32(x[i] < 0.0))
           })",
        {{"N", 6}});
  double tie_down = 1.0 + std::ldexp(1.0, -8), tie_up = 1.0 + std::ldexp(3.0, -8);
  r.set("x", {tie_down, tie_up, -2.7, NAN, 3e9, 70000}).go();
  V b = r.get("b");
  CHECK(b[0] == 1.0);
  CHECK(b[1] == 1.0 + std::ldexp(1.0, -6));
  CHECK(b[2] == -2.703125);
  CHECK(std::isnan(b[3]));
  V h = r.get("h");
  CHECK(h[2] == -2.69921875);
  CHECK(h[5] == INFINITY);  // past 65520: overflows
  CHECK(r.get("t") == V{1, 1, -2, 0, INT_MAX, 70000});
  CHECK(r.get("z") == V{1, 1, 1, 0, 1, 1});
}

// tf32(x) keeps the sign, the exponent and the top 10 significand bits (cut toward zero, as
// tensor cores read f32 operands): quiet NaNs and the infinities stay what they are.
TEST_CASE("tf32 cuts the significand to 10 bits", "[ir]") {
  Run r(R"(kernel c(x: f32[N]) -> (y: f32[N]) {
             y[i] = tf32(x[i])
           })",
        {{"N", 8}});
  const double ulp = std::ldexp(1.0, -10);                     // tf32's at 1
  const double below = 1.0 + ulp - std::ldexp(1.0, -23);       // f32's largest below 1 + ulp
  const double subnormal = std::bit_cast<float>(0x00002001u);  // (2^13 + 1) 2^-149
  r.set("x", {1.0 + ulp, below, -below, subnormal, NAN, -INFINITY, 0.1, -0.0}).go();
  V y = r.get("y");
  CHECK(y[0] == 1.0 + ulp);
  CHECK(y[1] == 1.0);  // toward zero, not to nearest
  CHECK(y[2] == -1.0);
  CHECK(y[3] == std::ldexp(1.0, -136));  // a subnormal: the same bits cut
  CHECK(std::isnan(y[4]));
  CHECK(y[5] == -INFINITY);
  CHECK(y[6] == static_cast<double>(std::bit_cast<float>(0x3DCCC000u)));  // 0.1f = 0x3DCCCCCD
  CHECK(y[7] == 0.0);
  CHECK(std::signbit(y[7]));
  // A NaN whose payload lies only in the cut bits reads as infinity, as the tensor cores read it.
  CHECK(to_tf32(std::bit_cast<float>(0x7F800001u)) == INFINITY);
  CHECK(std::isnan(to_tf32(std::bit_cast<float>(0x7FC00001u))));
}

TEST_CASE("stores round to the output's storage type", "[ir]") {
  Run r(R"(kernel s(x: f32[N]) -> (b: bf16[N], h: f16[N]) {
             b[i] = x[i] * 1.0
             h[i] = x[i]
           })",
        {{"N", 3}});
  r.set("x", {1.0 + std::ldexp(3.0, -8), 0.1, 65520}).go();
  const HostTensor& b = r.tensors.at("b");
  uint16_t bits[3];
  std::memcpy(bits, b.data(), 6);
  CHECK(bits[0] == 0x3f82);
  CHECK(bits[1] == f32_to_bf16(0.1f));
  CHECK(r.get("h")[2] == INFINITY);
}

TEST_CASE("reductions: sum, max, min, prod, mean, column sum", "[ir]") {
  Run r(R"(kernel red(x: f32[M, N], n: i32[M, N]) -> (s: f32[M], mx: f32[M], mn: f32[M],
                                                    p: f32[M], m: f32[M], c: f32[N], ip: i32[M]) {
             s[i] = sum(x[i, j], j)
             mx[i] = max(x[i, j], j)
             mn[i] = min(x[i, j], j)
             p[i] = prod(x[i, j], j)
             m[i] = mean(x[i, j], j)
             c[j] = sum(x[i, j], i)
             ip[i] = prod(n[i, j], j) + sum(n[i, j], j)
           })",
        {{"M", 2}, {"N", 3}});
  r.set("x", {1, -2, 3, 4, 5, 6}).set("n", {65536, 65536, 2, 1, 2, 3}).go();
  CHECK(r.get("s") == V{2, 15});
  CHECK(r.get("mx") == V{3, 6});
  CHECK(r.get("mn") == V{-2, 4});
  CHECK(r.get("p") == V{-6, 120});
  CHECK(r.get("m") == V{static_cast<float>(2.0 / 3.0), 5});
  CHECK(r.get("c") == V{5, 3, 9});
  CHECK(r.get("ip") == V{0 + 131074, 6 + 6});  // 65536 * 65536 wraps to 0
}

TEST_CASE("max and min propagate NaN", "[ir]") {
  Run r(R"(kernel nan(x: f32[M, N]) -> (r: f32[M], e: f32[M, N], f: f32[M, N]) {
             r[i] = max(x[i, j], j)
             e[i, j] = max(x[i, j], 0.0)
             f[i, j] = min(0.0, x[i, j])
           })",
        {{"M", 2}, {"N", 3}});
  r.set("x", {1, NAN, 3, 4, 5, 6}).go();
  V red = r.get("r");
  CHECK(std::isnan(red[0]));
  CHECK(red[1] == 6);
  CHECK(std::isnan(r.get("e")[1]));
  CHECK(std::isnan(r.get("f")[1]));
  CHECK(r.get("e")[0] == 1);
}

TEST_CASE("softmax and layernorm match a direct computation", "[ir]") {
  const int64_t M = 5, N = 300;
  Run sm(R"(kernel softmax(x: f32[M, N]) -> (y: f32[M, N]) {
              mx[i]   = max(x[i, j], j)
              e[i, j] = exp(x[i, j] - mx[i])
              s[i]    = sum(e[i, j], j)
              y[i, j] = e[i, j] / s[i]
            })",
         {{"M", M}, {"N", N}});
  V x(M * N);
  for (int64_t k = 0; k < M * N; ++k) x[k] = std::sin(0.37 * k) * 4;
  sm.set("x", x).go();
  V y = sm.get("y");
  for (int64_t i = 0; i < M; ++i) {
    double mx = -INFINITY, s = 0;
    for (int64_t j = 0; j < N; ++j) mx = std::max(mx, double(float(x[i * N + j])));
    for (int64_t j = 0; j < N; ++j) s += std::exp(float(x[i * N + j]) - mx);
    for (int64_t j = 0; j < N; ++j) {
      CHECK(y[i * N + j] == Approx(std::exp(float(x[i * N + j]) - mx) / s).epsilon(1e-6));
    }
  }
}

TEST_CASE("long reductions into few outputs, nested and scalar", "[ir]") {
  const int64_t N = 5000;
  Run r(R"(kernel total(x: f32[N], m: f32[M, N]) -> (t: f32[], u: f32[M], v: f32[]) {
             t[] = sum(x[i] * 2.0, i)
             u[r] = sum(m[r, c] - x[c], c)
             v[] = max(sum(m[r, c], c), r)
           })",
        {{"N", N}, {"M", 3}});
  V x(N), m(3 * N);
  std::iota(x.begin(), x.end(), 0.0);
  for (int64_t k = 0; k < 3 * N; ++k) m[k] = static_cast<double>(k % 7);
  r.set("x", x).set("m", m).go();
  CHECK(r.get("t")[0] == static_cast<float>(N * (N - 1)));
  V u = r.get("u");
  for (int64_t i = 0; i < 3; ++i) {
    double want = 0;
    for (int64_t j = 0; j < N; ++j) want += m[i * N + j] - x[j];
    CHECK(u[i] == static_cast<float>(want));
  }
  double best = -INFINITY;
  for (int64_t i = 0; i < 3; ++i) {
    double s = 0;
    for (int64_t j = 0; j < N; ++j) s += m[i * N + j];
    best = std::max(best, s);
  }
  CHECK(r.get("v")[0] == best);
}

TEST_CASE("outputs can be read after they are written, temporaries keep f64", "[ir]") {
  Run r(R"(kernel k(x: f32[N]) -> (y: bf16[N], z: f32[N]) {
             t[i] = x[i] / 3.0
             y[i] = t[i]
             z[i] = y[i] - t[i] * 1.0
           })",
        {{"N", 1}});
  r.set("x", {1}).go();
  double t = 1.0 / 3.0;  // held in f64, not rounded to f32
  double y = bf16_to_f32(f32_to_bf16(static_cast<float>(t)));
  CHECK(r.get("y")[0] == y);
  CHECK(r.get("z")[0] == static_cast<float>(y - t));
}

TEST_CASE("the interpreter checks its buffers", "[ir]") {
  Program p = parse_program("kernel k(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] }");
  const KernelDef& k = p.kernels[0];
  HostTensor x(DType::f32, {4}), y(DType::f32, {4}), bad(DType::f32, {5}), half(DType::f16, {4});
  auto message = [&](SymbolValues syms, std::map<std::string, HostTensor*, std::less<>> m) {
    try {
      interpret(k, syms, m);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  CHECK(message({{"N", 4}}, {{"x", &x}}) == "no buffer for output 'y'");
  CHECK(message({}, {{"x", &x}, {"y", &y}}) == "symbol 'N' is not bound");
  CHECK(message({{"N", 4}}, {{"x", &x}, {"y", &bad}}) ==
        "tensor 'y' has shape [5] but the kernel expects [4]");
  CHECK(message({{"N", 4}}, {{"x", &half}, {"y", &y}}) ==
        "tensor 'x' has dtype f16 but the kernel expects f32");
  CHECK(message({{"N", 4}}, {{"x", &x}, {"y", &y}}) == "<no error>");
}

TEST_CASE("interpreter throughput on a large pointwise statement", "[.][bench]") {
  const int64_t N = 1 << 26;
  Run r("kernel add(x: f32[N], z: f32[N]) -> (y: f32[N]) { y[i] = x[i] + z[i] }", {{"N", N}});
  auto t0 = std::chrono::steady_clock::now();
  r.go();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("y = x + z over 64M f32: " << s << " s, " << N / s / 1e6 << " M elements/s");
}
