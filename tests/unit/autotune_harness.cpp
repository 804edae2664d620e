// The harness's check of a candidate (autotune/harness.h) without a GPU: the runtime runs on
// the fake CUDA driver (tests/fake_driver, whose device memory is host memory), and the
// "kernel" is a lambda that writes the outputs as a kernel would. What is tested is what the
// tuner relies on: a right result passes, an element never written or out of tolerance fails,
// in the first run or only in the second (the two runs are compared once only when their
// bytes are the same). The tuner's check on the GPU (check_fast) must give check()'s verdict
// for every dtype: on the fake driver its comparison kernel never runs, so check() decides;
// on a real GPU (the "[gpu]" case, skipped with a warning where there is no driver) the
// kernel decides every passing candidate.
#include <dlfcn.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <set>

#include "autotune/gpu_check.h"
#include "autotune/harness.h"
#include "autotune/l2_flush.h"
#include "compiler/toolkit.h"
#include "ir/text.h"
#include "runtime/driver.h"

using namespace kiln;

namespace {

// KILN_CUDA_DRIVER names the fake driver while it lives.
struct FakeDriver {
  FakeDriver() { ::setenv("KILN_CUDA_DRIVER", KILN_FAKE_DRIVER, 1); }
  ~FakeDriver() { ::unsetenv("KILN_CUDA_DRIVER"); }
};

}  // namespace

TEST_CASE("a candidate's check catches wrong and unwritten elements in either run",
          "[autotune][harness]") {
  FakeDriver fake;
  Result<std::unique_ptr<Runtime>> rt = Runtime::open();
  INFO(rt.message());
  REQUIRE(rt.ok());
  Program p =
      parse_program("kernel add(x: f32[N], y: f32[N]) -> (z: f32[N]) {\n  z[i] = x[i] + y[i]\n}\n");
  const KernelDef& def = p.kernels.at(0);
  bundle::KernelInfo info;
  info.name = "add";
  info.symbols = {"N"};
  const int64_t n = 1000;
  KernelHarness h(**rt, def, info, {{"N", n}}, /*seed=*/1);
  const Reference ref = h.reference();
  const DriverApi& api = (*rt)->driver();
  const CUdeviceptr z = h.ptrs()[2];

  // Writes `values` to z as a kernel would (the fake driver's memory is the host's).
  auto write = [&](const HostTensor& values, int64_t count) {
    REQUIRE(api.cuMemcpyHtoD(z, values.data(), static_cast<size_t>(count) * 4) == CUDA_SUCCESS);
  };
  HostTensor wrong = ref.stored[2];
  wrong.set(17, wrong.get(17) + 1);

  SECTION("right in both runs") {
    double err = -1;
    CHECK(h.check([&] { write(ref.stored[2], n); }, ref, -1, &err).empty());
    CHECK(err == 0);
  }
  SECTION("the last elements never written") {
    std::vector<std::string> p = h.check([&] { write(ref.stored[2], n - 3); }, ref, -1, nullptr);
    REQUIRE_FALSE(p.empty());
    CHECK(p[0] == "z: 3 elements never written");
  }
  SECTION("one element wrong in both runs") {
    std::vector<std::string> p = h.check([&] { write(wrong, n); }, ref, -1, nullptr);
    REQUIRE(p.size() == 1);
    CHECK_THAT(p[0], Catch::StartsWith("z: 1 of 1000 elements out of tolerance (outputs and "
                                       "scratch poisoned with 0xff); worst element 17 [17]"));
  }
  SECTION("wrong only in the second run, which then is compared in full") {
    int calls = 0;
    std::vector<std::string> p =
        h.check([&] { write(++calls == 1 ? ref.stored[2] : wrong, n); }, ref, -1, nullptr);
    REQUIRE(p.size() == 1);
    CHECK_THAT(p[0], Catch::Contains("poisoned with 0x7f); worst element 17 [17]"));
  }
  SECTION("bitwise: the same bytes, or named") {
    CHECK(h.check_bitwise([&] { write(ref.stored[2], n); }, ref.stored).empty());
    std::vector<std::string> p = h.check_bitwise([&] { write(wrong, n); }, ref.stored);
    REQUIRE(p.size() == 1);
    CHECK(p[0] == "z: not bitwise identical to the reference");
  }
}

