// Runs a scan kernel of examples/scan.kiln, lowered to the host (to_host.py), the way a GPU
// would (sim_threads.h: a block's threads are fibers meeting at its barrier, a warp's at one
// of their own for every shuffle); blocks run one after another. A split variant runs its two
// phases over a grid of rows x S blocks (S = 3, or the optional last argument) with a workspace of
// SLOTS words per block, poisoned: its first block takes every tile of a row, so each look-back
// finds every earlier record set. The outputs are compared with a sequential f64 scan: max and min
// exactly (NaN where the reference has NaN), sums within 1e-5 of the sum of the magnitudes so far
// (the kernel adds in another order, in f32). Inputs are random; outputs start poisoned.
//   scan_driver BLOCK ELEMENTS_PER_BLOCK PHASES SLOTS MAXGRID M N [S]   (compiled with -DK=1..4)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "sim_threads.h"

using sim::bits;
using sim::from_bits;
std::mt19937 rng(7);
float rnd() {
  return std::uniform_real_distribution<float>(-2, 2)(rng);
}
int main(int argc, char** argv) {
  if (argc != 8 && argc != 9) return 2;
  const int block = atoi(argv[1]);
  const long epb = atol(argv[2]);
  const int phases = atoi(argv[3]);
  const long slots = atol(argv[4]);
  const int maxgrid = atoi(argv[5]);
  const long M = atol(argv[6]), N = atol(argv[7]);
  const long S = argc == 9 ? atol(argv[8]) : 3;
  const long n = M * N;
  std::vector<float> x(n), w(N), y(n, -1e30f);
  std::vector<uint16_t> m(n, 0xFFFF);
  for (auto& v : x) v = rnd();
  for (auto& v : w) v = rnd();
#if K == 3
  for (long i = 0; i < n; i += 97) x[i] = NAN;  // cummax propagates NaN
#endif
#if K == 2  // cumsum_cols: along i; the rows of the launch are the N columns
  const long rows = N;
#else
  const long rows = M;
#endif
  // Launch: a split variant over rows x S blocks, twice; else the flat grid over the rows.
  auto run = [&](auto call) {
    if (phases > 0) {
      std::vector<int32_t> ws(rows * S * slots, 0x7fc00001);
      for (long p = 0; p < phases; ++p) launch(rows * S, block, [&] { call(ws.data(), p); });
    } else {
      launch(std::min<long>((rows + epb - 1) / epb, maxgrid), block, [&] { call(nullptr, 0); });
    }
  };
#if K == 4  // cumsum_fused(x, w) -> y = s / (j + 1), m = bf16(max(s, 0)), s = cumsum(2x - w)
  extern void kern(float*, float*, float*, uint16_t*, long, long) asm("kern");
  extern void kern_split(float*, float*, float*, uint16_t*, long, long, int32_t*, long) asm("kern");
  run([&](int32_t* ws, long p) {
    if (ws)
      kern_split(x.data(), w.data(), y.data(), m.data(), M, N, ws, p);
    else
      kern(x.data(), w.data(), y.data(), m.data(), M, N);
  });
#else
  extern void kern(float*, float*, long, long) asm("kern");
  extern void kern_split(float*, float*, long, long, int32_t*, long) asm("kern");
  run([&](int32_t* ws, long p) {
    if (ws)
      kern_split(x.data(), y.data(), M, N, ws, p);
    else
      kern(x.data(), y.data(), M, N);
  });
#endif
  long bad = 0;
  const bool along_rows = K != 2;
  const long lines = along_rows ? M : N, len = along_rows ? N : M;
  for (long l = 0; l < lines; ++l) {
    double acc = K == 3 ? -INFINITY : 0, mag = 0;
    for (long k = 0; k < len; ++k) {
      const long at = along_rows ? l * N + k : k * N + l;
      double v = x[at];
#if K == 4
      v = double(x[at] * 2.0f) - w[k];
#endif
      if (K == 3) {
        acc = std::isnan(acc) || std::isnan(v) ? NAN : std::max(acc, v);
      } else {
        acc += v;
      }
      mag += std::fabs(v);
      double want = acc, got = y[at];
#if K == 4
      want = acc / double(k + 1);
      const double mv = from_bits(uint32_t(m[at]) << 16), mw = acc > 0 ? acc : 0;
      if (!(std::fabs(mv - mw) <= mw / 128 + 1e-5 * (mag + 1))) {
        if (bad++ < 5) printf("bad m at %ld,%ld: %g want %g\n", l, k, mv, mw);
      }
#endif
      const bool ok = K == 3 ? (std::isnan(want) ? std::isnan(got) : got == want)
                             : std::fabs(got - want) <= 1e-5 * (mag + 1);
      if (!ok && bad++ < 5) printf("bad y at line %ld, %ld: %g want %g\n", l, k, got, want);
    }
  }
  printf("%s n=%ld bad=%ld\n", bad ? "FAIL" : "ok", n, bad);
  return bad != 0;
}
