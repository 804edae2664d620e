// Runs a kernel of examples/permute.kiln, lowered to the host (to_host.py), the way a GPU
// would (sim_threads.h: a block's threads are fibers meeting at its barrier), blocks run
// one after another over a grid of at most MAXGRID blocks (so that blocks loop over
// tiles), and the output is compared bit for bit with a host reference. Inputs are random;
// outputs start poisoned, so an element never written fails. Exits 1 on any mismatch.
//   driver BLOCK ELEMENTS_PER_BLOCK MAXGRID EXTENTS...      (compiled with -DK=1..9)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "sim_threads.h"
static uint16_t bf16_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return uint16_t((b + 32767 + ((b >> 16) & 1)) >> 16);
}
static float bf16_f(uint16_t h) {
  uint32_t b = uint32_t(h) << 16;
  float f;
  memcpy(&f, &b, 4);
  return f;
}
std::mt19937 rng(7);
float rnd() {
  return std::uniform_real_distribution<float>(-2, 2)(rng);
}
// A Philox 4x32-10 written here from its definition (Salmon et al. 2011; docs/language.md
// gives the counter layout), not the interpreter's: a kernel's numbers must be these. Returns
// the 24-bit integer k of counter `ctr`: the number is k * 2^-24.
[[maybe_unused]] static uint32_t philox_bits(uint64_t seed, uint64_t offset, uint64_t ctr) {
  const uint64_t blk = ctr >> 2;
  uint32_t c[4] = {uint32_t(blk), uint32_t(blk >> 32), uint32_t(offset), uint32_t(offset >> 32)};
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t a = uint64_t(0xD2511F53u) * c[0], b = uint64_t(0xCD9E8D57u) * c[2];
    const uint32_t c0 = uint32_t(b >> 32) ^ c[1] ^ k0, c2 = uint32_t(a >> 32) ^ c[3] ^ k1;
    c[0] = c0, c[1] = uint32_t(b), c[2] = c2, c[3] = uint32_t(a);
    k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
  }
  return c[ctr & 3] >> 8;
}
[[maybe_unused]] constexpr uint64_t kSeed = 0x0123456789ABCDEFull, kOffset = 0xFEDCBA9876543210ull;
int main(int argc, char** argv) {
  if (argc < 5) return 2;
  int block = atoi(argv[1]);
  long epb = atol(argv[2]);
  int maxgrid = atoi(argv[3]);
  std::vector<long> d;
  for (int i = 4; i < argc; ++i) d.push_back(atol(argv[i]));
  long bad = 0, n = 0;
#if K == 1  // transpose_add(x: f32[N, M], z: f32[M, N]) -> y[M, N]; args N M
  extern void kern(float*, float*, float*, long, long) asm("kern");
  long N = d[0], M = d[1];
  n = N * M;
  std::vector<float> x(n), z(n), y(n, -1e30f);
  for (auto& v : x) v = rnd();
  for (auto& v : z) v = rnd();
  long grid = std::min<long>((n + epb - 1) / epb, maxgrid);
  launch(grid, block, [&] { kern(x.data(), z.data(), y.data(), N, M); });
  for (long i = 0; i < M; ++i)
    for (long j = 0; j < N; ++j) {
      float w = x[j * M + i] + z[i * N + j];
      if (memcmp(&w, &y[i * N + j], 4)) {
        if (bad++ < 5) printf("bad y[%ld,%ld] %g want %g\n", i, j, y[i * N + j], w);
      }
    }
#elif K == 2  // transpose_bf16(x: bf16[N, M]) -> y[M, N]
  extern void kern(uint16_t*, uint16_t*, long, long) asm("kern");
  long N = d[0], M = d[1];
  n = N * M;
  std::vector<uint16_t> x(n), y(n, 0xFFFF);
  for (auto& v : x) v = bf16_bits(rnd());
  long grid = std::min<long>((n + epb - 1) / epb, maxgrid);
  launch(grid, block, [&] { kern(x.data(), y.data(), N, M); });
  for (long i = 0; i < M; ++i)
    for (long j = 0; j < N; ++j) {
      if (x[j * M + i] != y[i * N + j]) {
        if (bad++ < 5) printf("bad y[%ld,%ld]\n", i, j);
      }
    }
#elif K == 3  // heads_keys_f32(x: f32[B,S,H,D], bias: f32[H,S]) -> y[B,H,D,S] = x + bias[h,s] + d
  extern void kern(float*, float*, float*, long, long, long, long) asm("kern");
  long B = d[0], S = d[1], H = d[2], D = d[3];
  n = B * S * H * D;
  std::vector<float> x(n), bias(H * S), y(n, -1e30f);
  for (auto& v : x) v = rnd();
  for (auto& v : bias) v = rnd();
  long grid = std::min<long>((n + epb - 1) / epb, maxgrid);
  launch(grid, block, [&] { kern(x.data(), bias.data(), y.data(), B, S, H, D); });
  for (long b = 0; b < B; ++b)
    for (long h = 0; h < H; ++h)
      for (long dd = 0; dd < D; ++dd)
        for (long s = 0; s < S; ++s) {
          float w = (x[((b * S + s) * H + h) * D + dd] + bias[h * S + s]) + float(dd);
          float g = y[((b * H + h) * D + dd) * S + s];
          if (memcmp(&w, &g, 4)) {
            if (bad++ < 5) printf("bad y[%ld,%ld,%ld,%ld] %g want %g\n", b, h, dd, s, g, w);
          }
        }
#elif K == 4  // transpose_cast(x: f32[N, M]) -> y: bf16[M, N] = bf16(x[j,i]*0.5)
  extern void kern(float*, uint16_t*, long, long) asm("kern");
  long N = d[0], M = d[1];
  n = N * M;
  std::vector<float> x(n);
  std::vector<uint16_t> y(n, 0xFFFF);
  for (auto& v : x) v = rnd();
  long grid = std::min<long>((n + epb - 1) / epb, maxgrid);
  launch(grid, block, [&] { kern(x.data(), y.data(), N, M); });
  for (long i = 0; i < M; ++i)
    for (long j = 0; j < N; ++j) {
      if (bf16_bits(x[j * M + i] * 0.5f) != y[i * N + j]) {
        if (bad++ < 5) printf("bad y[%ld,%ld]\n", i, j);
      }
    }
#elif K == 5  // heads_keys(x: bf16[B,S,H,D]) -> y[B,H,D,S]
  extern void kern(uint16_t*, uint16_t*, long, long, long, long) asm("kern");
  long B = d[0], S = d[1], H = d[2], D = d[3];
  n = B * S * H * D;
  std::vector<uint16_t> x(n), y(n, 0xFFFF);
  for (auto& v : x) v = bf16_bits(rnd());
  long grid = std::min<long>((n + epb - 1) / epb, maxgrid);
  launch(grid, block, [&] { kern(x.data(), y.data(), B, S, H, D); });
  for (long b = 0; b < B; ++b)
    for (long h = 0; h < H; ++h)
      for (long dd = 0; dd < D; ++dd)
        for (long s = 0; s < S; ++s)
          if (x[((b * S + s) * H + h) * D + dd] != y[((b * H + h) * D + dd) * S + s]) {
            if (bad++ < 5) printf("bad\n");
          }
#elif K == 6  // add_strided(a: f32[M,N] strided, bias: f32[M,N] strided) -> y; args M N VIEW
  // VIEW 0: both contiguous; 1: a transposed ([N, M] storage), bias a row expanded over M
  // (strides 0, 1); 2: a's rows padded to N + 3, bias a column expanded over N (strides 1, 0).
  extern void kern(float*, float*, float*, long, long, long, long, long, long) asm("kern");
  long M = d[0], N = d[1], view = d[2];
  n = M * N;
  long as0 = N, as1 = 1, bs0 = N, bs1 = 1, an = n, bn = n;
  if (view == 1) as0 = 1, as1 = M, bs0 = 0, bs1 = 1, bn = N;
  if (view == 2) as0 = N + 3, as1 = 1, an = M * (N + 3), bs0 = 1, bs1 = 0, bn = M;
  std::vector<float> a(an), bias(bn), y(n, -1e30f);
  for (auto& v : a) v = rnd();
  for (auto& v : bias) v = rnd();
  long grid = std::min<long>((n + epb - 1) / epb, maxgrid);
  launch(grid, block, [&] { kern(a.data(), bias.data(), y.data(), M, N, as0, as1, bs0, bs1); });
  for (long i = 0; i < M; ++i)
    for (long j = 0; j < N; ++j) {
      float w = a[i * as0 + j * as1] + bias[i * bs0 + j * bs1];
      if (memcmp(&w, &y[i * N + j], 4)) {
        if (bad++ < 5) printf("bad y[%ld,%ld] %g want %g\n", i, j, y[i * N + j], w);
      }
    }
#elif K == 7  // dropout_mask(p, seed, offset) -> mask: u32[M,N], bits: i32[M,N]; args M N
  extern void kern(float, long, long, uint32_t*, int32_t*, long, long) asm("kern");
  long M = d[0], N = d[1];
  n = M * N;
  const float p = 0.3f;
  std::vector<uint32_t> mask(n, 0xDEADBEEF);
  std::vector<int32_t> bits(n, -7);
  long grid = std::min<long>((n + epb - 1) / epb, maxgrid);
  launch(grid, block, [&] { kern(p, long(kSeed), long(kOffset), mask.data(), bits.data(), M, N); });
  for (long e = 0; e < n; ++e) {
    const uint32_t k = philox_bits(kSeed, kOffset, uint64_t(e));
    if (bits[e] != int32_t(k) || mask[e] != uint32_t(float(k) * 0x1p-24f >= p)) {
      if (bad++ < 5) printf("bad [%ld]: bits %d mask %u want %u\n", e, bits[e], mask[e], k);
    }
  }
#elif K == 8  // rand_orderings(p, seed, offset) -> ord: u32[M,N], bits: i32[M,N]; args M N
  // tests/cpu_sim/rand.kiln: rand against p in every order, at values of p on the numbers'
  // steps (the shape's own numbers), between steps (p < 0.5 only: above, f32 has no value
  // between two numbers), at the ends of [0, 1), outside it, infinite and NaN.
  extern void kern(float, long, long, uint32_t*, int32_t*, long, long) asm("kern");
  long M = d[0], N = d[1];
  n = M * N;
  uint32_t lo = 1u << 24, mid = 0;  // the shape's least number, and its largest below 2^23
  for (long e = 0; e < n; ++e) {
    const uint32_t k = philox_bits(kSeed, kOffset, uint64_t(e));
    lo = std::min(lo, k);
    if (k < (1u << 23)) mid = std::max(mid, k);
  }
  const float a = float(lo), b = float(mid);
  const float ps[] = {0.3f,
                      0.0f,
                      -0.0f,
                      1.0f,
                      0.5f,
                      -1.0f,
                      2.0f,
                      a * 0x1p-24f,
                      (a + 0.5f) * 0x1p-24f,
                      (a - 0.5f) * 0x1p-24f,
                      (a + 0.25f) * 0x1p-24f,
                      b * 0x1p-24f,
                      (b + 0.5f) * 0x1p-24f,
                      (b - 0.5f) * 0x1p-24f,
                      0x1p-24f,
                      0x1.8p-24f,
                      1.0f - 0x1p-24f,
                      0x1p-149f,
                      -0x1p-149f,
                      3.4e38f,
                      -3.4e38f,
                      INFINITY,
                      -INFINITY,
                      NAN,
                      0x1p-25f,
                      0.75f};
  for (float p : ps) {
    std::vector<uint32_t> ord(n, 0xDEADBEEF);
    std::vector<int32_t> bits(n, -7);
    long grid = std::min<long>((n + epb - 1) / epb, maxgrid);
    launch(grid, block,
           [&] { kern(p, long(kSeed), long(kOffset), ord.data(), bits.data(), M, N); });
    for (long e = 0; e < n; ++e) {
      const uint32_t k = philox_bits(kSeed, kOffset, uint64_t(e));
      const float r = float(k) * 0x1p-24f;
      const uint32_t want = (r >= p) + 2 * (r > p) + 4 * (r <= p) + 8 * (r < p) + 16 * (p <= r) +
                            32 * (p > r) + 64 * (r >= p * 0.5f + 0.25f);
      if (bits[e] != int32_t(k) || ord[e] != want) {
        if (bad++ < 5) printf("bad [%ld] p=%a: ord %u want %u (k %u)\n", e, p, ord[e], want, k);
      }
    }
  }
#elif K == 9  // rotate3(x: f32[A, B, C]) -> y: f32[C, A, B] = x[a, b, c]; args A B C
  extern void kern(float*, float*, long, long, long) asm("kern");
  long A = d[0], B = d[1], C = d[2];
  n = A * B * C;
  std::vector<float> x(n), y(n, -1e30f);
  for (auto& v : x) v = rnd();
  long grid = std::min<long>((n + epb - 1) / epb, maxgrid);
  launch(grid, block, [&] { kern(x.data(), y.data(), A, B, C); });
  for (long c = 0; c < C; ++c)
    for (long a = 0; a < A; ++a)
      for (long b = 0; b < B; ++b)
        if (memcmp(&x[(a * B + b) * C + c], &y[(c * A + a) * B + b], 4)) {
          if (bad++ < 5) printf("bad y[%ld,%ld,%ld]\n", c, a, b);
        }
#endif
  printf("%s n=%ld bad=%ld\n", bad ? "FAIL" : "ok", n, bad);
  return bad != 0;
}
