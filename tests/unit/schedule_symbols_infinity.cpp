// Issue 17's scheduler and semantics cases: a symbol used as a value in a scheduled kernel
// that reads no tensor declaring it, and logsumexp of rows whose max is infinite
// (docs/language.md, "Infinite maxima").
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "compiler/compile.h"
#include "compiler/reduction_math.h"
#include "compiler/schedule.h"
#include "ir/interpreter.h"
#include "ir/text.h"
#include "tests/unit/test_support.h"

using namespace kiln;
using kiln::testing::FloatMath;
using kiln::testing::read_example;

namespace {

const KernelDef& only_kernel(const Program& p, std::string_view name) {
  const KernelDef* k = p.find_kernel(name);
  REQUIRE(k != nullptr);
  return *k;
}

// Runs `k` on the rows of `x` (M rows of N) with the interpreter; returns y[M].
std::vector<double> row_results(const KernelDef& k, const std::vector<std::vector<double>>& rows,
                                bool scheduled) {
  const int64_t M = static_cast<int64_t>(rows.size()), N = static_cast<int64_t>(rows[0].size());
  SymbolValues syms{{"M", M}, {"N", N}};
  HostTensor x(k.inputs[0].dtype, {M, N}), y(k.outputs[0].dtype, {M});
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) x.set(i * N + j, rows[i][j]);
  }
  std::map<std::string, HostTensor*, std::less<>> tensors{{"x", &x}, {"y", &y}};
  if (scheduled) {
    run_schedule(schedule_kernel(k), syms, tensors);
  } else {
    interpret(k, syms, tensors);
  }
  std::vector<double> out;
  for (int64_t i = 0; i < M; ++i) out.push_back(y.get(i));
  return out;
}

}  // namespace

TEST_CASE("a symbol only an unread parameter declares stays a symbol of the scheduled kernel",
          "[schedule]") {
  // y's kernel reads t and writes y, neither of which has W in its shape; the lifted
  // reduction's statement and its epilogue must still know W (issue 17: "unknown symbol 'W'").
  const char* src = R"(
kernel k(t: f32[B, C, H], w: f32[W]) -> (y: f32[B, C], v: f32[W]) {
  y[b, c] = sum(t[b, c, h], h) / W
  v[i] = w[i] * 2.0
})";
  Program p = parse_program(src);
  const KernelDef& k = p.kernels[0];
  Schedule s = schedule_kernel(k);
  REQUIRE(!s.kernels.empty());
  for (const ScheduledKernel& sk : s.kernels) {
    CHECK_NOTHROW(verify(sk.def));
    // The unread parameter is not counted as traffic.
    if (sk.def.find_tensor("t") != nullptr) CHECK(sk.bytes.find("*W") == std::string::npos);
  }
  SymbolValues syms{{"B", 2}, {"C", 3}, {"H", 5}, {"W", 4}};
  HostTensor t(DType::f32, {2, 3, 5}), w(DType::f32, {4}), y(DType::f32, {2, 3}),
      v(DType::f32, {4}), y2 = y, v2 = v;
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, 0.25 * static_cast<double>(i));
  for (int64_t i = 0; i < w.numel(); ++i) w.set(i, static_cast<double>(i));
  std::map<std::string, HostTensor*, std::less<>> want{{"t", &t}, {"w", &w}, {"y", &y}, {"v", &v}};
  std::map<std::string, HostTensor*, std::less<>> got{{"t", &t}, {"w", &w}, {"y", &y2}, {"v", &v2}};
  interpret(k, syms, want);
  run_schedule(s, syms, got);
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int64_t row = i * 5;
    double sum = 0;
    for (int64_t h = 0; h < 5; ++h) sum += 0.25 * static_cast<double>(row + h);
    CHECK(y.get(i) == Approx(sum / 4));
    CHECK(y2.get(i) == Approx(y.get(i)));
  }
  // And it compiles (PTX only: no toolkit needed).
  CompileOptions opts;
  opts.archs = {"sm_90"};
  opts.all_variants = false;
  opts.assemble = false;
  CHECK_NOTHROW(compile_program(p, opts));
}

TEST_CASE("compile_program and emit_stage refuse architectures Kiln cannot target",
          "[schedule][arch]") {
  Program p = parse_program("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i]\n}\n");
  CompileOptions opts;
  opts.archs = {"sm_100"};
  opts.assemble = false;
  CHECK_THROWS_WITH(compile_program(p, opts),
                    Catch::StartsWith("unsupported architecture 'sm_100' (Kiln compiles for "
                                      "sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a"));
  CHECK_THROWS_AS(emit_stage(p, Stage::ptx, "sm_75"), UserError);
  CHECK(check_archs({"sm_80", "sm_90a"}).empty());
  CHECK(check_archs({}) != "");
}

