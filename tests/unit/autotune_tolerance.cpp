// Unit tests of the harness's per-element check (autotune/harness.h compare, Tolerance), on
// host tensors: what `kiln run` and `kiln tune` accept from a GPU. Correct rounding and f32
// tree sums pass; bf16 rounded toward zero, one wrong element, and NaN or infinities out of
// place fail, with the worst element named.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "autotune/harness.h"
#include "ir/half.h"
#include "ir/text.h"

using namespace kiln;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

HostTensor tensor(DType t, const std::vector<double>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  HostTensor h(t, shape);
  for (size_t i = 0; i < v.size(); ++i) h.set(static_cast<int64_t>(i), v[i]);
  return h;
}

// bf16 bits of f rounded toward zero (what a kernel that truncates would store).
double bf16_toward_zero(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u &= 0xFFFF0000u;
  float t;
  std::memcpy(&t, &u, 4);
  return t;
}

// A pairwise f32 sum, as the GPU's butterflies and block combines are.
float tree_sum(const float* x, size_t n) {
  if (n == 1) return x[0];
  size_t h = n / 2;
  return tree_sum(x, h) + tree_sum(x + h, n - h);
}

}  // namespace

TEST_CASE("tolerances follow the output type and the reduced extent", "[autotune]") {
  const double u = 0x1p-24;
  CHECK(Tolerance::of(DType::f32, 1).rel == 16 * u);
  CHECK(Tolerance::of(DType::f32, 1).gamma == 16 * u);
  CHECK(Tolerance::of(DType::bf16, 1).rel == 0x1p-8 + 16 * u);
  CHECK(Tolerance::of(DType::f16, 1).rel == 0x1p-11 + 16 * u);
  CHECK(Tolerance::of(DType::f32, 1024).gamma == 16 * u * 11);
  CHECK(Tolerance::of(DType::f32, 1025).gamma == 16 * u * 12);
  CHECK(Tolerance::of(DType::bf16, 1000, 0.05).rel == 0.05);  // --rtol
  CHECK(Tolerance::of(DType::i32, 1000).rel == 0);
  CHECK(Tolerance::of(DType::i32, 1000).gamma == 0);
  // A step's approximate functions (manifest steps[].approx_error) add to gamma.
  CHECK(Tolerance::of(DType::bf16, 1, -1, 0x1p-10).gamma == 16 * u + 0x1p-10);
  CHECK(Tolerance::of(DType::bf16, 1, -1, 0x1p-10).rel == 0x1p-8 + 16 * u + 0x1p-10);
  CHECK(Tolerance::of(DType::i32, 1, -1, 0x1p-10).gamma == 0);
}

TEST_CASE("bf16 rounded to nearest passes, rounded toward zero fails", "[autotune]") {
  // Softmax-like values: exact (f64), the interpreter's stored bf16, the GPU's f32 with a
  // relative error of a few f32 ulps, then rounded to nearest or toward zero.
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> d(1e-4, 1.0);
  std::uniform_real_distribution<double> noise(-4 * 0x1p-24, 4 * 0x1p-24);
  const int n = 4096;
  std::vector<double> exact(n), nearest(n), toward_zero(n);
  for (int i = 0; i < n; ++i) {
    exact[i] = d(rng);
    float gpu = static_cast<float>(exact[i] * (1 + noise(rng)));
    nearest[i] = bf16_to_f32(f32_to_bf16(gpu));
    toward_zero[i] = bf16_toward_zero(gpu);
  }
  HostTensor stored = tensor(DType::bf16, exact), wide = tensor(DType::f32, exact);
  const Tolerance tol = Tolerance::of(DType::bf16, 4096);
  Comparison ok = compare(tensor(DType::bf16, nearest), stored, wide, tol);
  CHECK(ok.bad == 0);
  CHECK(ok.worst_ratio <= 1);
  Comparison bad = compare(tensor(DType::bf16, toward_zero), stored, wide, tol);
  CHECK(bad.bad > n / 8);
  CHECK(bad.worst_ratio > 1);
}