TEST_CASE("timing stops after 5 repetitions only for a clearly slower candidate",
          "[autotune][harness]") {
  FakeDriver fake;  // its events measure 1 us per launch
  Result<std::unique_ptr<Runtime>> rt = Runtime::open();
  REQUIRE(rt.ok());
  Program p =
      parse_program("kernel add(x: f32[N], y: f32[N]) -> (z: f32[N]) {\n  z[i] = x[i] + y[i]\n}\n");
  bundle::KernelInfo info;
  info.symbols = {"N"};
  KernelHarness h(**rt, p.kernels.at(0), info, {{"N", 10}}, /*seed=*/1);
  int launches = 0;
  auto fn = [&] { ++launches; };
  Measurement pruned = h.time(fn, 0, /*flush_l2=*/false, /*budget_ms=*/1, /*prune_above_us=*/0.5);
  CHECK(pruned.pruned);
  CHECK(pruned.reps == KernelHarness::kPruneReps);
  CHECK(pruned.fastest_us == Approx(1.0));
  Measurement full = h.time(fn, 0, false, 1, /*prune_above_us=*/1.0);  // 1 us < 1.5 x 1 us
  CHECK_FALSE(full.pruned);
  // Past the first batch: the budget (1 ms of wall time per repetition measured on the host,
  // so fewer under load: 922 once under the sanitizers) sized the rest.
  CHECK(full.reps > KernelHarness::kPruneReps);
  Measurement unpruned = h.time(fn, 0, false, 1);  // no best yet
  CHECK_FALSE(unpruned.pruned);
  CHECK(unpruned.reps > KernelHarness::kPruneReps);
  // Every launch is a warm-up (3, then 13 more: the fake's 1 us each is under 2 ms) or timed.
  CHECK(launches == 3 * 16 + pruned.reps + full.reps + unpruned.reps);
}

TEST_CASE("each timed repetition follows the L2 flush's read of twice the L2",
          "[autotune][harness]") {
  FakeDriver fake;
  ::setenv("KILN_FAKE_CUDA_L2_BYTES", "20971520", 1);  // 20 MiB: the flush reads 40
  Result<std::unique_ptr<Runtime>> rt = Runtime::open();
  ::unsetenv("KILN_FAKE_CUDA_L2_BYTES");
  REQUIRE(rt.ok());
  // The runtime's handle on the fake, shared: what it recorded.
  void* lib = dlopen(KILN_FAKE_DRIVER, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib != nullptr);
  auto reset = reinterpret_cast<void (*)()>(dlsym(lib, "kiln_fake_reset"));
  auto arg_count = reinterpret_cast<void (*)(int)>(dlsym(lib, "kiln_fake_set_arg_count"));
  auto count = reinterpret_cast<int (*)()>(dlsym(lib, "kiln_fake_launch_count"));
  auto launch = reinterpret_cast<const char* (*)(int, unsigned*, unsigned*, unsigned*)>(
      dlsym(lib, "kiln_fake_launch"));
  auto arg = reinterpret_cast<uint64_t (*)(int, int)>(dlsym(lib, "kiln_fake_launch_arg"));
  auto live = reinterpret_cast<int (*)()>(dlsym(lib, "kiln_fake_live_allocations"));
  REQUIRE((reset && arg_count && count && launch && arg && live));
  struct Restore {  // the fake's state as other tests expect it, however this one ends
    void* lib;
    void (*arg_count)(int);
    ~Restore() {
      arg_count(0);
      dlclose(lib);
    }
  } restore{lib, arg_count};
  Program p =
      parse_program("kernel add(x: f32[N], y: f32[N]) -> (z: f32[N]) {\n  z[i] = x[i] + y[i]\n}\n");
  bundle::KernelInfo info;
  info.symbols = {"N"};
  KernelHarness h(**rt, p.kernels.at(0), info, {{"N", 10}}, /*seed=*/1);
  reset();
  arg_count(2);
  int calls = 0;
  Measurement m = h.time([&] { ++calls; }, 20, /*flush_l2=*/true);
  CHECK(m.reps == 20);
  // One read before each call, warm-up included, and nothing else launched.
  REQUIRE(count() == calls);
  for (int i = 0; i < count(); ++i) {
    unsigned grid = 0, block = 0, smem = 0;
    CHECK(std::string(launch(i, &grid, &block, &smem)) == "kiln_l2_flush");
    CHECK(grid * block >= 132 * 2048);  // every SM of an H200 full
    CHECK(arg(i, 1) == (40u << 20) / 16);
  }
  // A driver that cannot load the kernel stops the timing: no other flush is comparable.
  KernelHarness h2(**rt, p.kernels.at(0), info, {{"N", 10}}, /*seed=*/1);
  const int allocations = live();
  ::setenv("KILN_FAKE_CUDA_FAIL", "cuModuleLoadDataEx", 1);
  std::string error;
  try {
    h2.time([] {}, 3, /*flush_l2=*/true);
  } catch (const HarnessError& e) {
    error = e.message;
  }
  ::unsetenv("KILN_FAKE_CUDA_FAIL");
  CHECK_THAT(error, Catch::Contains("loading the L2 flush's kernel"));
  CHECK(live() == allocations);  // the flush's buffer freed
}

