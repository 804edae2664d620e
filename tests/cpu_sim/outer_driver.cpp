// Runs an outer reduction kernel, lowered to the host (to_host.py), the way a GPU would: each
// block's threads are host threads meeting at a std::barrier for bar.sync, and the 32 threads
// of each warp meet at a barrier of their own for every shuffle; blocks run one after another.
// A split variant runs its phases over a grid of tiles x S blocks with a workspace poisoned
// with NaN; a plain one over at most MAXGRID blocks (the kernel loops over the rest). The
// outputs are compared with f64 column sums within 1e-5 of the sum of the magnitudes; a NaN
// and an infinity in the input must come out as NaN and infinity. Inputs are random; outputs
// start poisoned.
//   outer_driver BLOCK ELEMENTS_PER_BLOCK PHASES MAXGRID S M N      (compiled with -DK=1..2)
// K=1: colsum (examples/colsum.kiln), s[j] = sum(x[i, j], i), f32.
// K=2: ln_wgrad_bf16 (examples/reduction_suite.kiln), dw[j] = sum(dy * xhat, i), db[j] =
//      sum(dy, i), bf16 inputs, two words per column in a workspace record.
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

static thread_local int g_tid, g_ctaid;
static int g_nctaid;
static thread_local std::barrier<>* g_bar;
static thread_local std::barrier<>* g_warp_bar;
static thread_local uint32_t* g_warp_slots;
extern "C" int sim_tid() {
  return g_tid;
}
extern "C" int sim_ctaid() {
  return g_ctaid;
}
extern "C" int sim_nctaid() {
  return g_nctaid;
}
extern "C" void sim_barrier() {
  g_bar->arrive_and_wait();
}
// A shuffle: every lane publishes its value, then reads its source lane's.
static uint32_t shuffle(uint32_t v, int src_lane) {
  const int lane = g_tid % 32;
  g_warp_slots[lane] = v;
  g_warp_bar->arrive_and_wait();
  uint32_t r = g_warp_slots[src_lane & 31];
  g_warp_bar->arrive_and_wait();
  return r;
}
static uint32_t bits(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}
static float from_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}
extern "C" float sim_shfl_bfly_f32(int, float v, int m, int) {
  return from_bits(shuffle(bits(v), (g_tid % 32) ^ m));
}
extern "C" int sim_shfl_bfly_i32(int, int v, int m, int) {
  return static_cast<int>(shuffle(static_cast<uint32_t>(v), (g_tid % 32) ^ m));
}
// Not used by outer kernels; to_host.py declares them.
extern "C" float sim_shfl_up_f32(int, float v, int, int) {
  return v;
}
extern "C" int sim_shfl_up_i32(int, int v, int, int) {
  return v;
}
extern "C" float sim_shfl_idx_f32(int, float v, int, int) {
  return v;
}
extern "C" int sim_shfl_idx_i32(int, int v, int, int) {
  return v;
}
template <class F>
void launch(long grid, int block, F f) {
  g_nctaid = static_cast<int>(grid);
  for (long b = 0; b < grid; ++b) {
    std::barrier<> bar(block);
    const int warps = (block + 31) / 32;
    std::vector<std::unique_ptr<std::barrier<>>> warp_bars;
    for (int w = 0; w < warps; ++w) warp_bars.push_back(std::make_unique<std::barrier<>>(32));
    std::vector<uint32_t> slots(static_cast<size_t>(warps) * 32);
    std::vector<std::thread> ts;
    for (int t = 0; t < block; ++t)
      ts.emplace_back([&, t] {
        g_tid = t;
        g_ctaid = static_cast<int>(b);
        g_bar = &bar;
        g_warp_bar = warp_bars[t / 32].get();
        g_warp_slots = &slots[static_cast<size_t>(t / 32) * 32];
        f();
      });
    for (auto& t : ts) t.join();
  }
}
std::mt19937 rng(7);
float rnd() {
  return std::uniform_real_distribution<float>(-2, 2)(rng);
}
uint16_t to_bf16(float f) {  // round to nearest even (no NaN inputs here)
  const uint32_t b = bits(f);
  return static_cast<uint16_t>((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}
float of_bf16(uint16_t h) {
  return from_bits(uint32_t{h} << 16);
}
int main(int argc, char** argv) {
  if (argc != 8) return 2;
  const int block = atoi(argv[1]);
  const long epb = atol(argv[2]);
  const int phases = atoi(argv[3]);
  const long maxgrid = atol(argv[4]), S = atol(argv[5]);
  const long M = atol(argv[6]), N = atol(argv[7]);
  const long n = M * N;
  const long tiles = (N + epb - 1) / epb;
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
  std::vector<std::vector<float>> out(outputs, std::vector<float>(N, -1e30f));
  auto call = [&](int32_t* ws, long p) {
#if K == 1
    if (ws)
      kern_split(x.data(), out[0].data(), M, N, ws, p);
    else
      kern(x.data(), out[0].data(), M, N);
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
    for (long j = 0; j < N; ++j) {
      double want = 0, mag = 0;
      for (long i = 0; i < M; ++i) {
        const double v = o == 0 ? a(i * N + j) * b(i * N + j) : a(i * N + j);
        want += v;
        mag += std::fabs(v);
      }
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