TEST_CASE("f32 tree sums pass, one wrong element fails and is named", "[autotune]") {
  // Row sums of uniform [-2, 2) inputs, rows of 100003: the f32 tree sum against f64.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-2, 2);
  const int64_t m = 8, n = 100003;
  std::vector<float> x(n);
  std::vector<double> exact(m), got(m);
  for (int64_t r = 0; r < m; ++r) {
    double s = 0;
    for (float& v : x) s += v = d(rng);
    exact[r] = s;
    got[r] = tree_sum(x.data(), x.size());
  }
  HostTensor ref = tensor(DType::f32, exact);
  const Tolerance tol = Tolerance::of(DType::f32, n);
  CHECK(compare(tensor(DType::f32, got), ref, ref, tol).bad == 0);
  // Row 5 skipped one element of its row (|x| < 2: off by about 1).
  got[5] -= 1.0;
  Comparison c = compare(tensor(DType::f32, got), ref, ref, tol);
  CHECK(c.bad == 1);
  CHECK(c.worst == 5);
  CHECK_THAT(describe_worst(c, {m}), Catch::StartsWith("element 5 [5]: got "));

  // One wrong element among 2-D pointwise results, named with its coordinates.
  std::vector<double> y(12, 0.5), z = y;
  z[7] = 0.25;
  HostTensor yr = tensor(DType::f32, y, {3, 4});
  Comparison p = compare(tensor(DType::f32, z, {3, 4}), yr, yr, Tolerance::of(DType::f32, 1));
  CHECK(p.bad == 1);
  CHECK(describe_worst(p, {3, 4}) == "element 7 [1, 3]: got 0.25, expected 0.5");
}

TEST_CASE("NaN and infinities must sit exactly where the reference has them", "[autotune]") {
  const Tolerance tol = Tolerance::of(DType::f32, 1000);
  HostTensor ref = tensor(DType::f32, {kNaN, kInf, -kInf, 1.0});
  CHECK(compare(tensor(DType::f32, {kNaN, kInf, -kInf, 1.0}), ref, ref, tol).bad == 0);
  CHECK(compare(tensor(DType::f32, {1.0, kInf, -kInf, 1.0}), ref, ref, tol).bad == 1);
  CHECK(compare(tensor(DType::f32, {kNaN, kNaN, -kInf, 1.0}), ref, ref, tol).bad == 1);
  CHECK(compare(tensor(DType::f32, {kNaN, -kInf, -kInf, 1.0}), ref, ref, tol).bad == 1);
  CHECK(compare(tensor(DType::f32, {kNaN, kInf, 3e38, 1.0}), ref, ref, tol).bad == 1);
  Comparison c = compare(tensor(DType::f32, {kNaN, kInf, -kInf, kNaN}), ref, ref, tol);
  CHECK(c.bad == 1);
  CHECK(c.worst == 3);
  // bf16: a stored infinity (overflow) against a finite wide value is still an infinity.
  HostTensor stored = tensor(DType::bf16, {kInf}), wide = tensor(DType::f32, {kInf});
  CHECK(compare(tensor(DType::bf16, {kInf}), stored, wide, Tolerance::of(DType::bf16, 1)).bad == 0);
}

TEST_CASE("an output the spec already rounded may flip by one ulp", "[autotune]") {
  // r = f16(...) in the spec: the wide reference is the rounded value itself; the GPU's f32
  // value a hair away from a rounding midpoint may round to the neighbour. 16 -> 16.015625 is
  // one f16 ulp (2^-10 relative, the most an ulp can be): allowed; two ulps are not.
  HostTensor stored = tensor(DType::f16, {16.0, 1.0}), wide = tensor(DType::f32, {16.0, 1.0});
  const Tolerance tol = Tolerance::of(DType::f16, 1);
  CHECK(compare(tensor(DType::f16, {16.015625, 1.0}), stored, wide, tol).bad == 0);
  CHECK(compare(tensor(DType::f16, {16.03125, 1.0}), stored, wide, tol).bad == 1);
  // Not already rounded (wide between two f16 values): the half-ulp rule holds.
  HostTensor w2 = tensor(DType::f32, {16.001, 1.0}), s2 = tensor(DType::f16, {16.001, 1.0});
  CHECK(compare(tensor(DType::f16, {16.015625, 1.0}), s2, w2, tol).bad == 1);
}

TEST_CASE("i32 outputs are exact", "[autotune]") {
  HostTensor ref = tensor(DType::i32, {1, -2, 3});
  CHECK(compare(tensor(DType::i32, {1, -2, 3}), ref, ref, Tolerance::of(DType::i32, 1)).bad == 0);
  CHECK(compare(tensor(DType::i32, {1, -2, 4}), ref, ref, Tolerance::of(DType::i32, 1)).bad == 1);
}

TEST_CASE("input modes parse by name", "[autotune]") {
  CHECK(parse_input_mode("random") == InputMode::random);
  CHECK(parse_input_mode("specials") == InputMode::specials);
  CHECK(parse_input_mode("neginf_rows") == InputMode::neginf_rows);
  CHECK(!parse_input_mode("nan"));
}