TEST_CASE("the L2 flush's kernel assembles for sm_80 and sm_90", "[autotune][harness]") {
  for (const char* arch : {"sm_80", "sm_90"}) {
    Result<Cubin> cubin = assemble_cubin(l2_flush_ptx(), arch);
    if (!cubin.ok() && cubin.message().find("not found") != std::string::npos) {
      WARN("no assembler (" << cubin.message() << "): not tested");
      return;
    }
    INFO(arch << ": " << (cubin.ok() ? cubin->info_log : cubin.message()));
    REQUIRE(cubin.ok());
    CHECK(cubin->spill_bytes == 0);
  }
}

TEST_CASE("timing stops once the median has settled, not before 10 repetitions",
          "[autotune][harness]") {
  // The ~95% interval of the median of n sorted repetitions spans the ranks n/2 -+ 0.98 sqrt(n).
  std::vector<double> flat(10, 5.0);
  CHECK(KernelHarness::settled(flat, 0.01));
  CHECK_FALSE(KernelHarness::settled(flat, 0));                            // no settling asked for
  CHECK_FALSE(KernelHarness::settled(std::vector<double>(9, 5.0), 0.01));  // too few
  // 10 repetitions 5.0 .. 5.9: ranks 1..8 span 5.1 .. 5.8, 14% of the median.
  std::vector<double> spread;
  for (int i = 0; i < 10; ++i) spread.push_back(5.0 + 0.1 * i);
  CHECK_FALSE(KernelHarness::settled(spread, 0.01));
  CHECK(KernelHarness::settled(spread, 0.15));
  // An outlier at each end does not hold it back: the interval leaves the extremes out.
  std::vector<double> outliers(20, 5.0);
  outliers.front() = 1.0;
  outliers.back() = 50.0;
  CHECK(KernelHarness::settled(outliers, 0.01));

  FakeDriver fake;  // its events measure 1 us per launch: settled at the first chance
  Result<std::unique_ptr<Runtime>> rt = Runtime::open();
  REQUIRE(rt.ok());
  Program p =
      parse_program("kernel add(x: f32[N], y: f32[N]) -> (z: f32[N]) {\n  z[i] = x[i] + y[i]\n}\n");
  bundle::KernelInfo info;
  info.symbols = {"N"};
  KernelHarness h(**rt, p.kernels.at(0), info, {{"N", 10}}, /*seed=*/1);
  auto fn = [] {};
  Measurement m = h.time(fn, 0, /*flush_l2=*/false, /*budget_ms=*/1000, 0, /*settle=*/0.01);
  // Repetitions come in a first batch of 5 (the pruning check), then batches of 16.
  CHECK(m.reps == 21);
  CHECK(m.median_us == Approx(1.0));
  Measurement fixed = h.time(fn, 40, false, 1000, 0, 0.01);  // a fixed count settles too
  CHECK(fixed.reps == 21);
  Measurement unsettled = h.time(fn, 40, false, 1000);
  CHECK(unsettled.reps == 40);
}

