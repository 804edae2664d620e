// Runs a row reduction over reduced indices apart (the output's index between them), lowered
// to the host (to_host.py), the way a GPU would (sim_threads.h: a block's threads are fibers
// meeting at its barrier, a warp's at one of their own for every shuffle); blocks run one
// after another over a grid of ceil(C / rows per block), or phase by phase over C x S blocks
// for a split variant (the last phase over C blocks with S in its phase word's high half when
// LEAD, as the runtime launches split.lead_last), with a workspace poisoned with a NaN's bits.
// Its looped and split paths step each point's coordinates and offsets from the point before
// (compiler/lower/reduction_rows.cpp row_groups). The outputs are compared with f64 sums
// within 1e-5 of the sum of the magnitudes (bf16 outputs: their rounding too); channel 0 holds
// a NaN and channel 1 an infinity, which must come out as NaN and infinity. Inputs are random;
// outputs start poisoned. Each input ends (rounded up to 16 bytes) at a page that cannot be
// read and starts a page after another: a read past its end or before its start faults.
//   axes_driver BLOCK ELEMENTS_PER_BLOCK PHASES SLOTS S LEAD N C H W   (-DK=1, 2)
//   axes_driver BLOCK ELEMENTS_PER_BLOCK PHASES SLOTS S LEAD N C L     (-DK=3)
// K=1: channel_sums (examples/spatial_mean.kiln), s[c] = sum(x[n, c, h, w], n, h, w) and
//      q[c] = sum(x[n, c, h, w]^2, n, h, w), f32: runs of H x W elements, N of them apart.
// K=2: diag_sums (examples/reduction_suite.kiln), s[c] = sum(x[n, c, h, w] * t[w, c, h, w],
//      n, h, w), f32: t's reads do not run along the row (element by element).
// K=3: channel_mean_bf16 (examples/spatial_mean.kiln), m[c] = mean(x[n, c, l], n, l), bf16.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "sim_threads.h"

using sim::guarded;
using sim::of_bf16;
using sim::to_bf16;
std::mt19937 rng(11);
float rnd() {
  return std::uniform_real_distribution<float>(-2, 2)(rng);
}

int main(int argc, char** argv) {
  constexpr int shape_args = K == 3 ? 3 : 4;
  if (argc != 7 + shape_args) return 2;
  const int block = atoi(argv[1]);
  const long epb = atol(argv[2]);
  const long phases = atol(argv[3]), slots = atol(argv[4]), S = atol(argv[5]);
  const bool lead = atoi(argv[6]) != 0;
  const long N = atol(argv[7]), C = atol(argv[8]);
  const long H = K == 3 ? 1 : atol(argv[9]), W = atol(argv[argc - 1]);  // K=3: W is L
  if (phases > 0 && (epb != 1 || slots < 1 || S < 1)) return 2;
  const long n = N * C * H * W, R = N * H * W;
  // Where element (n, c, h, w) of x is, and reduced point r of channel c.
  auto at = [&](long i, long c, long h, long w) { return ((i * C + c) * H + h) * W + w; };
  auto point = [&](long c, long r) { return at(r / (H * W), c, r / W % H, r % W); };
  std::vector<double> xv(n);
  for (auto& v : xv) v = rnd();
  if (R > 7) xv[point(0, R / 2)] = NAN;
  if (R > 7 && C > 1) xv[point(1, R / 3)] = INFINITY;
#if K == 3
  uint16_t* x = guarded<uint16_t>(n);
  for (long k = 0; k < n; ++k) x[k] = to_bf16(float(xv[k])), xv[k] = of_bf16(x[k]);
  std::vector<uint16_t> out0(C, to_bf16(-7777.0f));
  extern void kern(uint16_t*, uint16_t*, long, long, long) asm("kern");
  extern void kern_split(uint16_t*, uint16_t*, long, long, long, uint32_t*, long) asm("kern");
  auto call = [&](uint32_t* ws, long p) {
    if (ws)
      kern_split(x, out0.data(), N, C, W, ws, p);
    else
      kern(x, out0.data(), N, C, W);
  };
  auto got = [&](int, long c) { return double(of_bf16(out0[c])); };
  constexpr int outputs = 1;
  auto term = [&](int, long, long e) { return xv[e]; };
#else
  float* x = guarded<float>(n);
  for (long k = 0; k < n; ++k) x[k] = float(xv[k]);
  std::vector<std::vector<float> > out(2, std::vector<float>(C, -1e30f));
  auto got = [&](int o, long c) { return double(out[o][c]); };
#if K == 1
  constexpr int outputs = 2;
  extern void kern(float*, float*, float*, long, long, long, long) asm("kern");
  extern void kern_split(float*, float*, float*, long, long, long, long, uint32_t*,
                         long) asm("kern");
  auto call = [&](uint32_t* ws, long p) {
    if (ws)
      kern_split(x, out[0].data(), out[1].data(), N, C, H, W, ws, p);
    else
      kern(x, out[0].data(), out[1].data(), N, C, H, W);
  };
  auto term = [&](int o, long, long e) { return o == 1 ? xv[e] * xv[e] : xv[e]; };
#else
  constexpr int outputs = 1;
  const long tn = W * C * H * W;  // t[w', c, h, w]
  float* t = guarded<float>(tn);
  for (long k = 0; k < tn; ++k) t[k] = rnd();
  auto t_at = [&](long c, long h, long w) { return ((w * C + c) * H + h) * W + w; };
  extern void kern(float*, float*, float*, long, long, long, long) asm("kern");
  extern void kern_split(float*, float*, float*, long, long, long, long, uint32_t*,
                         long) asm("kern");
  auto call = [&](uint32_t* ws, long p) {
    if (ws)
      kern_split(x, t, out[0].data(), N, C, H, W, ws, p);
    else
      kern(x, t, out[0].data(), N, C, H, W);
  };
  auto term = [&](int, long c, long e) { return xv[e] * t[t_at(c, e / W % H, e % W)]; };
#endif
#endif
  if (phases == 0) {
    launch((C + epb - 1) / epb, block, [&] { call(nullptr, 0); });
  } else {
    std::vector<uint32_t> ws(static_cast<size_t>(C * S * slots), 0x7fc00077u);
    for (long p = 0; p < phases; ++p) {
      const bool last = lead && p == phases - 1;
      launch(last ? C : C * S, block, [&] { call(ws.data(), last ? S << 32 | p : p); });
    }
  }
  long bad = 0;
  for (int o = 0; o < outputs; ++o) {
    for (long c = 0; c < C; ++c) {
      double want = 0, mag = 0;
      for (long r = 0; r < R; ++r) {
        const double v = term(o, c, point(c, r));
        want += v;
        mag += std::fabs(v);
      }
      if (K == 3) want /= R, mag /= R;
      const double g = got(o, c);
      const double tol = 1e-5 * (mag + 1) + (K == 3 ? std::fabs(want) / 256 : 0);
      const bool ok = std::isnan(want)   ? std::isnan(g)
                      : std::isinf(want) ? g == want
                                         : std::fabs(g - want) <= tol;
      if (!ok && bad++ < 5) printf("bad output %d at channel %ld: %g want %g\n", o, c, g, want);
    }
  }
  printf("%s n=%ld bad=%ld\n", bad ? "FAIL" : "ok", n, bad);
  return bad != 0;
}