TEST_CASE("a product of floats may be NaN where the reference is an infinity", "[autotune]") {
  // f32 cumprod of halves with an infinity at 400: the interpreter's f64 prefix is 2^-400
  // there (tiny, not 0), so it stores inf from 400 on; an f32 prefix reached 0 at 150, and
  // 0 x inf is NaN (the GPU's order of folding decides which). Seen on an H200 with NaN and
  // infinities in the inputs (bench/results/2026-11-30-h200-random-shapes).
  Program p = parse_program(
      "kernel cp(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cumprod(x[i, j], j)\n}\n"
      "kernel pr(x: f32[M, N]) -> (y: f32[M]) {\n  y[i] = prod(x[i, j], j)\n}\n"
      "kernel ip(x: i32[M, N]) -> (y: i32[M]) {\n  y[i] = prod(x[i, j], j)\n}\n"
      "kernel cs(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cumsum(x[i, j], j)\n}\n");
  CHECK(folds_float_products(p.kernels[0]));
  CHECK(folds_float_products(p.kernels[1]));
  CHECK_FALSE(folds_float_products(p.kernels[2]));
  CHECK_FALSE(folds_float_products(p.kernels[3]));
  const int64_t n = 500;
  std::vector<HostTensor> params{HostTensor(DType::f32, {1, n}), HostTensor(DType::f32, {1, n})};
  for (int64_t j = 0; j < n; ++j) params[0].set(j, j == 400 ? kInf : 0.5);
  Reference ref = reference_outputs(p.kernels[0], {{"M", 1}, {"N", n}}, params);
  REQUIRE(ref.stored[1].get(399) == 0);
  REQUIRE(ref.stored[1].get(400) == kInf);
  HostTensor got(DType::f32, {1, n});
  float prefix = 1;
  for (int64_t j = 0; j < n; ++j) {
    prefix *= static_cast<float>(params[0].get(j));
    got.set(j, prefix);
  }
  REQUIRE(std::isnan(got.get(400)));
  Tolerance tol = Tolerance::of(DType::f32, n);
  CHECK(compare(got, ref.stored[1], ref.wide[1], tol, ref.scale[1]).bad == n - 400);
  tol.nan_for_inf = true;
  CHECK(compare(got, ref.stored[1], ref.wide[1], tol, ref.scale[1]).bad == 0);
  // Only NaN for an infinity: NaN where the reference is finite, or the other infinity, fails.
  got.set(10, kNaN);
  got.set(450, -kInf);
  CHECK(compare(got, ref.stored[1], ref.wide[1], tol, ref.scale[1]).bad == 2);
}

TEST_CASE("the wide reference is the value before the output's rounding", "[autotune]") {
  // bf16 softmax: stored is wide rounded to bf16; wide sums to 1 per row; a bf16 result
  // rounded to nearest from wide passes, one rounded toward zero fails.
  Program p = parse_program(
      "kernel softmax(x: bf16[M, N]) -> (y: bf16[M, N]) {\n"
      "  mx[i] = max(x[i, j], j)\n  e[i, j] = exp(x[i, j] - mx[i])\n"
      "  s[i] = sum(e[i, j], j)\n  y[i, j] = e[i, j] / s[i]\n}\n");
  const KernelDef& k = p.kernels[0];
  const int64_t m = 4, n = 1000;
  std::vector<HostTensor> params{HostTensor(DType::bf16, {m, n}), HostTensor(DType::bf16, {m, n})};
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> d(-2, 2);
  for (int64_t i = 0; i < m * n; ++i) params[0].set(i, d(rng));
  Reference ref = reference_outputs(k, {{"M", m}, {"N", n}}, params);
  REQUIRE(ref.wide[1].dtype == DType::f32);
  REQUIRE(ref.stored[1].dtype == DType::bf16);
  double row = 0;
  for (int64_t j = 0; j < n; ++j) row += ref.wide[1].get(j);
  CHECK(std::abs(row - 1) < 1e-5);
  HostTensor nearest(DType::bf16, {m, n}), toward_zero(DType::bf16, {m, n});
  for (int64_t i = 0; i < m * n; ++i) {
    CHECK(ref.stored[1].get(i) == bf16_to_f32(f32_to_bf16(float(ref.wide[1].get(i)))));
    nearest.set(i, ref.wide[1].get(i));
    toward_zero.set(i, bf16_toward_zero(float(ref.wide[1].get(i))));
  }
  const Tolerance tol = Tolerance::of(DType::bf16, n);
  CHECK(compare(nearest, ref.stored[1], ref.wide[1], tol, ref.scale[1]).bad == 0);
  CHECK(compare(toward_zero, ref.stored[1], ref.wide[1], tol, ref.scale[1]).bad > m * n / 8);

  // f16 and i32 outputs of one kernel: i32 stays i32, f16 widens.
  Program q = parse_program(
      "kernel mixed(x: f32[M, N], k: i32[N]) -> (y: f32[M, N], q: i32[N], r: f16[N]) {\n"
      "  y[i, j] = x[i, j] * f32(k[j])\n  q[j] = k[j] / 7\n"
      "  r[j] = f16(f32(k[j]) * 0.001 + sqrt(abs(f32(k[j]))))\n}\n");
  std::vector<HostTensor> mp{HostTensor(DType::f32, {2, 3}), HostTensor(DType::i32, {3}),
                             HostTensor(DType::f32, {2, 3}), HostTensor(DType::i32, {3}),
                             HostTensor(DType::f16, {3})};
  for (int64_t i = 0; i < 3; ++i) mp[1].set(i, 100 * (i + 1));
  Reference mr = reference_outputs(q.kernels[0], {{"M", 2}, {"N", 3}}, mp);
  CHECK(mr.wide[3].dtype == DType::i32);
  CHECK(mr.wide[4].dtype == DType::f32);
  CHECK(mr.stored[3].get(2) == 42);
  CHECK(mr.scale[4] > 0);
}