TEST_CASE("an index input of a gather is filled within its dimension, a few out of range",
          "[autotune][harness][gather]") {
  FakeDriver fake;
  Result<std::unique_ptr<Runtime>> rt = Runtime::open();
  INFO(rt.message());
  REQUIRE(rt.ok());
  Program p = parse_program(
      "kernel embedding(ids: i64[T], w: bf16[V, D]) -> (y: bf16[T, D]) {\n"
      "  y[t, d] = w[ids[t], d]\n}\n");
  bundle::KernelInfo info;
  info.name = "embedding";
  info.symbols = {"T", "V", "D"};
  const int64_t T = 6400, V = 37;
  KernelHarness h(**rt, p.kernels.at(0), info, {{"T", T}, {"V", V}, {"D", 2}}, /*seed=*/1);
  std::vector<int64_t> ids(T);
  REQUIRE((*rt)->driver().cuMemcpyDtoH(ids.data(), h.ptrs()[0], T * 8) == CUDA_SUCCESS);
  std::set<int64_t> rows;
  int64_t out = 0;
  for (int64_t v : ids) {
    if (v >= 0 && v < V) {
      rows.insert(v);
    } else {
      ++out;
    }
  }
  CHECK(rows.size() == static_cast<size_t>(V));  // every row of the table is looked up
  CHECK(out > 0);                                // and the clamp is exercised
  CHECK(out < T / 20);                           // by few elements (1 in 64 expected)
  // The reference reads the rows the ids name (clamped).
  const Reference ref = h.reference();
  CHECK(ref.stored[2].numel() == T * 2);
}

namespace {

// check_fast against check() on outputs of every dtype the comparator knows, with `rt` a
// fake or a real driver. `real`: the comparison kernel runs, and must decide every pass.
void check_fast_agrees(Runtime& rt, bool real) {
  Program p = parse_program(
      "kernel k(x: f32[N]) -> (a: f32[N], b: bf16[N], c: f16[N], d: i32[N], e: i64[N], "
      "u: u32[N]) {\n"
      "  a[i] = x[i] * 3.0\n  b[i] = x[i] * 3.0\n  c[i] = x[i] * 3.0\n"
      "  d[i] = i32(x[i] * 1000.0)\n  e[i] = i64(x[i] * 1000.0) * i64(1000003)\n"
      "  u[i] = u32(x[i] * 1000.0 + 5000.0)\n}\n");
  const KernelDef& def = p.kernels.at(0);
  bundle::KernelInfo info;
  info.name = "k";
  info.symbols = {"N"};
  const int64_t n = 4097;
  KernelHarness h(rt, def, info, {{"N", n}}, /*seed=*/3);
  const Reference ref = h.reference();
  const DriverApi& api = rt.driver();
  GpuComparator cmp(rt);
  REQUIRE(cmp.ok());  // the fake loads it too (and never runs it)
  const std::vector<HostTensor> right(ref.stored.begin(), ref.stored.end());
  // Writes `outs` (one per parameter; the input is left alone) as a kernel would, in stream
  // order after the poison.
  auto write = [&](const std::vector<HostTensor>& outs) {
    for (size_t i = 1; i < outs.size(); ++i) {
      REQUIRE(api.cuMemcpyHtoDAsync(h.ptrs()[i], outs[i].data(), outs[i].bytes.size(),
                                    h.stream()) == CUDA_SUCCESS);
    }
  };
  // check_fast's verdict, which must be check()'s, and whether the GPU gave it.
  auto both = [&](const std::function<void()>& launch) {
    const int fast = h.fast_verdicts();
    std::vector<std::string> got = h.check_fast(cmp, launch, ref);
    CHECK(got == h.check(launch, ref, -1, nullptr));
    return std::pair{got, h.fast_verdicts() - fast};
  };

  auto [ok, ok_fast] = both([&] { write(right); });
  CHECK(ok.empty());
  CHECK(ok_fast == (real ? 1 : 0));

  // Within tolerance: the f32 output one ulp away (a half output's next value is a whole ulp
  // of its type from the exact value, past the half ulp its rounding allows).
  std::vector<HostTensor> near = right;
  uint32_t bits = 0;
  std::memcpy(&bits, near[1].bytes.data() + 4 * 8, 4);
  ++bits;
  std::memcpy(near[1].bytes.data() + 4 * 8, &bits, 4);
  auto [close, close_fast] = both([&] { write(near); });
  INFO((close.empty() ? "" : close[0]));
  CHECK(close.empty());
  CHECK(close_fast == (real ? 1 : 0));

  // Out of tolerance, one output at a time.
  for (int o = 1; o <= 6; ++o) {
    INFO("output " << o);
    std::vector<HostTensor> wrong = right;
    wrong[o].set(4000, wrong[o].get(4000) + 2);
    auto [bad, bad_fast] = both([&] { write(wrong); });
    REQUIRE(bad.size() == 1);
    CHECK_THAT(bad[0], Catch::Contains("1 of 4097 elements out of tolerance"));
    CHECK(bad_fast == 0);
  }
  // NaN where the reference is finite.
  std::vector<HostTensor> nan = right;
  nan[2].set(5, std::numeric_limits<double>::quiet_NaN());
  auto [nan_bad, nan_fast] = both([&] { write(nan); });
  CHECK(nan_bad.size() == 1);
  CHECK(nan_fast == 0);
  // An element never written: it holds each run's poison.
  int calls = 0;
  auto [unwritten, unwritten_fast] = both([&] {
    std::vector<HostTensor> w = right;
    std::memset(w[5].bytes.data() + 8 * 4096, ++calls % 2 == 1 ? 0xFF : 0x7F, 8);
    write(w);
  });
  REQUIRE_FALSE(unwritten.empty());
  CHECK(unwritten[0] == "e: 1 elements never written");
  CHECK(unwritten_fast == 0);
}

}  // namespace

