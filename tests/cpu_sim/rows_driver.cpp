// Runs a row reduction of tests/cpu_sim/rows.kiln, lowered to the host (to_host.py), the way
// a GPU would (sim_threads.h: a block's threads are fibers meeting at its barrier, a warp's at
// one of their own for every shuffle); blocks run one after another over a grid of
// ceil(M / rows per block). The output is compared with an f64 host reference within the
// output type's tolerance; where the reference is NaN (row 1 holds a NaN) the output must be
// NaN. Row 2 holds -inf elements (softmax: zeros). Inputs are random; the output starts
// poisoned (-7777), so an element never written fails. Every tensor ends (rounded up to 16
// bytes) at a page that cannot be read, and starts a page after another: a whole vector read
// past the end or an access before the start faults.
// K = 6 and 7 are examples/strided.kiln's layernorm_strided (bf16) and _f32, whose x is a view
// of LAYOUT: t (transposed: element (i, j) at j x (M + 1) + i), T (transposed, unpadded: at
// j x M + i), p (rows padded to N + 3) or c (contiguous), its strides the entry's last
// arguments. K = 8 is logsumexp_f32 (an output per row).
// A split variant (PHASES > 0, one row per tile) runs its phases in order over M x S blocks with
// a workspace of M x S x SLOTS words poisoned with a NaN's bits; with LEAD 1, the last phase
// over M blocks with S in its phase argument's high word, as the runtime launches a variant with
// split.lead_last (bundle/manifest.h); with LEAD 0 every phase on the full grid, as a runtime
// before lead_last launches one.
//   rows_driver BLOCK ELEMENTS_PER_BLOCK M N [LAYOUT [PHASES SLOTS S LEAD]]
//   (compiled with -DK=1..8: K names the kernel)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "sim_threads.h"

using sim::bits;
using sim::from_bits;
using sim::guarded;
extern "C" float sim_ex2(float x) {
  return exp2f(x);
}
extern "C" float __nv_rsqrtf(float x) {
  return 1.0f / sqrtf(x);
}
extern "C" float __nv_logf(float x) {
  return logf(x);
}

#define SOFTMAX (K <= 2)
#define RMSNORM (K == 5)
#define STRIDED (K == 6 || K == 7)
#define LSE (K == 8)
#if K == 2 || K == 4 || K == 7 || K == 8
using T = float;
static float value(T v) {
  return v;
}
static T store(float f) {
  return f;
}
static const double kTol = 1e-4;
#else
using T = uint16_t;  // bf16
static float value(T v) {
  return from_bits(uint32_t(v) << 16);
}
static T store(float f) {  // round to nearest even
  const uint32_t b = bits(f);
  return static_cast<T>((b + 0x7FFF + ((b >> 16) & 1)) >> 16);
}
static const double kTol = 1.0 / 64;
#endif

int main(int argc, char** argv) {
  if (argc != 5 && !(STRIDED && argc == 6) && argc != 10) return 2;
  const int block = atoi(argv[1]);
  const long epb = atol(argv[2]);
  const long M = atol(argv[3]), N = atol(argv[4]);
  const char layout = argc >= 6 ? argv[5][0] : 'c';
  const long phases = argc == 10 ? atol(argv[6]) : 0, slots = argc == 10 ? atol(argv[7]) : 0;
  const long S = argc == 10 ? atol(argv[8]) : 0;
  const bool lead = argc == 10 && atoi(argv[9]) != 0;
  if (phases > 0 && (epb != 1 || layout != 'c' || slots < 1 || S < 1)) return 2;
  long s0 = N, s1 = 1, span = M * N;  // x's strides and the elements its buffer spans
  if (layout == 't') s0 = 1, s1 = M + 1, span = (N - 1) * (M + 1) + M;
  if (layout == 'T') s0 = 1, s1 = M, span = M * N;
  if (layout == 'p') s0 = N + 3, s1 = 1, span = (M - 1) * (N + 3) + N;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-3, 3);
  const long outputs = LSE ? M : M * N;  // y's elements
  T *x = guarded<T>(span), *w = guarded<T>(N), *b = guarded<T>(N), *y = guarded<T>(outputs);
  for (long k = 0; k < span; ++k) x[k] = store(-9999.0f);  // the gaps: never read
  auto at = [&](long i, long j) -> T& { return x[i * s0 + j * s1]; };
  for (long i = 0; i < M; ++i) {
    for (long j = 0; j < N; ++j) at(i, j) = store(dist(rng));
  }
  for (long k = 0; k < outputs; ++k) y[k] = store(-7777.0f);
  for (long k = 0; k < N; ++k) w[k] = store(dist(rng)), b[k] = store(dist(rng));
  if (M > 1) at(1, N / 2) = store(NAN);
  if (M > 2) {
    for (long j = 0; j < N; j += 3) at(2, j) = store(-INFINITY);
  }
  const long grid = (M + epb - 1) / epb;
  // Launch: a split variant phase by phase (`call(workspace, phase word)`), else the grid.
  [[maybe_unused]] auto run = [&](auto call) {
    if (phases == 0) {
      launch(grid, block, [&] { call(nullptr, 0); });
      return;
    }
    uint32_t* ws = guarded<uint32_t>(M * S * slots);
    for (long k = 0; k < M * S * slots; ++k) ws[k] = 0x7fc00077u;
    for (long p = 0; p < phases; ++p) {
      const bool last = lead && p == phases - 1;
      launch(last ? M : M * S, block, [&] { call(ws, last ? S << 32 | p : p); });
    }
  };