TEST_CASE("an output the kernel also reads keeps its type in the wide reference", "[autotune]") {
  // add_rmsnorm's h = x + r is stored as bf16 and read by y: y's exact value is computed from
  // the stored h, and h's exact value is its stored one (widening it made the interpreter
  // refuse the kernel: "load of 'h' as bf16 but it holds f32").
  Program p = parse_program(
      "kernel k(x: bf16[M, N], r: bf16[M, N]) -> (h: bf16[M, N], y: bf16[M, N]) {\n"
      "  h[i, j] = x[i, j] + r[i, j]\n"
      "  s[i] = sum(h[i, j] * h[i, j], j)\n"
      "  y[i, j] = h[i, j] * rsqrt(s[i] / N + 1e-6)\n}\n");
  const int64_t m = 3, n = 33;
  std::vector<HostTensor> params(4, HostTensor(DType::bf16, {m, n}));
  for (int64_t i = 0; i < m * n; ++i) {
    params[0].set(i, 0.25 * static_cast<double>(i % 7) - 0.5);
    params[1].set(i, 0.125 * static_cast<double>(i % 5));
  }
  Reference ref = reference_outputs(p.kernels[0], {{"M", m}, {"N", n}}, params);
  CHECK(ref.wide[2].dtype == DType::bf16);  // h: read by y, not widened
  CHECK(ref.wide[3].dtype == DType::f32);   // y: widened
  for (int64_t i = 0; i < m * n; ++i) {
    CHECK(ref.wide[2].get(i) == ref.stored[2].get(i));
    CHECK(ref.stored[3].get(i) == bf16_to_f32(f32_to_bf16(float(ref.wide[3].get(i)))));
  }
}

TEST_CASE("a large output is compared in parallel chunks with the serial verdict", "[autotune]") {
  // 3M elements: several chunks of 2^18 (as many threads as the machine has, up to 16). The
  // verdict must be the serial loop's: every bad element counted, and the worst the first
  // element of the largest ratio, wherever the chunk boundaries fall.
  const int64_t n = 3'000'000;
  HostTensor ref(DType::f32, {n}), got(DType::f32, {n});
  for (int64_t i = 0; i < n; ++i) {
    ref.set(i, 1.0 + static_cast<double>(i % 7));
    got.set(i, ref.get(i));
  }
  got.set(10, ref.get(10) * 1.5);
  got.set(2, ref.get(2) + 8);                  // the largest error, in the first chunk
  got.set(2'999'999, ref.get(2'999'999) + 8);  // and its equal, in the last
  got.set(2'999'998, std::numeric_limits<double>::quiet_NaN());
  const Tolerance tol = Tolerance::of(DType::f32, 1);
  Comparison c = compare(got, ref, ref, tol);
  CHECK(c.bad == 4);
  CHECK(c.worst == 2'999'998);  // a NaN where the reference has a number: infinitely wrong
  got.set(2'999'998, ref.get(2'999'998));
  c = compare(got, ref, ref, tol);
  CHECK(c.bad == 3);
  CHECK(c.worst == 2);  // the same error on the same value (3) twice: the first
  CHECK(c.worst_got == Approx(ref.get(2) + 8));
  CHECK(c.max_scaled_err > 0);
}