TEST_CASE("logsumexp of a row whose max is infinite is torch's: -inf, +inf, NaN",
          "[schedule][interpreter]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::vector<double>> rows{
      {-inf, -inf, -inf, -inf},  // a fully masked row
      {inf, 1.0, -inf, 2.0},     // +inf somewhere
      {-inf, 1.0, -inf, 2.0},    // partly masked
      {nan, 1.0, 2.0, 3.0},      // NaN propagates
      {0.5, -1.0, 2.0, 3.0},     // an ordinary row
  };
  auto expect = [&](const std::vector<double>& y) {
    REQUIRE(y.size() == 5);
    CHECK(y[0] == -inf);
    CHECK(y[1] == inf);
    CHECK(y[2] == Approx(std::log(std::exp(1.0) + std::exp(2.0))).epsilon(1e-6));
    CHECK(std::isnan(y[3]));
    CHECK(y[4] == Approx(std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0) + std::exp(3.0)))
                      .epsilon(1e-6));
  };
  Program lse = parse_program(read_example("logsumexp"));
  Program suite = parse_program(read_example("reduction_suite"));
  for (bool scheduled : {false, true}) {
    INFO("scheduled: " << scheduled);
    expect(row_results(only_kernel(lse, "logsumexp"), rows, scheduled));
    expect(row_results(only_kernel(suite, "logsumexp_bf16"), rows, scheduled));
  }
  // Without the guard, IEEE arithmetic gives NaN for the masked row: the rule is the spec's.
  Program plain = parse_program(R"(
kernel lse(x: f32[M, N]) -> (y: f32[M]) {
  mx[i] = max(x[i, j], j)
  y[i] = mx[i] + log(sum(exp(x[i, j] - mx[i]), j))
})");
  CHECK(std::isnan(row_results(plain.kernels[0], rows, false)[0]));
}

namespace {

// A CPU model of a looped row's fused online max+sum for the guarded logsumexp (one thread
// per slice of chunks, compensated sums, states merged in order), as lower_reduction.cpp's
// fused path computes it: terms exp(x - g(m)) against the running max m, g(m) = 0 for an
// infinite m, rescaled by reduction_math::rescale when m grows.

float guard(float m) {
  return std::abs(m) > std::numeric_limits<float>::max() ? 0.0f : m;
}

float fused_logsumexp(const std::vector<float>& x, size_t threads, size_t chunk) {
  FloatMath a;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<reduction_math::Online<float>> st(threads, {-inf, 0.0f});
  std::vector<float> comp(threads, 0.0f);
  for (size_t base = 0; base < x.size(); base += threads * chunk) {
    for (size_t t = 0; t < threads; ++t) {
      size_t lo = std::min(x.size(), base + t * chunk), hi = std::min(x.size(), lo + chunk);
      float m = st[t].m;
      for (size_t i = lo; i < hi; ++i) m = a.max(m, x[i]);
      st[t].s = reduction_math::rescale(a, st[t].s, st[t].m, m);
      comp[t] = reduction_math::rescale(a, comp[t], st[t].m, m);
      st[t].m = m;
      float part = 0;
      for (size_t i = lo; i < hi; ++i) part += std::exp(x[i] - guard(m));
      reduction_math::kahan_add(a, st[t].s, comp[t], part);
    }
  }
  reduction_math::Online<float> all{st[0].m, st[0].s - comp[0]};
  for (size_t t = 1; t < threads; ++t) {
    all = reduction_math::merge(a, all, reduction_math::Online<float>{st[t].m, st[t].s - comp[t]});
  }
  return guard(all.m) + std::log(all.s);
}

}  // namespace

TEST_CASE("the fused online max+sum computes the guarded logsumexp of masked rows",
          "[schedule][interpreter]") {
  const float inf = std::numeric_limits<float>::infinity();
  // All at -inf, over several chunks and threads: -inf, as the interpreter gives.
  CHECK(fused_logsumexp(std::vector<float>(1000, -inf), 4, 16) == -inf);
  // Masked elements first, then finite ones, and the other way round.
  std::vector<float> x(1000, -inf);
  for (size_t i = 600; i < 1000; ++i) x[i] = static_cast<float>(i % 7) * 0.25f;
  double want = 0;
  for (float v : x) want += std::exp(static_cast<double>(v));
  CHECK(fused_logsumexp(x, 4, 16) == Approx(std::log(want)).epsilon(1e-5));
  std::reverse(x.begin(), x.end());
  CHECK(fused_logsumexp(x, 4, 16) == Approx(std::log(want)).epsilon(1e-5));
  // NaN stays NaN.
  x[3] = NAN;
  CHECK(std::isnan(fused_logsumexp(x, 4, 16)));
}