#if SOFTMAX || LSE  // softmax(x) -> y, logsumexp(x) -> y
  extern void kern(T*, T*, long, long) asm("kern");
  extern void kern_split(T*, T*, long, long, uint32_t*, long) asm("kern");
  run([&](uint32_t* ws, long p) {
    if (ws)
      kern_split(x, y, M, N, ws, p);
    else
      kern(x, y, M, N);
  });
#elif STRIDED   // layernorm(x strided, w, b) -> y
  extern void kern(T*, T*, T*, T*, long, long, long, long) asm("kern");
  launch(grid, block, [&] { kern(x, w, b, y, M, N, s0, s1); });
#elif !RMSNORM  // layernorm(x, w, b) -> y
  extern void kern(T*, T*, T*, T*, long, long) asm("kern");
  launch(grid, block, [&] { kern(x, w, b, y, M, N); });
#else           // rmsnorm(x, w) -> y
  extern void kern(T*, T*, T*, long, long) asm("kern");
  launch(grid, block, [&] { kern(x, w, y, M, N); });
#endif
  long bad = 0;
  std::vector<double> want(N);
  std::vector<T> row(N);
  for (long i = 0; i < M; ++i) {
    for (long j = 0; j < N; ++j) row[j] = at(i, j);
#if LSE || SOFTMAX
    double mx = -INFINITY, s = 0;
    bool nan = false;
    for (long j = 0; j < N; ++j) {
      nan |= std::isnan(value(row[j]));
      mx = std::max(mx, double(value(row[j])));
    }
    for (long j = 0; j < N; ++j) s += std::exp(double(value(row[j])) - mx);
#if LSE
    want[0] = nan ? NAN : mx + std::log(s);
#else
    for (long j = 0; j < N; ++j) want[j] = nan ? NAN : std::exp(double(value(row[j])) - mx) / s;
#endif
#else
    double mean = 0, var = 0;
    for (long j = 0; j < N; ++j) mean += value(row[j]);
#if !RMSNORM
    mean /= N;
    for (long j = 0; j < N; ++j) var += (value(row[j]) - mean) * (value(row[j]) - mean);
    var /= N;
    const double scale = 1 / std::sqrt(var + 1e-5);
    for (long j = 0; j < N; ++j) {
      want[j] = (value(row[j]) - mean) * scale * value(w[j]) + value(b[j]);
    }
#else
    for (long j = 0; j < N; ++j) var += double(value(row[j])) * value(row[j]);
    const double scale = 1 / std::sqrt(var / N + 1e-6);
    for (long j = 0; j < N; ++j) want[j] = value(row[j]) * scale * value(w[j]);
#endif
#endif
    for (long j = 0; j < (LSE ? 1 : N); ++j) {
      const double got = value(y[LSE ? i : i * N + j]);
      const bool ok = std::isnan(want[j])
                          ? std::isnan(got)
                          : std::fabs(got - want[j]) <= kTol * (std::fabs(want[j]) + 1);
      if (!ok && bad++ < 5) printf("bad y at %ld,%ld: %g want %g\n", i, j, got, want[j]);
    }
  }
  printf("%s M=%ld N=%ld bad=%ld\n", bad ? "FAIL" : "ok", M, N, bad);
  return bad != 0;
}