TEST_CASE("the tuner's check on the GPU gives check()'s verdict (fake driver: check decides)",
          "[autotune][harness]") {
  FakeDriver fake;
  Result<std::unique_ptr<Runtime>> rt = Runtime::open();
  REQUIRE(rt.ok());
  check_fast_agrees(**rt, /*real=*/false);
}

TEST_CASE("the tuner's check on the GPU gives check()'s verdict (a real GPU decides)",
          "[autotune][harness][gpu]") {
  Result<std::unique_ptr<Runtime>> rt = Runtime::open();
  if (!rt.ok()) {
    WARN("skipped: no GPU here (" << rt.message() << "); tests/gpu/device_run.sh runs it");
    return;
  }
  check_fast_agrees(**rt, /*real=*/true);
}

TEST_CASE("scalars are drawn in their ranges or given, and passed by value",
          "[autotune][harness][scalars]") {
  FakeDriver fake;
  Result<std::unique_ptr<Runtime>> rt = Runtime::open();
  INFO(rt.message());
  REQUIRE(rt.ok());
  Program p = parse_program(
      "kernel k(x: f32[N], p: f32, seed: i64, n: i32, h: bf16) -> (y: f32[N]) {\n"
      "  y[i] = x[i] * f32(rand(seed, 0) >= p) + f32(n) + h\n}\n");
  bundle::KernelInfo info;
  info.name = "k";
  info.symbols = {"N"};
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    KernelHarness h(**rt, p.kernels.at(0), info, {{"N", 5}}, seed);
    const std::span<const CUdeviceptr> slots = h.ptrs();
    float pv = 0;
    const auto pbits = static_cast<uint32_t>(slots[1]);
    std::memcpy(&pv, &pbits, 4);
    CHECK(slots[1] >> 32 == 0);
    CHECK(pv >= 0.125f);
    CHECK(pv < 0.875f);
    CHECK(slots[2] != 0);
    CHECK(static_cast<int64_t>(slots[3]) >= 1);
    CHECK(static_cast<int64_t>(slots[3]) <= 1000);
    CHECK(slots[4] >> 16 == 0);
    // The reference reads the same values: its scalar tensors hold the slots' bits.
    const Reference ref = h.reference();
    CHECK(scalar_slot(ref.stored[1]) == slots[1]);
    CHECK(scalar_slot(ref.stored[2]) == slots[2]);
  }
  // Given values, parsed in the scalar's type.
  KernelHarness g(**rt, p.kernels.at(0), info, {{"N", 5}}, 1, InputMode::random,
                  {{"p", "0.5"}, {"seed", "-2"}, {"n", "-7"}, {"h", "1.5"}});
  CHECK(g.ptrs()[1] == 0x3f000000u);
  CHECK(g.ptrs()[2] == ~uint64_t{1});  // -2 as 64 bits
  CHECK(g.ptrs()[3] == 0xfffffff9u);
  CHECK(g.ptrs()[4] == 0x3fc0u);
  // Text that is not a value of the type says which scalar.
  HostTensor t(DType::i32, {});
  std::mt19937_64 rng(1);
  CHECK_THROWS_AS(fill_scalar(t, rng, "n", "1.5"), HarnessError);
  CHECK_THROWS_AS(fill_scalar(t, rng, "n", "3000000000"), HarnessError);
  HostTensor f(DType::f32, {});
  CHECK_THROWS_AS(fill_scalar(f, rng, "p", "x"), HarnessError);
  try {
    fill_scalar(f, rng, "p", "0.5x");
  } catch (const HarnessError& e) {
    CHECK(e.message == "scalar 'p': '0.5x' is not a value of type f32");
  }
}

