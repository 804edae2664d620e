// Runs an outer reduction kernel, lowered to the host (to_host.py), the way a GPU would
// (sim_threads.h: a block's threads are fibers meeting at its barrier, a warp's at one of their
// own for every shuffle); blocks run one after another.
// A split variant runs its phases over a grid of tiles x S blocks with a workspace poisoned
// with NaN; a plain one over at most MAXGRID blocks (the kernel loops over the rest). The
// outputs are compared with f64 column sums within 1e-5 of the sum of the magnitudes; a NaN
// and an infinity in the input must come out as NaN and infinity. Inputs are random; outputs
// start poisoned.
//   outer_driver BLOCK ELEMENTS_PER_BLOCK PHASES MAXGRID S M N      (compiled with -DK=1..2)
//   outer_driver BLOCK ELEMENTS_PER_BLOCK PHASES MAXGRID S B M N    (-DK=3)
//   outer_driver BLOCK ELEMENTS_PER_BLOCK PHASES MAXGRID S B C H W  (-DK=4)
// K=1: colsum (examples/colsum.kiln), s[j] = sum(x[i, j], i), f32.
// K=2: ln_wgrad_bf16 (examples/reduction_suite.kiln), dw[j] = sum(dy * xhat, i), db[j] =
//      sum(dy, i), bf16 inputs, two words per column in a workspace record.
// K=3: mid_mean (examples/reduction_suite.kiln), y[b, j] = mean(x[b, i, j], i), f32: the
//      columns are (b, j), B x N of them, and a thread's may run from one b into the next.
// K=4: sum_bh (examples/spatial_mean.kiln), y[c, w] = sum(x[b, c, h, w], b, h), f32: two
//      reduced indices apart, whose coordinates a chunk steps from its first (step_axes).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "sim_threads.h"

using sim::of_bf16;
using sim::to_bf16;
std::mt19937 rng(7);
float rnd() {
  return std::uniform_real_distribution<float>(-2, 2)(rng);
}
int main(int argc, char** argv) {
  constexpr int shape_args = K == 4 ? 4 : K == 3 ? 3 : 2;
  if (argc != 6 + shape_args) return 2;
  const int block = atoi(argv[1]);
  const long epb = atol(argv[2]);
  const int phases = atoi(argv[3]);
  const long maxgrid = atol(argv[4]), S = atol(argv[5]);
  const long B = K >= 3 ? atol(argv[6]) : 1;
  // K=4: M is C x H, columns C x W, steps B x H (Hs: H; else 1).
  const long Hs = K == 4 ? atol(argv[8]) : 1;
  const long M = K == 4 ? atol(argv[7]) * Hs : atol(argv[argc - 2]), N = atol(argv[argc - 1]);
  const long n = B * M * N;
  const long columns = K == 4 ? M / Hs * N : B * N;  // the reduction's rows
  const long steps = K == 4 ? B * Hs : M;            // the reduced index's
  // Where step i of column j is.
  auto element = [&](long j, long i) {
    if (K == 4) return ((i / Hs) * M + (j / N) * Hs + i % Hs) * N + j % N;
    return (j / N) * M * N + i * N + j % N;
  };
  const long tiles = (columns + epb - 1) / epb;
  // One output per reduction; the reference takes a(i, j) * b(i, j) for the first (b = 1 for
  // K=1) and a(i, j) for the second.
#if K == 1
  constexpr int outputs = 1, slots = 1;
  std::vector<float> x(n);
  for (auto& v : x) v = rnd();
  if (M > 7 && N > 1) {  // a NaN in column 0, an infinity in column 1
    x[5 * N] = NAN;
    x[6 * N + 1] = INFINITY;
  }
  auto a = [&](long i) { return double(x[i]); };
  auto b = [&](long) { return 1.0; };
  extern void kern(float*, float*, long, long) asm("kern");
  extern void kern_split(float*, float*, long, long, int32_t*, long) asm("kern");
#elif K == 3 || K == 4
  constexpr int outputs = 1, slots = 1;
  std::vector<float> x(n);
  for (auto& v : x) v = rnd();
  if (steps > 7 && columns > 1) {  // a NaN in column 0, an infinity in the last
    x[element(0, 5)] = NAN;
    x[element(columns - 1, 6)] = INFINITY;
  }
  auto a = [&](long i) { return double(x[i]); };
  auto b = [&](long) { return 1.0; };
#if K == 3
  extern void kern(float*, float*, long, long, long) asm("kern");
  extern void kern_split(float*, float*, long, long, long, int32_t*, long) asm("kern");
#else
  extern void kern(float*, float*, long, long, long, long) asm("kern");
  extern void kern_split(float*, float*, long, long, long, long, int32_t*, long) asm("kern");
#endif
#else
  constexpr int outputs = 2, slots = 2;
  std::vector<uint16_t> dy(n), xh(n);
  for (auto& v : dy) v = to_bf16(rnd());
  for (auto& v : xh) v = to_bf16(rnd());
  auto a = [&](long i) { return double(of_bf16(dy[i])); };
  auto b = [&](long i) { return double(of_bf16(xh[i])); };
  extern void kern(uint16_t*, uint16_t*, float*, float*, long, long) asm("kern");
  extern void kern_split(uint16_t*, uint16_t*, float*, float*, long, long, int32_t*,
                         long) asm("kern");
#endif
  std::vector<std::vector<float>> out(outputs, std::vector<float>(columns, -1e30f));
  auto call = [&](int32_t* ws, long p) {
#if K == 1
    if (ws)
      kern_split(x.data(), out[0].data(), M, N, ws, p);
    else
      kern(x.data(), out[0].data(), M, N);
#elif K == 3
    if (ws)
      kern_split(x.data(), out[0].data(), B, M, N, ws, p);
    else
      kern(x.data(), out[0].data(), B, M, N);
#elif K == 4
    if (ws)
      kern_split(x.data(), out[0].data(), B, M / Hs, Hs, N, ws, p);
    else
      kern(x.data(), out[0].data(), B, M / Hs, Hs, N);
#else
    if (ws)
      kern_split(dy.data(), xh.data(), out[0].data(), out[1].data(), M, N, ws, p);
    else
      kern(dy.data(), xh.data(), out[0].data(), out[1].data(), M, N);
#endif
  };
  if (phases > 0) {
    std::vector<int32_t> ws(static_cast<size_t>(tiles * S * epb * slots), 0x7fc00001);
    for (long p = 0; p < phases; ++p) launch(tiles * S, block, [&] { call(ws.data(), p); });
  } else {
    launch(std::min(tiles, maxgrid), block, [&] { call(nullptr, 0); });
  }
  long bad = 0;
  for (int o = 0; o < outputs; ++o) {
    for (long j = 0; j < columns; ++j) {
      double want = 0, mag = 0;
      for (long i = 0; i < steps; ++i) {
        const long at = element(j, i);
        const double v = o == 0 ? a(at) * b(at) : a(at);
        want += v;
        mag += std::fabs(v);
      }
      if (K == 3) want /= M, mag /= M;
      const double got = out[o][j];
      const bool ok = std::isnan(want)   ? std::isnan(got)
                      : std::isinf(want) ? got == want
                                         : std::fabs(got - want) <= 1e-5 * (mag + 1);
      if (!ok && bad++ < 5) printf("bad output %d at column %ld: %g want %g\n", o, j, got, want);
    }
  }
  printf("%s n=%ld bad=%ld\n", bad ? "FAIL" : "ok", n, bad);
  return bad != 0;
}
