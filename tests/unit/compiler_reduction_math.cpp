// The fused states of looped rows (compiler/reduction_math.h) run on the CPU in float, with
// the same formulas the code generator emits, in a model of a looped row: T threads, each
// updating its state once per chunk of I vectors of V elements (out-of-range elements
// masked; each vector summed, then added to the compensated running sum), then butterfly
// merges within each warp (the lower lane's state first) and an in-order fold of the warps.
// The results are compared with the two-pass algorithm in double. exp is std::exp, not the
// GPU's ex2.approx: these tests measure the states' arithmetic, not exp's accuracy.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compiler/reduction_math.h"
#include "tests/unit/test_support.h"

namespace kiln {
namespace {

using reduction_math::Online;
using reduction_math::Welford;
using testing::FloatMath;

const float kInf = std::numeric_limits<float>::infinity();

// Thread states merged as the row kernel does: butterflies within each warp of 32 (or of T,
// when smaller), lower lane first, which leaves every lane with the same bits; then the warps
// in order.
template <class State, class Merge>
State combine(std::vector<State> st, Merge merge) {
  const size_t T = st.size(), lanes = std::min<size_t>(T, 32);
  for (size_t off = lanes / 2; off >= 1; off /= 2) {
    std::vector<State> next(T);
    for (size_t l = 0; l < T; ++l) {
      size_t partner = l ^ off;
      next[l] = (l & off) ? merge(st[partner], st[l]) : merge(st[l], st[partner]);
    }
    st = next;
  }
  for (size_t w = 0; w < T / lanes; ++w) {
    for (size_t l = 1; l < lanes; ++l) {
      REQUIRE(std::memcmp(&st[w * lanes], &st[w * lanes + l], sizeof(State)) == 0);
    }
  }
  State acc = st[0];
  for (size_t w = 1; w < T / lanes; ++w) acc = merge(acc, st[w * lanes]);
  return acc;
}

// The shape of a looped row: T threads, each taking I vectors of V elements per chunk.
struct Shape {
  size_t T, V, I;
  size_t per_chunk() const { return V * I; }
};

// Calls f(i) for each in-range element of vector v of thread l's part of the chunk at base,
// x[base + (l * I + v) * V + j], j < V (the kernel interleaves the threads' vectors; the
// order within a thread does not matter here).
template <class F>
void each_of_vector(size_t n, const Shape& sh, size_t base, size_t l, size_t v, F&& f) {
  for (size_t j = 0, i = base + (l * sh.I + v) * sh.V; j < sh.V; ++j, ++i) {
    if (i < n) f(i);
  }
}

Online<float> online_row(const std::vector<float>& x, Shape sh) {
  FloatMath a;
  struct Thread {
    Online<float> st{-kInf, 0};
    float c = 0;  // the sum's compensation
  };
  std::vector<Thread> th(sh.T);
  for (size_t base = 0; base < x.size(); base += sh.T * sh.per_chunk()) {
    for (size_t l = 0; l < sh.T; ++l) {
      Thread& t = th[l];
      float m = t.st.m;
      for (size_t v = 0; v < sh.I; ++v) {
        each_of_vector(x.size(), sh, base, l, v, [&](size_t i) { m = a.max(m, x[i]); });
      }
      t.st.s = reduction_math::rescale(a, t.st.s, t.st.m, m);
      t.c = reduction_math::rescale(a, t.c, t.st.m, m);
      t.st.m = m;
      for (size_t v = 0; v < sh.I; ++v) {
        float part = 0;
        each_of_vector(x.size(), sh, base, l, v, [&](size_t i) { part += a.exp(x[i] - m); });
        reduction_math::kahan_add(a, t.st.s, t.c, part);
      }
    }
  }
  std::vector<Online<float>> st;
  for (const Thread& t : th) st.push_back({t.st.m, t.st.s - t.c});
  return combine(st, [&](const Online<float>& p, const Online<float>& q) {
    return reduction_math::merge(a, p, q);
  });
}

Welford<float> welford_row(const std::vector<float>& x, Shape sh) {
  FloatMath a;
  struct Thread {
    Welford<float> st{0, 0, 0};
    float mean_c = 0, m2_c = 0;
  };
  std::vector<Thread> th(sh.T);
  for (size_t base = 0; base < x.size(); base += sh.T * sh.per_chunk()) {
    for (size_t l = 0; l < sh.T; ++l) {
      Thread& t = th[l];
      // The chunk's first value, clamped like the kernel's loads.
      float first = x[std::min(base + l * sh.I * sh.V, x.size() - 1)];
      float k = reduction_math::shift(a, t.st, first);
      float n = 0, s1 = 0, s2 = 0;
      for (size_t v = 0; v < sh.I; ++v) {
        each_of_vector(x.size(), sh, base, l, v, [&](size_t i) {
          float d = x[i] - k;
          n += 1;
          s1 += d;
          s2 += d * d;
        });
      }
      reduction_math::add_shifted_sums(a, t.st, t.mean_c, t.m2_c, n, k, s1, s2);
    }
  }
  std::vector<Welford<float>> st;
  for (const Thread& t : th) st.push_back({t.st.n, t.st.mean - t.mean_c, t.st.m2 - t.m2_c});
  return combine(st, [&](const Welford<float>& p, const Welford<float>& q) {
    return reduction_math::merge(a, p, q);
  });
}

// Two-pass references in double.
double row_max(const std::vector<float>& x) {
  double m = -INFINITY;
  for (float v : x) m = std::isnan(v) || std::isnan(m) ? NAN : std::max<double>(m, v);
  return m;
}

double exp_sum(const std::vector<float>& x) {
  double m = row_max(x), s = 0;
  for (float v : x) s += std::exp(v - m);
  return s;
}

std::pair<double, double> mean_m2(const std::vector<float>& x) {
  double sum = 0, m2 = 0;
  for (float v : x) sum += v;
  double mean = sum / x.size();
  for (float v : x) m2 += (v - mean) * (v - mean);
  return {mean, m2};
}

std::vector<float> normal_row(size_t n, double mean, double stddev, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(mean, stddev);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(d(rng));
  return x;
}

double rel(double got, double want) {
  return std::abs(got - want) / std::max(std::abs(want), 1e-30);
}

// Threads per row and chunk shapes of the row kernels' variants (compiler/config.cpp).
const Shape kShapes[] = {{8, 4, 1}, {32, 4, 4}, {256, 8, 4}, {1024, 4, 2}};

}  // namespace

TEST_CASE("online max+sum matches the two-pass sum", "[compiler][reduction_math]") {
  for (size_t n : {1, 7, 1000, 100003}) {
    for (Shape sh : kShapes) {
      for (double scale : {1.0, 30.0}) {
        std::vector<float> x = normal_row(n, -5, scale, static_cast<unsigned>(n + sh.T));
        INFO("n " << n << " T " << sh.T << " V " << sh.V << " I " << sh.I << " scale " << scale);
        Online<float> r = online_row(x, sh);
        CHECK(r.m == row_max(x));
        CHECK(rel(r.s, exp_sum(x)) < 1e-5);
      }
    }
  }
}

TEST_CASE("online max+sum rescales a row whose max keeps growing", "[compiler][reduction_math]") {
  std::vector<float> x(100000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 1e-3f;
  Online<float> r = online_row(x, {8, 4, 1});  // every chunk raises every thread's max
  CHECK(r.m == x.back());
  CHECK(rel(r.s, exp_sum(x)) < 1e-5);
}

TEST_CASE("online max+sum gives the two-pass result at -inf and NaN",
          "[compiler][reduction_math]") {
  // Elements at -inf before any finite one contribute 0, not exp(-inf - -inf).
  std::vector<float> x(5000, -kInf);
  x[4321] = 2.0f;
  x[4999] = 1.0f;
  Online<float> r = online_row(x, {32, 4, 2});
  CHECK(r.m == 2.0f);
  CHECK(rel(r.s, exp_sum(x)) < 1e-6);
  // A row all at -inf: the two-pass sum is NaN (exp(-inf - -inf)), and so is this one.
  std::fill(x.begin(), x.end(), -kInf);
  r = online_row(x, {32, 4, 2});
  CHECK(r.m == -kInf);
  CHECK(std::isnan(r.s));
  CHECK(std::isnan(exp_sum(x)));
  // Fewer elements than threads: the idle threads' (-inf, 0) change nothing.
  r = online_row({0.5f, -1.0f, 3.0f}, {256, 4, 1});
  CHECK(r.m == 3.0f);
  CHECK(rel(r.s, exp_sum({0.5f, -1.0f, 3.0f})) < 1e-6);
  // A NaN or a +inf anywhere makes the two-pass sum NaN.
  for (float bad : {NAN, kInf}) {
    std::vector<float> y = normal_row(3000, 0, 1, 7);
    y[1234] = bad;
    r = online_row(y, {32, 4, 2});
    CHECK(std::isnan(r.s));
    CHECK(std::isnan(exp_sum(y)));
  }
}

TEST_CASE("Welford's mean and M2 match the two-pass ones", "[compiler][reduction_math]") {
  // |mean| / stddev up to 1000: the shifted sums and Chan's merges lose about that much
  // relative accuracy in M2 at worst, far less than the textbook one-pass formula (its
  // square).
  for (size_t n : {1, 7, 1000, 100003}) {
    for (Shape sh : kShapes) {
      for (double mean : {0.0, 10.0, 1000.0}) {
        std::vector<float> x = normal_row(n, mean, 1.0, static_cast<unsigned>(n * 3 + sh.T));
        INFO("n " << n << " T " << sh.T << " V " << sh.V << " I " << sh.I << " mean " << mean);
        Welford<float> r = welford_row(x, sh);
        auto [want_mean, want_m2] = mean_m2(x);
        CHECK(r.n == n);
        // Relative to the spread (stddev 1) where the mean is near 0, as for any f32 sum.
        CHECK(std::abs(r.mean - want_mean) < 1e-6 * (std::abs(want_mean) + 1));
        CHECK(std::abs(r.n * r.mean - want_mean * n) < 1e-6 * (std::abs(want_mean) + 1) * n);
        if (n > 1) CHECK(rel(r.m2, want_m2) < (mean > 100 ? 1e-4 : 1e-5));
      }
    }
  }
}

TEST_CASE("Welford's mean and M2 are the two-pass ones at +-inf and NaN",
          "[compiler][reduction_math]") {
  // The two-pass mean of a row holding -inf is -inf (+inf for +inf, NaN for both or a NaN);
  // its M2 is NaN ((x - mean)^2 with x - mean = -inf - -inf). The fused state used to give a
  // NaN mean: its update mean + (chunk mean - mean) * w is -inf + inf once the mean is -inf.
  for (Shape sh : kShapes) {
    for (size_t n : {1, 33, 1000, 100003}) {
      for (size_t at : {size_t{0}, n / 2, n - 1}) {
        for (std::vector<float> bad :
             {std::vector<float>{-kInf}, {kInf}, {-kInf, kInf}, {NAN}, {-kInf, -kInf}}) {
          std::vector<float> x = normal_row(n, 1.0, 1.0, static_cast<unsigned>(n + at));
          for (size_t j = 0; j < bad.size(); ++j) x[(at + j * 7) % n] = bad[j];
          INFO("n " << n << " T " << sh.T << " at " << at << " bad " << bad.size() << " "
                    << bad[0]);
          Welford<float> r = welford_row(x, sh);
          auto [want_mean, want_m2] = mean_m2(x);
          if (std::isnan(want_mean)) {
            CHECK(std::isnan(r.mean));
          } else {
            CHECK(r.mean == want_mean);  // +-inf
          }
          CHECK(std::isnan(r.m2));
          CHECK(std::isnan(want_m2));
        }
      }
    }
  }
  // A row all at -inf.
  std::vector<float> x(5000, -kInf);
  CHECK(welford_row(x, {32, 4, 2}).mean == -kInf);
}

TEST_CASE("Welford's M2 of a constant row is exactly 0", "[compiler][reduction_math]") {
  // 3e19 squared overflows f32: merging into an empty state must not compute inf * 0.
  for (float v : {1234.5f, 3e19f}) {
    std::vector<float> x(10007, v);
    Welford<float> r = welford_row(x, {256, 8, 1});
    CHECK(r.mean == v);
    CHECK(r.m2 == 0.0f);
  }
}

TEST_CASE("fused states stay accurate over hundreds of thousands of elements per thread",
          "[compiler][reduction_math]") {
  // The GPU matrix's worst case: 8 threads per row over 3000017 elements, 375003 each in
  // chunks of 16 (23438 updates per thread). Uncompensated, these states drifted to relative
  // errors of 4.0e-6 (online sum), 2.2e-6 (mean) and 7.2e-6 (M2) on this data, and past 1e-5
  // on the GPU; compensated, 3.1e-8, 4.7e-9 and 5.2e-8.
  std::vector<float> x = normal_row(3000017, 3, 1, 11);
  auto [want_mean, want_m2] = mean_m2(x);
  for (Shape sh : {Shape{8, 4, 4}, Shape{8, 8, 2}}) {
    INFO("V " << sh.V << " I " << sh.I);
    Online<float> o = online_row(x, sh);
    CHECK(o.m == row_max(x));
    CHECK(rel(o.s, exp_sum(x)) < 5e-7);
    Welford<float> w = welford_row(x, sh);
    CHECK(w.n == x.size());
    CHECK(rel(w.mean, want_mean) < 2e-7);
    CHECK(rel(w.m2, want_m2) < 5e-7);
  }
}

}  // namespace kiln

namespace kiln {

TEST_CASE("a compensated sum of an infinite term is infinite, as the plain sum is",
          "[compiler][reduction_math]") {
  FloatMath a;
  auto sum = [&](std::vector<float> xs) {
    float s = 0, c = 0;
    for (float x : xs) reduction_math::kahan_add(a, s, c, x);
    return s - c;
  };
  CHECK(sum({1.5f, kInf, 2.0f}) == kInf);
  CHECK(sum({kInf, 1e30f, -3.0f}) == kInf);
  CHECK(sum({-kInf, 7.0f}) == -kInf);
  CHECK(std::isnan(sum({kInf, -kInf, 1.0f})));
  CHECK(std::isnan(sum({1.0f, NAN, 2.0f})));
  // Compensation still works on finite terms: 1 + many tiny values.
  std::vector<float> xs(1 << 20, 1e-8f);
  xs[0] = 1.0f;
  CHECK(std::abs(sum(xs) - (1.0 + 1e-8 * ((1 << 20) - 1))) < 1e-6);
}

}  // namespace kiln