TEST_CASE("strided inputs are laid out as views of the reference's values, padding NaN",
          "[autotune][harness][strided]") {
  CHECK(default_view_strides({7, 33}) == std::vector<int64_t>{1, 8});     // transposed, padded
  CHECK(default_view_strides({7, 33}, 1) == std::vector<int64_t>{0, 1});  // a row expanded
  CHECK(default_view_strides({2, 3, 4}) == std::vector<int64_t>{1, 3, 9});
  CHECK(default_view_strides({5}) == std::vector<int64_t>{2});
  CHECK(default_view_strides({5}, 1) == std::vector<int64_t>{0});
  CHECK(view_footprint({7, 33}, {1, 8}) == 6 + 32 * 8 + 1);
  CHECK(view_footprint({7, 33}, {0, 1}) == 33);

  FakeDriver fake;
  Result<std::unique_ptr<Runtime>> rt = Runtime::open();
  INFO(rt.message());
  REQUIRE(rt.ok());
  Program p = parse_program(
      "kernel k(a: f32[M, N] strided, b: f32[M, N] strided, c: f32[N]) -> (y: f32[M, N]) {\n"
      "  y[i, j] = a[i, j] + b[i, j] + c[j]\n}\n");
  bundle::KernelInfo info;
  info.name = "k";
  info.symbols = {"M", "N"};
  const int64_t M = 7, N = 33;
  KernelHarness h(**rt, p.kernels.at(0), info, {{"M", M}, {"N", N}}, /*seed=*/1);
  CHECK_FALSE(h.contiguous_views());
  CHECK(std::vector<int64_t>(h.strides().begin(), h.strides().end()) ==
        std::vector<int64_t>{1, M + 1, 0, 1});
  const Reference ref = h.reference();
  const DriverApi& api = (*rt)->driver();
  // a: element (i, j) at i + j * (M + 1); the padding (index M of each column) NaN bytes.
  std::vector<float> a(static_cast<size_t>(view_footprint({M, N}, {1, M + 1})));
  REQUIRE(api.cuMemcpyDtoH(a.data(), h.ptrs()[0], a.size() * 4) == CUDA_SUCCESS);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      CHECK(a[static_cast<size_t>(i + j * (M + 1))] == ref.stored[0].get(i * N + j));
    }
  }
  CHECK(std::isnan(a[static_cast<size_t>(M)]));
  // b expanded: one row of N values, which the reference holds in every row.
  std::vector<float> b(static_cast<size_t>(N));
  REQUIRE(api.cuMemcpyDtoH(b.data(), h.ptrs()[1], b.size() * 4) == CUDA_SUCCESS);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j)
      CHECK(b[static_cast<size_t>(j)] == ref.stored[1].get(i * N + j));
  }
  // Given strides, or contiguous ones (tune), are taken as they are.
  KernelHarness g(**rt, p.kernels.at(0), info, {{"M", M}, {"N", N}}, 1, InputMode::random, {},
                  {{"a", {N + 3, 1}}, {"b", {}}});
  CHECK(std::vector<int64_t>(g.strides().begin(), g.strides().end()) ==
        std::vector<int64_t>{N + 3, 1, N, 1});
  CHECK_FALSE(g.contiguous_views());
  KernelHarness t(**rt, p.kernels.at(0), info, {{"M", M}, {"N", N}}, 1, InputMode::random, {}, {},
                  /*contiguous_views=*/true);
  CHECK(t.contiguous_views());
  CHECK(std::vector<int64_t>(t.strides().begin(), t.strides().end()) ==
        std::vector<int64_t>{N, 1, N, 1});
  CHECK_THROWS_AS(KernelHarness(**rt, p.kernels.at(0), info, {{"M", M}, {"N", N}}, 1,
                                InputMode::random, {}, {{"a", {1}}}),
                  HarnessError);
}
