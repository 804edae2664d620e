// Host-side tests of the runtime's launch path, with no GPU: the runtime loads the fake driver
// (tests/fake_driver/fake_cuda.cpp) through KILN_CUDA_DRIVER, loads real bundles compiled by
// the bundle/* tests, and launches them. Kernels do not run; what is tested is everything the
// runtime does around them: the argument and symbol checks (on every kind of step: pointwise,
// row, outer, split, buffered), the variants the heuristic picks, the grids, the buffers and
// split workspaces (allocated, poisoned when asked, freed on every path), the C API, and the
// open failures that are not "no driver".
//
//   kiln_host_launch_tests FAKE_DRIVER BUNDLE_DIR... [-- catch options]
//   kiln_host_launch_tests --record-shapes-child FAKE_DRIVER THREADS BUNDLE_DIR...
//     (a child process of the KILN_RECORD_SHAPES test: launches from THREADS threads)
#define CATCH_CONFIG_RUNNER
#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bundle/cache.h"
#include "bundle/shape_record.h"
#include "runtime/c_api.h"
#include "runtime/driver.h"
#include "runtime/launch.h"
#include "runtime/runtime.h"
#include "runtime/shape_recorder.h"

using namespace kiln;

// Counts the process's operator new calls (the shape recorder's hot path must make none).
// GCC pairs the malloc below with the delete of inlined library code and warns; they match.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
static std::atomic<long> g_allocations{0};
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
// Every form that pairs with these (arrays, nothrow) is replaced too: a sanitizer reports a
// block from one allocator freed by the other.
void* operator new[](size_t n) {
  return operator new(n);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept {
  return operator new(n, t);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace {

std::string g_fake;
std::vector<std::string> g_bundles;

// What the fake driver recorded (its kiln_fake_* functions).
struct Fake {
  void* lib = nullptr;
  template <class F>
  F get(const char* name) {
    void* p = dlsym(lib, name);
    REQUIRE(p != nullptr);
    return reinterpret_cast<F>(p);
  }
  Fake() {
    lib = dlopen(g_fake.c_str(), RTLD_NOW | RTLD_LOCAL);  // the runtime's handle, shared
    REQUIRE(lib != nullptr);
  }
  void reset() { get<void (*)()>("kiln_fake_reset")(); }
  void set_arg_count(int n) { get<void (*)(int)>("kiln_fake_set_arg_count")(n); }
  int launches() { return get<int (*)()>("kiln_fake_launch_count")(); }
  std::string entry(int i, unsigned* grid = nullptr, unsigned* block = nullptr) {
    unsigned g = 0, b = 0, s = 0;
    const char* e = get<const char* (*)(int, unsigned*, unsigned*, unsigned*)>("kiln_fake_launch")(
        i, &g, &b, &s);
    if (grid) *grid = g;
    if (block) *block = b;
    return e;
  }
  uint64_t arg(int i, int a) { return get<uint64_t (*)(int, int)>("kiln_fake_launch_arg")(i, a); }
  unsigned cluster(int i) { return get<unsigned (*)(int)>("kiln_fake_launch_cluster")(i); }
  bool dependent(int i) { return get<int (*)(int)>("kiln_fake_launch_dependent")(i) != 0; }
  int live() { return get<int (*)()>("kiln_fake_live_allocations")(); }
  int memsets() { return get<int (*)()>("kiln_fake_memset_count")(); }
  int memset_byte(int i) { return get<int (*)(int)>("kiln_fake_memset_byte")(i); }
  int pool_allocations() { return get<int (*)()>("kiln_fake_pool_allocations")(); }
  int event_records() { return get<int (*)()>("kiln_fake_event_records")(); }
  int event_waits() { return get<int (*)()>("kiln_fake_event_waits")(); }
  // Device memory (host memory here), as a program using the C API allocates it.
  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    REQUIRE(get<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc_v2")(&p, bytes) == CUDA_SUCCESS);
    return p;
  }
  void release(CUdeviceptr p) { (void)get<CUresult (*)(CUdeviceptr)>("cuMemFree_v2")(p); }
};

// "real" in place of the fake driver's path: the GPU machine's driver, for the tests tagged
// [real] (tests/gpu/device_run.sh runs them on every example's bundle).
bool real_driver() {
  return g_fake == "real";
}

std::unique_ptr<Runtime> open_fake() {
  if (real_driver()) {
    unsetenv("KILN_CUDA_DRIVER");
  } else {
    setenv("KILN_CUDA_DRIVER", g_fake.c_str(), 1);
  }
  auto rt = Runtime::open();
  INFO(rt.message());
  REQUIRE(rt.ok());
  return std::move(rt).value();
}

// Device memory for every parameter of `k` at these symbol values (a scalar's slot holds the
// value 1 of its type instead).
struct Args {
  const Runtime& rt;
  std::vector<CUdeviceptr> ptrs;
  std::vector<bool> scalar;
  Args(const Runtime& rt, const bundle::KernelInfo& k, const std::map<std::string, int64_t>& sym)
      : rt(rt) {
    for (const bundle::ParamInfo& p : k.params) {
      scalar.push_back(p.scalar);
      if (p.scalar) {
        ptrs.push_back(p.dtype == DType::f32    ? 0x3f800000
                       : p.dtype == DType::f16  ? 0x3c00
                       : p.dtype == DType::bf16 ? 0x3f80
                                                : 1);
        continue;
      }
      int64_t n = 1;
      for (const Dim& d : p.shape) n *= d.is_fixed() ? d.value() : sym.at(d.name());
      CUdeviceptr ptr = 0;
      const size_t bytes = static_cast<size_t>(n) * size_of(p.dtype);
      REQUIRE(rt.driver().cuMemAlloc(&ptr, bytes) == CUDA_SUCCESS);
      REQUIRE(rt.driver().cuMemsetD8(ptr, 0, bytes) == CUDA_SUCCESS);
      ptrs.push_back(ptr);
    }
  }
  ~Args() {
    for (size_t i = 0; i < ptrs.size(); ++i) {
      if (!scalar[i]) (void)rt.driver().cuMemFree(ptrs[i]);
    }
  }
};

std::vector<int64_t> values(const bundle::KernelInfo& k, const std::map<std::string, int64_t>& s) {
  std::vector<int64_t> v;
  for (const std::string& name : k.symbols) v.push_back(s.at(name));
  return v;
}

std::string bundle_named(const std::string& name) {
  for (const std::string& b : g_bundles) {
    if (b.size() >= name.size() && b.compare(b.size() - name.size(), name.size(), name) == 0) {
      return b;
    }
  }
  FAIL("no bundle named " << name << " on the command line");
  return {};
}

// The C API's runtime on the fake driver, bundle `bundle` loaded on it, and its kernel `kernel`.
const kiln_kernel* open_c_api(const std::string& bundle, const std::string& kernel,
                              kiln_runtime*& rt, kiln_bundle*& b) {
  setenv("KILN_CUDA_DRIVER", g_fake.c_str(), 1);
  REQUIRE(kiln_runtime_open(0, &rt) == KILN_OK);
  REQUIRE(kiln_bundle_load(rt, bundle_named(bundle).c_str(), &b) == KILN_OK);
  const kiln_kernel* k = kiln_bundle_find(b, kernel.c_str());
  REQUIRE(k != nullptr);
  return k;
}

const bundle::Step& step_of(const Kernel& k, size_t s) {
  return k.info().steps[s];
}

}  // namespace

TEST_CASE("a symbol of 0, -1 or 2^62 is refused on every kernel, naming the symbol",
          "[launch][real]") {
  auto rt = open_fake();
  std::unique_ptr<Fake> fake = real_driver() ? nullptr : std::make_unique<Fake>();
  int kernels = 0;
  for (const std::string& dir : g_bundles) {
    auto b = Bundle::load(*rt, dir);
    REQUIRE(b.ok());
    for (const bundle::KernelInfo& info : (*b)->manifest().kernels) {
      const Kernel* k = (*b)->find(info.name);
      REQUIRE(k != nullptr);
      ++kernels;
      std::map<std::string, int64_t> ok;
      for (const std::string& s : info.symbols) ok[s] = 5;
      // The inputs hold whatever the allocation held: zero them so the good launch reads
      // initialized memory (compute-sanitizer's initcheck runs this on the GPU).
      Args args(*rt, info, ok);
      for (size_t j = 0; j < info.symbols.size(); ++j) {
        for (int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{1} << 62}) {
          INFO(info.name << " " << info.symbols[j] << " = " << bad);
          if (fake) fake->reset();
          const int live = fake ? fake->live() : 0;
          std::vector<int64_t> syms = values(info, ok);
          syms[j] = bad;
          Status s = k->launch(nullptr, args.ptrs, syms);
          REQUIRE_FALSE(s.ok());
          if (bad <= 0) {
            CHECK(s.message() ==
                  fmt::format("{}: symbol {} = {} must be > 0", info.name, info.symbols[j], bad));
          } else {
            CHECK_THAT(s.message(),
                       Catch::Contains(info.symbols[j]) && Catch::Contains("too large"));
          }
          if (fake) CHECK(fake->launches() == 0);
          if (fake) CHECK(fake->live() == live);
          // launch_variants checks the same, before anything else.
          std::vector<int> defaults(info.steps.size());
          for (size_t st = 0; st < defaults.size(); ++st) defaults[st] = k->chosen_variant(st);
          CHECK_FALSE(k->launch_variants(nullptr, args.ptrs, syms, defaults).ok());
          if (fake) CHECK(fake->launches() == 0);
          // choose() is public and reads the symbols too: it must not crash on them.
          std::vector<int> chosen(info.steps.size());
          (void)k->choose(syms, chosen);
        }
      }
      if (fake) fake->reset();
      REQUIRE(k->launch(nullptr, args.ptrs, values(info, ok)).ok());
      if (fake) CHECK(fake->launches() >= static_cast<int>(info.steps.size()));
      // The process and its context live on: the good launch completes.
      REQUIRE(rt->driver().cuCtxSynchronize() == CUDA_SUCCESS);
    }
  }
  INFO("kernels launched: " << kernels);
  CHECK(kernels > 0);
}

TEST_CASE("every kind of step is covered by the bundles given", "[launch]") {
  auto rt = open_fake();
  std::map<std::string, int> kinds;
  for (const std::string& dir : g_bundles) {
    auto b = Bundle::load(*rt, dir);
    REQUIRE(b.ok());
    for (const bundle::KernelInfo& info : (*b)->manifest().kernels) {
      for (const bundle::Step& s : info.steps) {
        const std::string kind(to_string(s.kind));
        ++kinds[kind];
        for (const bundle::Variant& v : s.variants) {
          if (v.split.phases > 0) ++kinds[kind + " split"];
        }
      }
      if (!info.buffers.empty()) ++kinds["buffered"];
    }
  }
  for (const char* kind : {"pointwise", "row_reduction", "outer_reduction", "row_reduction split",
                           "outer_reduction split", "buffered"}) {
    INFO(kind);
    CHECK(kinds[kind] > 0);
  }
}

TEST_CASE("argument checks: counts, null, alignment, overlap", "[launch]") {
  auto rt = open_fake();
  Fake fake;
  auto b = Bundle::load(*rt, bundle_named("add"));
  REQUIRE(b.ok());
  const Kernel& k = *(*b)->find("add");
  const std::map<std::string, int64_t> n{{"N", 1000}};
  Args a(*rt, k.info(), n);
  const std::vector<int64_t> syms = values(k.info(), n);
  fake.reset();

  CHECK(k.launch(nullptr, std::span(a.ptrs).first(2), syms).message() ==
        "add: expected 3 pointers (x, y, z), got 2");
  CHECK(k.launch(nullptr, a.ptrs, {}).message() == "add: expected 1 symbol value (N), got 0");
  std::vector<CUdeviceptr> p = a.ptrs;
  p[1] = 0;
  CHECK(k.launch(nullptr, p, syms).message() == "add: argument 2 (y): null pointer");
  p = a.ptrs;
  p[0] += 2;
  CHECK(k.launch(nullptr, p, syms).message() ==
        "add: argument 1 (x): pointer is not aligned to its 4-byte elements");
  // x and z in one allocation of 2000 elements: z overlapping x by one element, then just
  // past it (y is an allocation of its own, so it overlaps neither).
  CUdeviceptr both = 0;
  REQUIRE(rt->driver().cuMemAlloc(&both, 2000 * 4) == CUDA_SUCCESS);
  p = a.ptrs;
  p[0] = both;
  p[2] = both + 999 * 4;
  CHECK(k.launch(nullptr, p, syms).message() ==
        "add: argument 3 (z) overlaps argument 1 (x); outputs may not alias other arguments");
  p[2] = both + 1000 * 4;
  CHECK(k.launch(nullptr, p, syms).ok());
  CHECK(fake.launches() == 1);
  (void)rt->driver().cuMemFree(both);
}

TEST_CASE("a pointer missing a vector variant's alignment falls back to the scalar variant",
          "[launch]") {
  auto rt = open_fake();
  Fake fake;
  auto b = Bundle::load(*rt, bundle_named("add"));
  REQUIRE(b.ok());
  const Kernel& k = *(*b)->find("add");
  const bundle::Step& step = step_of(k, 0);
  REQUIRE(step.variants[k.chosen_variant(0)].align_bytes == 16);
  const std::map<std::string, int64_t> n{{"N", 4097}};
  Args a(*rt, k.info(), n);
  std::vector<CUdeviceptr> p = a.ptrs;
  p[1] += 4;
  fake.reset();
  REQUIRE(k.launch(nullptr, p, values(k.info(), n)).ok());
  REQUIRE(fake.launches() == 1);
  const std::string entry = fake.entry(0);
  bool scalar = false;
  for (const bundle::Variant& v : step.variants) {
    if (v.entry == entry) scalar = v.align_bytes == 1;
  }
  CHECK(scalar);
  // An explicit choice never falls back.
  const int vec = k.chosen_variant(0);
  Status s = k.launch_variants(nullptr, p, values(k.info(), n), std::span(&vec, 1));
  CHECK_THAT(s.message(), Catch::Contains("needs 16-byte aligned pointers"));
}

TEST_CASE("rows that are not a multiple of a pointwise variant's vectors run its general entry",
          "[launch]") {
  auto rt = open_fake();
  Fake fake;
  auto b = Bundle::load(*rt, bundle_named("embedding"));
  REQUIRE(b.ok());
  const Kernel& k = *(*b)->find("embedding");
  const bundle::Variant& v = step_of(k, 0).variants[static_cast<size_t>(k.chosen_variant(0))];
  REQUIRE(v.general.row_multiple == v.config.at("vec"));
  REQUIRE(v.general.row_multiple > 1);
  REQUIRE(v.general.entry == v.entry + "_general");
  // Rows of whole vectors run the variant's entry, the others its general entry, with the same
  // grid; an explicit choice of the variant does the same.
  const int64_t vec = v.general.row_multiple;
  for (const auto& [d, entry] : {std::pair{vec * 64, v.entry},
                                 {vec * 64 + 1, v.general.entry},
                                 {vec - 1, v.general.entry},
                                 {vec, v.entry}}) {
    const std::map<std::string, int64_t> n{{"T", 3}, {"V", 5}, {"D", d}};
    Args a(*rt, k.info(), n);
    fake.reset();
    REQUIRE(k.launch(nullptr, a.ptrs, values(k.info(), n)).ok());
    REQUIRE(fake.launches() == 1);
    unsigned grid = 0;
    CHECK(fake.entry(0, &grid) == entry);
    CHECK(grid == bundle::ceil_div(3 * d, v.elements_per_block));
    const int chosen = k.chosen_variant(0);
    fake.reset();
    REQUIRE(k.launch_variants(nullptr, a.ptrs, values(k.info(), n), std::span(&chosen, 1)).ok());
    CHECK(fake.entry(0) == entry);
  }
}

TEST_CASE("few, very long rows run the split variant, its workspace is freed", "[launch]") {
  auto rt = open_fake();
  Fake fake;
  auto b = Bundle::load(*rt, bundle_named("rowsum"));
  REQUIRE(b.ok());
  const Kernel& k = *(*b)->find("rowsum");
  const bundle::Step& step = step_of(k, 0);
  struct Case {
    int64_t m, n;
    bool split;
  };
  for (Case c : {Case{2, 3000017, true}, Case{1, 67108864, true}, Case{1000, 1024, false},
                 Case{64, 8192, false}, Case{1, 1, false}}) {
    INFO("M=" << c.m << " N=" << c.n);
    const std::map<std::string, int64_t> sym{{"M", c.m}, {"N", c.n}};
    Args a(*rt, k.info(), sym);
    const int live = fake.live();
    const int kept = rt->cached_scratch().first;
    fake.reset();
    fake.set_arg_count(6);  // x, s, M, N, then a split's workspace and phase
    REQUIRE(k.launch(nullptr, a.ptrs, values(k.info(), sym)).ok());
    REQUIRE(fake.launches() >= 1);
    const std::string entry = fake.entry(0);
    const bundle::Variant* ran = nullptr;
    for (const bundle::Variant& v : step.variants) {
      if (v.entry == entry) ran = &v;
    }
    REQUIRE(ran != nullptr);
    CHECK((ran->split.phases > 0) == c.split);
    CHECK(fake.launches() == (c.split ? ran->split.phases : 1));
    if (c.split) {
      // A plain sum's last phase only stores: it runs one block per row (split.lead_last),
      // S, the blocks per row of the first, in its phase argument's high word.
      REQUIRE(ran->split.lead_last);
      REQUIRE(ran->split.phases == 2);
      unsigned walk = 0, last = 0;
      fake.entry(0, &walk);
      CHECK(fake.entry(1, &last) == entry);
      CHECK(last == c.m);
      REQUIRE(walk % c.m == 0);
      const uint64_t S = walk / c.m;
      CHECK(S >= bundle::kSplitMinBlocks);
      CHECK(fake.arg(0, 5) == 0);
      CHECK(fake.arg(1, 5) == (S << 32 | 1));
      CHECK(fake.arg(0, 4) == fake.arg(1, 4));  // one workspace
    }
    fake.set_arg_count(0);
    // The pure heuristic says the same as the launch.
    std::vector<bool> loadable(step.variants.size(), true);
    launch::StepRule rule = launch::step_rule(step, loadable, {132, true});
    CHECK(step.variants[launch::heuristic_variant(step, rule, c.m, c.n, {132, true})].entry ==
          entry);
    // The workspace went back, or stays as the stream's scratch.
    CHECK(fake.live() == live + rt->cached_scratch().first - kept);
  }
}

TEST_CASE("a contraction of few tiles and a long K splits K: two phases, maps after them",
          "[launch]") {
  auto rt = open_fake();
  Fake fake;
  auto b = Bundle::load(*rt, bundle_named("scalars"));
  REQUIRE(b.ok());
  const Kernel& k = *(*b)->find("matmul_scaled");
  const bundle::Step& step = step_of(k, 0);
  struct Case {
    int64_t m, n, k, split;  // S, or 0: no split
  };
  // One 128 x 128 tile of 17 x 24: 4096 / 64 = 64 steps, 8 a block at least: S = 8. 24 tiles
  // (1000 x 336): 132 / 24 = 5. K = 960 (15 steps) or 2048 x 2048 (enough tiles): no split.
  // (N a multiple of 8: rows of 16-byte multiples, so the operands' maps can be encoded; else
  // the variant of the same tiles without maps runs, which does not split.)
  for (Case c : {Case{17, 24, 4096, 8}, Case{1000, 336, 1 << 16, 5}, Case{17, 24, 960, 0},
                 Case{2048, 2048, 4096, 0}, Case{17, 17, 4096, 0}}) {
    INFO("M=" << c.m << " N=" << c.n << " K=" << c.k);
    const std::map<std::string, int64_t> sym{{"M", c.m}, {"N", c.n}, {"K", c.k}};
    Args a(*rt, k.info(), sym);
    std::vector<CUdeviceptr> p = a.ptrs;
    p[2] = kiln_scalar_f32(2.0f);
    fake.reset();
    // a, w, scale, c, M, K, N, a split's workspace and phase, two maps and their flag (other
    // variants take fewer: not recorded).
    fake.set_arg_count(c.split > 0 ? 12 : 0);
    REQUIRE(k.launch(nullptr, p, values(k.info(), sym)).ok());
    const std::string entry = fake.entry(0);
    const bundle::Variant* ran = nullptr;
    for (const bundle::Variant& v : step.variants) {
      if (v.entry == entry) ran = &v;
    }
    REQUIRE(ran != nullptr);
    CHECK((ran->split.phases > 0) == (c.split > 0));
    if (c.split == 0) {
      CHECK(fake.launches() == 1);
      continue;
    }
    REQUIRE(fake.launches() == 2);
    const int64_t tiles = (c.m + 127) / 128 * ((c.n + 127) / 128);
    // Both phases on the grid of S blocks per tile; the kernel takes S from it.
    unsigned first = 0, last = 0;
    fake.entry(0, &first);
    CHECK(fake.entry(1, &last) == entry);
    CHECK(first == tiles * c.split);
    CHECK(last == first);
    CHECK(fake.arg(0, 8) == 0);
    CHECK(fake.arg(1, 8) == 1);
    CHECK(fake.arg(0, 7) == fake.arg(1, 7));  // one workspace
    CHECK(fake.arg(0, 7) != 0);
    CHECK(fake.arg(0, 7) % 16 == 0);  // the records' 16-byte stores
    // The maps' flag last: this fake driver encodes none (bit 0 clear: copies without maps).
    CHECK(fake.arg(0, 11) == 0);
    CHECK(fake.arg(0, 6) == static_cast<uint64_t>(c.n));  // N, the last symbol
  }
  fake.set_arg_count(0);
}

TEST_CASE("a split whose last phase walks the rows launches every phase on the full grid",
          "[launch]") {
  auto rt = open_fake();
  Fake fake;
  auto b = Bundle::load(*rt, bundle_named("softmax"));
  REQUIRE(b.ok());
  const Kernel& k = *(*b)->find("softmax");
  const std::map<std::string, int64_t> sym{{"M", 3}, {"N", 3000017}};
  Args a(*rt, k.info(), sym);
  fake.reset();
  fake.set_arg_count(6);  // x, y, M, N, workspace, phase
  REQUIRE(k.launch(nullptr, a.ptrs, values(k.info(), sym)).ok());
  const std::string entry = fake.entry(0);
  const bundle::Variant* ran = nullptr;
  for (const bundle::Variant& v : step_of(k, 0).variants) {
    if (v.entry == entry) ran = &v;
  }
  REQUIRE(ran != nullptr);
  REQUIRE(ran->split.phases == 3);  // the maximum, the sum, then y = e / s over the row
  CHECK_FALSE(ran->split.lead_last);
  REQUIRE(fake.launches() == 3);
  unsigned first = 0;
  fake.entry(0, &first);
  CHECK(first % 3 == 0);
  CHECK(first / 3 >= bundle::kSplitMinBlocks);
  for (int p = 0; p < 3; ++p) {
    unsigned grid = 0;
    CHECK(fake.entry(p, &grid) == entry);
    CHECK(grid == first);
    CHECK(fake.arg(p, 5) == static_cast<uint64_t>(p));
  }
  fake.set_arg_count(0);
}

TEST_CASE("odd rows run the shifting twin of the tier, tuned for the bucket or not", "[launch]") {
  auto rt = open_fake();
  Fake fake;
  auto b = Bundle::load(*rt, bundle_named("rowsum"));
  REQUIRE(b.ok());
  Kernel& k = *(*b)->find("rowsum");
  const bundle::Step& step = step_of(k, 0);
  auto ran = [&](int64_t m, int64_t n) -> const bundle::Variant& {
    const std::map<std::string, int64_t> sym{{"M", m}, {"N", n}};
    Args a(*rt, k.info(), sym);
    fake.reset();
    REQUIRE(k.launch(nullptr, a.ptrs, values(k.info(), sym)).ok());
    REQUIRE(fake.launches() == 1);
    for (const bundle::Variant& v : step.variants) {
      if (v.entry == fake.entry(0)) return v;
    }
    FAIL("no variant ran");
    return step.variants[0];
  };
  // The heuristic: rows of 1024 f32 run a tier, rows of 1001 its twin.
  const bundle::Variant& tier = ran(4000, 1024);
  REQUIRE(tier.odd_rows >= 0);
  CHECK(ran(4000, 1001).id == tier.odd_rows);
  // A winner tuned for the bucket of 4096 x 1024 (another tier than the heuristic's): odd
  // rows of that bucket run its twin, whole vectors the winner itself.
  const bundle::Variant* tuned = nullptr;
  for (const bundle::Variant& v : step.variants) {
    if (v.odd_rows >= 0 && v.id != tier.id && !tuned) tuned = &v;
  }
  REQUIRE(tuned != nullptr);
  const DeviceInfo& d = rt->device();
  cache::Entry e;
  e.key = {k.info().hash,
           0,
           {d.name, d.cc_major, d.cc_minor, d.sm_count},
           d.driver_version,
           KILN_VERSION,
           {{"M", 4096}, {"N", 1024}},
           true};
  e.kernel = "rowsum";
  e.winner.config = tuned->config;
  cache::Cache c;
  c.entries = {e};
  CHECK((*b)->use_cache(c).empty());
  CHECK(ran(4000, 1024).id == tuned->id);
  CHECK(ran(4000, 1001).id == tuned->odd_rows);
  std::vector<int> chosen(1);
  std::string why;
  CHECK(k.choose(values(k.info(), {{"M", 4000}, {"N", 1001}}), chosen, &why) ==
        Kernel::Source::tuned_bucket);
  CHECK(chosen[0] == tuned->odd_rows);
  // Tuned for exactly this shape: the winner runs as tuned.
  e.key.shape = {{"M", 4000}, {"N", 1001}};
  e.key.bucket = false;
  c.entries = {e};
  CHECK((*b)->use_cache(c).empty());
  CHECK(ran(4000, 1001).id == tuned->id);
}

TEST_CASE("buffers and split workspaces share one scratch, poisoned when asked", "[launch]") {
  auto rt = open_fake();
  Fake fake;
  auto b = Bundle::load(*rt, bundle_named("global_max_norm"));
  REQUIRE(b.ok());
  const Kernel& k = *(*b)->find("global_max_norm");
  REQUIRE_FALSE(k.info().buffers.empty());
  // Row maxima into a buffer, their maximum split over blocks through a workspace: both in
  // the one scratch memory, the workspace after the buffers.
  const std::map<std::string, int64_t> sym{{"M", 1000003}, {"N", 3}};
  Args a(*rt, k.info(), sym);
  const bundle::KernelInfo& info = k.info();
  const int np = static_cast<int>(info.params.size()), nb = static_cast<int>(info.buffers.size());
  const int ns = static_cast<int>(info.symbols.size());
  int64_t buffer_bytes = 0;
  for (const bundle::ParamInfo& buf : info.buffers) {
    int64_t n = static_cast<int64_t>(size_of(buf.dtype));
    for (const Dim& d : buf.shape) n *= d.is_fixed() ? d.value() : sym.at(d.name());
    buffer_bytes += (n + bundle::kBufferAlign - 1) / bundle::kBufferAlign * bundle::kBufferAlign;
  }

  const int live = fake.live();
  fake.reset();
  fake.set_arg_count(np + nb + ns + 2);
  REQUIRE(k.launch(nullptr, a.ptrs, values(k.info(), sym)).ok());
  CHECK(fake.memsets() == 0);
  CHECK(fake.pool_allocations() == 1);
  CHECK(fake.live() == live + 1);  // the stream keeps it
  int split_launches = 0;
  for (int i = 0; i < fake.launches(); ++i) {
    const uint64_t workspace = fake.arg(i, np + nb + ns);
    if (workspace == 0) continue;
    ++split_launches;
    CHECK(workspace == fake.arg(i, np) + static_cast<uint64_t>(buffer_bytes));
  }
  CHECK(split_launches >= 2);
  fake.set_arg_count(0);

  rt->set_scratch_poison(0xA5);
  fake.reset();
  REQUIRE(k.launch(nullptr, a.ptrs, values(k.info(), sym)).ok());
  CHECK(fake.pool_allocations() == 0);
  REQUIRE(fake.memsets() >= 2);  // the buffers, and the workspace before each split step
  for (int i = 0; i < fake.memsets(); ++i) CHECK(fake.memset_byte(i) == 0xA5);
  CHECK(fake.live() == live + 1);

  // A failing launch gives the scratch back: the next one reuses it.
  setenv("KILN_FAKE_CUDA_FAIL", "cuLaunchKernel", 1);
  CHECK_FALSE(k.launch(nullptr, a.ptrs, values(k.info(), sym)).ok());
  unsetenv("KILN_FAKE_CUDA_FAIL");
  fake.reset();
  REQUIRE(k.launch(nullptr, a.ptrs, values(k.info(), sym)).ok());
  CHECK(fake.pool_allocations() == 0);
  CHECK(fake.live() == live + 1);
  // So does one whose scratch came from the pool (in capture): freed.
  setenv("KILN_FAKE_CUDA_CAPTURING", "1", 1);
  setenv("KILN_FAKE_CUDA_FAIL", "cuLaunchKernel", 1);
  fake.reset();
  CHECK_FALSE(k.launch(nullptr, a.ptrs, values(k.info(), sym)).ok());
  unsetenv("KILN_FAKE_CUDA_FAIL");
  unsetenv("KILN_FAKE_CUDA_CAPTURING");
  CHECK(fake.pool_allocations() == 1);
  CHECK(fake.live() == live + 1);
  rt->set_scratch_poison(-1);
}

TEST_CASE("a stream keeps its scratch between launches, except in capture; the runtime frees it",
          "[launch]") {
  Fake fake;
  const int before = fake.live();
  {
    auto rt = open_fake();
    auto b = Bundle::load(*rt, bundle_named("global_max_norm"));
    REQUIRE(b.ok());
    const Kernel& k = *(*b)->find("global_max_norm");
    const std::map<std::string, int64_t> small{{"M", 1000003}, {"N", 3}};
    const std::map<std::string, int64_t> large{{"M", 4000037}, {"N", 3}};
    Args a(*rt, k.info(), large);
    const int live = fake.live();
    auto launched = [&](CUstream stream, const std::map<std::string, int64_t>& sym) {
      fake.reset();
      REQUIRE(k.launch(stream, a.ptrs, values(k.info(), sym)).ok());
      return fake.pool_allocations();
    };
    CHECK(launched(nullptr, small) == 1);
    CHECK(launched(nullptr, small) == 0);
    CHECK(rt->cached_scratch().first == 1);
    const size_t kept = rt->cached_scratch().second;
    CHECK(std::has_single_bit(kept));
    // Larger shapes: the scratch grows (the old memory freed in stream order), once.
    CHECK(launched(nullptr, large) == 1);
    CHECK(launched(nullptr, large) == 0);
    CHECK(rt->cached_scratch().second > kept);
    CHECK(fake.live() == live + 1);
    // Smaller again: the grown scratch serves.
    CHECK(launched(nullptr, small) == 0);

    // In graph capture the pool allocates and frees at every launch (the graph's own memory).
    setenv("KILN_FAKE_CUDA_CAPTURING", "1", 1);
    CHECK(launched(nullptr, small) == 1);
    CHECK(launched(nullptr, small) == 1);
    unsetenv("KILN_FAKE_CUDA_CAPTURING");
    CHECK(fake.live() == live + 1);
    // So does a driver that cannot name streams.
    setenv("KILN_FAKE_CUDA_FAIL", "cuStreamGetId", 1);
    CHECK(launched(nullptr, small) == 1);
    unsetenv("KILN_FAKE_CUDA_FAIL");

    // While a launch on the stream holds the scratch (another thread's, whose phases may
    // interleave with this one's in the stream), a launch takes memory of its own.
    {
      Runtime::ScratchLease held;
      REQUIRE(rt->scratch(64, nullptr, held).ok());
      CHECK(held.kept());
      CHECK(launched(nullptr, small) == 1);
      CHECK(fake.live() == live + 1);  // and frees it after
    }
    CHECK(launched(nullptr, small) == 0);
    // Every lease of kept scratch records its stream's event when given back.
    CHECK(fake.event_records() == 1);

    // Every stream its own; past kCachedStreams, a new stream takes the slot given back least
    // recently, its memory freed after that slot's event (its stream may be gone).
    std::vector<CUstream> streams(Runtime::kCachedStreams + 2);
    for (CUstream& s : streams) REQUIRE(rt->driver().cuStreamCreate(&s, 0) == CUDA_SUCCESS);
    int waits = 0;
    for (size_t i = 0; i < streams.size(); ++i) {
      INFO("stream " << i);
      CHECK(launched(streams[i], small) == 1);
      waits += fake.event_waits();
      CHECK(launched(streams[i], small) == 0);
    }
    CHECK(waits == 3);  // the NULL stream's slot, then the first two streams'
    CHECK(rt->cached_scratch().first == Runtime::kCachedStreams);
    CHECK(fake.live() == live + Runtime::kCachedStreams);
    for (CUstream s : streams) (void)rt->driver().cuStreamDestroy(s);

    // An event that cannot be recorded: the slot is never reused (nothing could say when its
    // last launch ended), and launches on its stream take the pool's memory.
    CUstream odd = nullptr;
    REQUIRE(rt->driver().cuStreamCreate(&odd, 0) == CUDA_SUCCESS);
    setenv("KILN_FAKE_CUDA_FAIL", "cuEventRecord", 1);
    CHECK(launched(odd, small) == 1);
    unsetenv("KILN_FAKE_CUDA_FAIL");
    CHECK(launched(odd, small) == 1);
    CHECK(launched(odd, small) == 1);
    (void)rt->driver().cuStreamDestroy(odd);
    CHECK(fake.live() == live + Runtime::kCachedStreams);
  }
  // The runtime closed: every stream's scratch freed but the one whose event was lost.
  CHECK(fake.live() == before + 1);
}

TEST_CASE("kept scratch: trimmed on request, off with KILN_KEEP_SCRATCH=0", "[launch]") {
  Fake fake;
  auto launches = [&](bool keep) {
    if (!keep) setenv("KILN_KEEP_SCRATCH", "0", 1);
    auto rt = open_fake();
    unsetenv("KILN_KEEP_SCRATCH");
    CHECK(rt->keep_scratch() == keep);
    auto b = Bundle::load(*rt, bundle_named("global_max_norm"));
    REQUIRE(b.ok());
    const Kernel& k = *(*b)->find("global_max_norm");
    const std::map<std::string, int64_t> sym{{"M", 1000003}, {"N", 3}};
    Args a(*rt, k.info(), sym);
    const int live = fake.live();
    std::vector<CUstream> streams(3);
    for (CUstream& st : streams) REQUIRE(rt->driver().cuStreamCreate(&st, 0) == CUDA_SUCCESS);
    std::vector<int> allocated;
    auto launch_all = [&] {
      for (CUstream st : streams) {
        fake.reset();
        REQUIRE(k.launch(st, a.ptrs, values(k.info(), sym)).ok());
        allocated.push_back(fake.pool_allocations());
      }
    };
    launch_all();
    launch_all();
    CHECK(fake.live() == live + (keep ? 3 : 0));
    // Trimmed: every stream's memory freed after its last use; the next launches take it anew.
    const size_t kept = rt->cached_scratch().second;
    fake.reset();
    CHECK(rt->trim_scratch() == kept);
    CHECK(fake.event_waits() == (keep ? 3 : 0));
    CHECK(fake.live() == live);
    CHECK(rt->cached_scratch() == std::pair<int, size_t>{0, 0});
    launch_all();
    launch_all();
    CHECK(fake.live() == live + (keep ? 3 : 0));
    for (CUstream st : streams) (void)rt->driver().cuStreamDestroy(st);
    return allocated;
  };
  CHECK(launches(true) == std::vector<int>{1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0});
  CHECK(launches(false) == std::vector<int>(12, 1));
}

TEST_CASE("steps after the first are dependent launches on sm_90, not before", "[launch]") {
  // global_max_norm at these sizes: row maxima, their maximum split over blocks (two phases
  // through a workspace), the division: four kernels.
  const std::map<std::string, int64_t> sym{{"M", 1000003}, {"N", 3}};
  auto launched = [&](bool poison) {
    auto rt = open_fake();
    Fake fake;
    auto b = Bundle::load(*rt, bundle_named("global_max_norm"));
    REQUIRE(b.ok());
    const Kernel& k = *(*b)->find("global_max_norm");
    CHECK(k.info().dependent_launch);
    Args a(*rt, k.info(), sym);
    if (poison) rt->set_scratch_poison(0xA5);
    std::vector<bool> dependent;
    // Off first: the launch with dependent launches on reuses the stream's kept scratch.
    for (bool on : {false, true}) {
      rt->set_dependent_launch(on);
      fake.reset();
      REQUIRE(k.launch(nullptr, a.ptrs, values(k.info(), sym)).ok());
      REQUIRE(fake.launches() == 4);
      for (int i = 0; i < 4; ++i) {
        if (on) dependent.push_back(fake.dependent(i));
        if (!on) CHECK_FALSE(fake.dependent(i));  // turned off: every launch waits in full
      }
    }
    return dependent;
  };
  // The first waits for the stream in full (a launch before it may have used the same
  // scratch); the others, each right after the kernel before it, may start while it runs.
  CHECK(launched(false) == std::vector<bool>{false, true, true, true});
  // A poisoned workspace's memset comes between the first step and the split's first phase.
  CHECK(launched(true) == std::vector<bool>{false, false, true, true});
  // Images for sm_80 have no griddepcontrol: plain launches.
  setenv("KILN_FAKE_CUDA_CC", "8.0", 1);
  const std::vector<bool> ampere = launched(false);
  unsetenv("KILN_FAKE_CUDA_CC");
  CHECK(ampere == std::vector<bool>(4, false));
}

TEST_CASE("the C API refuses bad arguments with a message and keeps the process", "[launch]") {
  Fake fake;
  kiln_runtime* rt = nullptr;
  kiln_bundle* b = nullptr;
  const kiln_kernel* k = open_c_api("rowsum", "rowsum", rt, b);
  CHECK(kiln_bundle_find(b, "nope") == nullptr);
  CHECK(std::string(kiln_last_error()) == "bundle has no kernel 'nope' (its kernels: rowsum)");
  const CUdeviceptr x = fake.alloc(4 * 33 * 7), y = fake.alloc(4 * 33);
  const CUdeviceptr ptrs[] = {x, y};
  for (int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{1} << 62}) {
    const int64_t syms[] = {33, bad};
    CHECK(kiln_launch(k, nullptr, ptrs, 2, syms, 2) == KILN_ERROR);
    CHECK(std::string(kiln_last_error()).find("N") != std::string::npos);
  }
  CHECK(kiln_bundle_use_cache(b, "/nonexistent/cache.json") == KILN_ERROR);
  CHECK(std::string(kiln_last_error()) == "/nonexistent/cache.json: no such cache file");
  const int64_t good[] = {33, 7};
  CHECK(kiln_launch(k, nullptr, ptrs, 2, good, 2) == KILN_OK);
  CHECK(kiln_launch(k, nullptr, ptrs, 1, good, 2) == KILN_ERROR);
  CHECK(kiln_launch(k, nullptr, nullptr, 2, good, 2) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(kiln_launch(nullptr, nullptr, ptrs, 2, good, 2) == KILN_ERROR_INVALID_ARGUMENT);
  // The packed form: the same checks, the same results.
  kiln_launch_args args{k, nullptr, ptrs, 2, good, 2};
  CHECK(kiln_launch_packed(&args) == KILN_OK);
  args.nptrs = 1;
  CHECK(kiln_launch_packed(&args) == KILN_ERROR);
  args.nptrs = 2;
  const int64_t zero[] = {33, 0};
  args.symbols = zero;
  CHECK(kiln_launch_packed(&args) == KILN_ERROR);
  CHECK(std::string(kiln_last_error()).find("N") != std::string::npos);
  CHECK(kiln_launch_packed(nullptr) == KILN_ERROR_INVALID_ARGUMENT);
  fake.release(x);
  fake.release(y);
  CHECK(kiln_bundle_free(b) == KILN_OK);
  CHECK(kiln_runtime_close(rt) == KILN_OK);
}

TEST_CASE("the C API trims and turns off the streams' kept scratch", "[launch]") {
  Fake fake;
  kiln_runtime* rt = nullptr;
  kiln_bundle* b = nullptr;
  const kiln_kernel* k = open_c_api("rowsum", "rowsum", rt, b);
  // Two rows of 3000017: split over blocks, through a workspace the stream keeps.
  const CUdeviceptr x = fake.alloc(4 * 2 * 3000017), y = fake.alloc(4 * 2);
  const CUdeviceptr ptrs[] = {x, y};
  const int64_t syms[] = {2, 3000017};
  int streams = -1;
  size_t bytes = 0;
  CHECK(kiln_runtime_cached_scratch(rt, &streams, &bytes) == KILN_OK);
  CHECK(streams == 0);
  CHECK(bytes == 0);
  const int live = fake.live();
  fake.reset();
  REQUIRE(kiln_launch(k, nullptr, ptrs, 2, syms, 2) == KILN_OK);
  REQUIRE(kiln_launch(k, nullptr, ptrs, 2, syms, 2) == KILN_OK);
  CHECK(fake.pool_allocations() == 1);  // the second launch reuses the first's
  CHECK(kiln_runtime_cached_scratch(rt, &streams, &bytes) == KILN_OK);
  CHECK(streams == 1);
  CHECK(bytes >= 4096);
  CHECK(fake.live() == live + 1);
  size_t freed = 0;
  CHECK(kiln_runtime_trim_scratch(rt, &freed) == KILN_OK);
  CHECK(freed == bytes);
  CHECK(fake.live() == live);
  CHECK(kiln_runtime_cached_scratch(rt, &streams, nullptr) == KILN_OK);
  CHECK(streams == 0);
  CHECK(kiln_runtime_trim_scratch(rt, nullptr) == KILN_OK);  // nothing left: frees nothing
  // Off: every launch takes its scratch from the pool and gives it back.
  CHECK(kiln_runtime_set_keep_scratch(rt, 0) == KILN_OK);
  fake.reset();
  REQUIRE(kiln_launch(k, nullptr, ptrs, 2, syms, 2) == KILN_OK);
  REQUIRE(kiln_launch(k, nullptr, ptrs, 2, syms, 2) == KILN_OK);
  CHECK(fake.pool_allocations() == 2);
  CHECK(fake.live() == live);
  CHECK(kiln_runtime_set_keep_scratch(rt, 1) == KILN_OK);
  fake.reset();
  REQUIRE(kiln_launch(k, nullptr, ptrs, 2, syms, 2) == KILN_OK);
  CHECK(fake.live() == live + 1);
  CHECK(kiln_runtime_trim_scratch(nullptr, &freed) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kiln_last_error()) == "kiln_runtime_trim_scratch: runtime is NULL");
  CHECK(kiln_runtime_set_keep_scratch(nullptr, 1) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(kiln_runtime_cached_scratch(nullptr, &streams, &bytes) == KILN_ERROR_INVALID_ARGUMENT);
  fake.release(x);
  fake.release(y);
  CHECK(kiln_bundle_free(b) == KILN_OK);
  CHECK(kiln_runtime_close(rt) == KILN_OK);
  CHECK(fake.live() == live - 2);  // x and y, and the runtime freed what its stream kept
}

TEST_CASE("scalar parameters are passed by value, through launch and the C API", "[launch]") {
  auto rt = open_fake();
  Fake fake;
  auto b = Bundle::load(*rt, bundle_named("scalars"));
  INFO(b.message());  // the entries' parameter bytes in the cubins agree with the manifest's
  REQUIRE(b.ok());
  const Kernel& k = *(*b)->find("affine_scalars");
  // x: f32[N], c: f32[], a: f32, h: bf16, g: f16, k: i32, n: u32, s: i64 -> y, z, m; N.
  const bundle::KernelInfo& info = k.info();
  REQUIRE(info.params.size() == 11);
  CHECK_FALSE(info.params[0].scalar);
  CHECK_FALSE(info.params[1].scalar);  // a rank-0 tensor keeps its pointer
  for (size_t i = 2; i < 8; ++i) CHECK(info.params[i].scalar);
  const std::map<std::string, int64_t> n{{"N", 1000}};
  Args a(*rt, info, n);
  const std::vector<int64_t> syms = values(info, n);
  std::vector<CUdeviceptr> p = a.ptrs;
  p[2] = kiln_scalar_f32(0.5f);
  p[3] = kiln_scalar_u16(0x4000);  // bf16 2.0
  p[4] = kiln_scalar_u16(0x3400);  // f16 0.25
  p[5] = kiln_scalar_i32(-7);
  p[6] = kiln_scalar_u32(4000000000u);
  p[7] = kiln_scalar_i64(int64_t{-1} << 40);
  fake.reset();
  fake.set_arg_count(12);
  REQUIRE(k.launch(nullptr, p, syms).ok());
  REQUIRE(fake.launches() == 1);
  CHECK(fake.arg(0, 0) == p[0]);
  CHECK(fake.arg(0, 1) == p[1]);
  CHECK(fake.arg(0, 2) == 0x3f000000u);
  CHECK(fake.arg(0, 3) == 0x4000u);
  CHECK(fake.arg(0, 4) == 0x3400u);
  CHECK(fake.arg(0, 5) == 0xfffffff9u);
  CHECK(fake.arg(0, 6) == 4000000000u);
  CHECK(fake.arg(0, 7) == (uint64_t{0xffffff} << 40));
  CHECK(fake.arg(0, 8) == p[8]);
  CHECK(fake.arg(0, 11) == 1000u);
  // A value of 0 is not a null pointer; bits above the scalar's size are refused.
  std::vector<CUdeviceptr> zero = p;
  zero[2] = kiln_scalar_f32(0.0f);
  zero[7] = 0;
  CHECK(k.launch(nullptr, zero, syms).ok());
  std::vector<CUdeviceptr> wide = p;
  wide[2] = (uint64_t{1} << 32) | 0x3f000000u;
  CHECK(k.launch(nullptr, wide, syms).message() ==
        "affine_scalars: argument 3 (a): a f32 scalar's slot holds its 4 bytes, zero-extended; "
        "got 0x13f000000");
  wide = p;
  wide[3] = 0x10000;
  CHECK_THAT(k.launch(nullptr, wide, syms).message(),
             Catch::Contains("argument 4 (h): a bf16 scalar's slot holds its 2 bytes"));
  // An output may overlap no argument, but a scalar's value is no address: an i64 scalar equal
  // to the output's pointer overlaps nothing.
  std::vector<CUdeviceptr> same = p;
  same[7] = p[8];
  CHECK(k.launch(nullptr, same, syms).ok());
  CHECK(fake.launches() == 3);

  // The C API: the same launch, and the parameters described.
  kiln_runtime* crt = nullptr;
  kiln_bundle* cb = nullptr;
  const kiln_kernel* ck = open_c_api("scalars", "affine_scalars", crt, cb);
  int is_scalar = -1;
  size_t rank = 9;
  REQUIRE(kiln_kernel_param_scalar(ck, 1, &is_scalar) == KILN_OK);
  CHECK(is_scalar == 0);
  REQUIRE(kiln_kernel_param(ck, 1, nullptr, nullptr, &rank, nullptr) == KILN_OK);
  CHECK(rank == 0);
  REQUIRE(kiln_kernel_param_scalar(ck, 7, &is_scalar) == KILN_OK);
  CHECK(is_scalar == 1);
  const char* dtype = nullptr;
  REQUIRE(kiln_kernel_param(ck, 7, nullptr, &dtype, &rank, nullptr) == KILN_OK);
  CHECK(std::string(dtype) == "i64");
  CHECK(rank == 0);
  CHECK(kiln_kernel_param_scalar(ck, 11, &is_scalar) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(kiln_kernel_param_scalar(ck, 0, nullptr) == KILN_ERROR_INVALID_ARGUMENT);
  fake.reset();
  fake.set_arg_count(12);
  REQUIRE(kiln_launch(ck, nullptr, p.data(), p.size(), syms.data(), syms.size()) == KILN_OK);
  CHECK(fake.arg(0, 2) == 0x3f000000u);
  CHECK(fake.arg(0, 7) == (uint64_t{0xffffff} << 40));
  CHECK(kiln_launch(ck, nullptr, wide.data(), wide.size(), syms.data(), syms.size()) == KILN_ERROR);
  CHECK_THAT(std::string(kiln_last_error()), Catch::Contains("argument 4 (h)"));
  CHECK(kiln_bundle_free(cb) == KILN_OK);
  CHECK(kiln_runtime_close(crt) == KILN_OK);
}

TEST_CASE("strided inputs: their strides are passed last, and pick the strided variant",
          "[launch]") {
  auto rt = open_fake();
  Fake fake;
  auto b = Bundle::load(*rt, bundle_named("strided"));
  INFO(b.message());  // the cubins' parameter bytes count the strides (runtime.cpp)
  REQUIRE(b.ok());
  const Kernel& k = *(*b)->find("add_strided");
  // a: f32[M, N] strided, bias: f32[M, N] strided -> y; M, N; then a's and bias's strides.
  const bundle::KernelInfo& info = k.info();
  REQUIRE(info.params.size() == 3);
  CHECK(info.params[0].strided);
  CHECK(info.params[1].strided);
  CHECK_FALSE(info.params[2].strided);
  REQUIRE(launch::stride_count(info) == 4);
  const bundle::Step& st = step_of(k, 0);
  int strided = -1, def = -1;
  for (const bundle::Variant& v : st.variants) {
    if (v.strided) strided = v.id;
    if (v.is_default) def = v.id;
  }
  REQUIRE(strided >= 0);
  const std::map<std::string, int64_t> mn{{"M", 1000}, {"N", 33}};
  Args a(*rt, info, mn);
  const std::vector<int64_t> syms = values(info, mn);
  fake.reset();
  fake.set_arg_count(9);
  // Contiguous (none given, or given as they are): the default, with the contiguous strides.
  REQUIRE(k.launch(nullptr, a.ptrs, syms).ok());
  const std::vector<int64_t> contiguous = {33, 1, 33, 1};
  REQUIRE(k.launch(nullptr, a.ptrs, syms, contiguous).ok());
  // a transposed ([33, 1000] storage), bias expanded over the rows: the strided variant.
  const std::vector<int64_t> views = {1, 1000, 0, 1};
  REQUIRE(k.launch(nullptr, a.ptrs, syms, views).ok());
  REQUIRE(fake.launches() == 3);
  CHECK(fake.entry(0) == st.variants[static_cast<size_t>(def)].entry);
  CHECK(fake.entry(1) == st.variants[static_cast<size_t>(def)].entry);
  CHECK(fake.entry(2) == st.variants[static_cast<size_t>(strided)].entry);
  for (int l = 0; l < 2; ++l) {
    for (int j = 0; j < 4; ++j) CHECK(fake.arg(l, 5 + j) == static_cast<uint64_t>(contiguous[j]));
  }
  for (int j = 0; j < 4; ++j) CHECK(fake.arg(2, 5 + j) == static_cast<uint64_t>(views[j]));
  CHECK(fake.arg(2, 3) == 1000u);
  CHECK(fake.arg(2, 4) == 33u);
  // Checked before anything runs.
  CHECK(k.launch(nullptr, a.ptrs, syms, std::vector<int64_t>{1, 1000, 0}).message() ==
        "add_strided: expected 4 strides (2 of a, 2 of bias), or none for contiguous tensors, got "
        "3");
  CHECK_THAT(k.launch(nullptr, a.ptrs, syms, std::vector<int64_t>{1, 1000, -33, 1}).message(),
             Catch::StartsWith("add_strided: argument 2 (bias): stride -33 of dimension 0 is "
                               "negative; negative strides are not supported"));
  // An explicit choice of a contiguous variant refuses views that are not contiguous.
  std::vector<int> choice = {def};
  CHECK_THAT(k.launch_variants(nullptr, a.ptrs, syms, choice, views).message(),
             Catch::Contains("reads the strided inputs as contiguous tensors"));
  choice = {strided};
  CHECK(k.launch_variants(nullptr, a.ptrs, syms, choice, views).ok());
  CHECK(k.launch_variants(nullptr, a.ptrs, syms, choice).ok());  // it reads any view
  CHECK(fake.launches() == 5);

  // The C API: kiln_kernel_param_strided and kiln_launch_strided.
  kiln_runtime* crt = nullptr;
  kiln_bundle* cb = nullptr;
  const kiln_kernel* ck = open_c_api("strided", "add_strided", crt, cb);
  int is_strided = -1;
  REQUIRE(kiln_kernel_param_strided(ck, 1, &is_strided) == KILN_OK);
  CHECK(is_strided == 1);
  REQUIRE(kiln_kernel_param_strided(ck, 2, &is_strided) == KILN_OK);
  CHECK(is_strided == 0);
  CHECK(kiln_kernel_param_strided(ck, 3, &is_strided) == KILN_ERROR_INVALID_ARGUMENT);
  fake.reset();
  fake.set_arg_count(9);
  REQUIRE(kiln_launch_strided(ck, nullptr, a.ptrs.data(), a.ptrs.size(), syms.data(), syms.size(),
                              views.data(), views.size()) == KILN_OK);
  CHECK(fake.entry(0) == st.variants[static_cast<size_t>(strided)].entry);
  CHECK(fake.arg(0, 7) == 0u);
  CHECK(kiln_launch_strided(ck, nullptr, a.ptrs.data(), a.ptrs.size(), syms.data(), syms.size(),
                            nullptr, 4) == KILN_ERROR_INVALID_ARGUMENT);
  const int64_t negative[] = {-1, 1000, 0, 1};
  CHECK(kiln_launch_strided(ck, nullptr, a.ptrs.data(), a.ptrs.size(), syms.data(), syms.size(),
                            negative, 4) == KILN_ERROR);
  CHECK_THAT(std::string(kiln_last_error()), Catch::Contains("negative strides are not supported"));
  CHECK(kiln_bundle_free(cb) == KILN_OK);
  CHECK(kiln_runtime_close(crt) == KILN_OK);
}

TEST_CASE("a contraction in clusters launches whole clusters, as many as the device holds",
          "[launch]") {
  // matmul_scaled's default runs in clusters of two on sm_90a (manifest.h, tile.cluster).
  // Enough tiles for the rule to run the default (not the small tiles).
  const std::map<std::string, int64_t> sym{{"M", 2000}, {"N", 3000}, {"K", 64}};
  const int64_t pairs = 8 * 12;  // ceil(2000 / 256) x ceil(3000 / 256)
  // Loads the bundle on a fresh fake runtime and launches matmul_scaled as the rule picks, or
  // variant `forced`: the launch's status, entry, grid and blocks per cluster.
  struct Launched {
    Status status;
    std::string entry;
    unsigned grid = 0, cluster = 0;
  };
  auto launch = [&](int forced) {
    auto rt = open_fake();
    Fake fake;
    auto b = Bundle::load(*rt, bundle_named("scalars"));
    REQUIRE(b.ok());
    const Kernel& k = *(*b)->find("matmul_scaled");
    Args a(*rt, k.info(), sym);
    std::vector<CUdeviceptr> p = a.ptrs;
    p[2] = kiln_scalar_f32(2.0f);
    fake.reset();
    Launched l;
    l.status = forced < 0
                   ? k.launch(nullptr, p, values(k.info(), sym))
                   : k.launch_variants(nullptr, p, values(k.info(), sym), std::vector<int>{forced});
    if (l.status.ok()) {
      REQUIRE(fake.launches() == 1);
      l.entry = fake.entry(0, &l.grid);
      l.cluster = fake.cluster(0);
    }
    return l;
  };
  auto rt = open_fake();
  auto b = Bundle::load(*rt, bundle_named("scalars"));
  REQUIRE(b.ok());
  const bundle::Step& step = (*b)->find("matmul_scaled")->info().steps[0];
  const bundle::Variant& def = *std::find_if(step.variants.begin(), step.variants.end(),
                                             [](const bundle::Variant& v) { return v.is_default; });
  REQUIRE(def.tile.cluster == 2);
  for (const char* held : {"66", "5"}) {
    setenv("KILN_FAKE_CUDA_CLUSTERS", held, 1);
    const Launched l = launch(-1);
    REQUIRE(l.status.ok());
    CHECK(l.entry == def.entry);
    CHECK(l.cluster == 2);
    CHECK(l.grid == 2 * std::min<int64_t>(pairs, std::atoi(held)));
  }
  unsetenv("KILN_FAKE_CUDA_CLUSTERS");
  // A failing occupancy query leaves the variant unloadable, with the reason.
  setenv("KILN_FAKE_CUDA_FAIL", "cuOccupancyMaxActiveClusters", 1);
  const Launched refused = launch(def.id);
  unsetenv("KILN_FAKE_CUDA_FAIL");
  CHECK_FALSE(refused.status.ok());
  CHECK(refused.status.message().find(
            "runs in clusters of 2 blocks: cuOccupancyMaxActiveClusters failed") !=
        std::string::npos);
  // On an sm_80 device the variant's image walks tiles alone: a plain launch.
  setenv("KILN_FAKE_CUDA_CC", "8.0", 1);
  const Launched ampere = launch(-1);
  unsetenv("KILN_FAKE_CUDA_CC");
  REQUIRE(ampere.status.ok());
  CHECK(ampere.entry == def.entry);
  CHECK(ampere.cluster == 1);
  CHECK(ampere.grid == 132);  // 16 x 12 tiles of 128 x 256, one block per SM
}

TEST_CASE("a variant chosen explicitly runs at every shape; checking one changes nothing",
          "[launch]") {
  auto rt = open_fake();
  Fake fake;
  auto b = Bundle::load(*rt, bundle_named("scalars"));
  REQUIRE(b.ok());
  Kernel& k = *(*b)->find("matmul_scaled");
  const bundle::Step& step = step_of(k, 0);
  // 512 x 512 outputs: 8 tiles of the default's 128 x 256, so the rule runs smaller tiles.
  const std::map<std::string, int64_t> sym{{"M", 512}, {"N", 512}, {"K", 64}};
  Args a(*rt, k.info(), sym);
  std::vector<CUdeviceptr> p = a.ptrs;
  p[2] = kiln_scalar_f32(2.0f);
  auto ran = [&] {
    fake.reset();
    REQUIRE(k.launch(nullptr, p, values(k.info(), sym)).ok());
    REQUIRE(fake.launches() == 1);
    return fake.entry(0);
  };
  std::vector<int> chosen(1);
  k.choose(values(k.info(), sym), chosen);
  const int def = k.chosen_variant(0);
  REQUIRE(chosen[0] != def);
  CHECK(ran() == step.variants[static_cast<size_t>(chosen[0])].entry);
  // What the tuner asks before timing a candidate: the rule is untouched.
  CHECK(k.check_variant(0, def).ok());
  CHECK_FALSE(k.check_variant(0, static_cast<int>(step.variants.size())).ok());
  CHECK_FALSE(k.check_variant(1, 0).ok());
  std::vector<int> again(1);
  k.choose(values(k.info(), sym), again);
  CHECK(again == chosen);
  // Chosen explicitly, the default's tiles run here too.
  REQUIRE(k.set_choice(0, def).ok());
  k.choose(values(k.info(), sym), again);
  CHECK(again[0] == def);
  CHECK(ran() == step.variants[static_cast<size_t>(def)].entry);
}

TEST_CASE("the C API describes a bundle's kernels: params, dtypes, dims, symbols", "[launch]") {
  setenv("KILN_CUDA_DRIVER", g_fake.c_str(), 1);
  kiln_runtime* rt = nullptr;
  REQUIRE(kiln_runtime_open(0, &rt) == KILN_OK);
  kiln_bundle* b = nullptr;
  REQUIRE(kiln_bundle_load(rt, bundle_named("rowsum").c_str(), &b) == KILN_OK);
  size_t n = 0;
  REQUIRE(kiln_bundle_kernel_count(b, &n) == KILN_OK);
  REQUIRE(n == 1);
  const kiln_kernel* k = nullptr;
  REQUIRE(kiln_bundle_kernel_at(b, 0, &k) == KILN_OK);
  CHECK(k == kiln_bundle_find(b, "rowsum"));
  const char* name = nullptr;
  REQUIRE(kiln_kernel_name(k, &name) == KILN_OK);
  CHECK(std::string(name) == "rowsum");
  size_t np = 0, ns = 0;
  REQUIRE(kiln_kernel_counts(k, &np, &ns) == KILN_OK);
  CHECK(np == 2);
  CHECK(ns == 2);
  // rowsum(x: f32[M, N]) -> (s: f32[M])
  const char* dtype = nullptr;
  size_t rank = 0;
  int out = -1;
  REQUIRE(kiln_kernel_param(k, 0, &name, &dtype, &rank, &out) == KILN_OK);
  CHECK(std::string(name) == "x");
  CHECK(std::string(dtype) == "f32");
  CHECK(rank == 2);
  CHECK(out == 0);
  REQUIRE(kiln_kernel_param(k, 1, &name, &dtype, &rank, &out) == KILN_OK);
  CHECK(std::string(name) == "s");
  CHECK(rank == 1);
  CHECK(out == 1);
  CHECK(kiln_kernel_param(k, 1, nullptr, nullptr, nullptr, nullptr) == KILN_OK);
  int64_t value = -7;
  int symbol = -7;
  std::vector<std::string> dims;
  for (size_t d = 0; d < 2; ++d) {
    REQUIRE(kiln_kernel_param_dim(k, 0, d, &value, &symbol) == KILN_OK);
    CHECK(value == 0);
    REQUIRE(symbol >= 0);
    REQUIRE(kiln_kernel_symbol(k, static_cast<size_t>(symbol), &name) == KILN_OK);
    dims.emplace_back(name);
  }
  CHECK(dims == std::vector<std::string>{"M", "N"});
  REQUIRE(kiln_kernel_symbol(k, 0, &name) == KILN_OK);
  CHECK(std::string(name) == "M");
  // Out of range and NULL: a code and a message, never a crash.
  CHECK(kiln_bundle_kernel_at(b, 1, &k) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kiln_last_error()) ==
        "kiln_bundle_kernel_at: index 1 out of range (1 kernels)");
  CHECK(k == nullptr);
  REQUIRE(kiln_bundle_kernel_at(b, 0, &k) == KILN_OK);
  CHECK(kiln_kernel_param(k, 2, &name, &dtype, &rank, &out) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kiln_last_error()) ==
        "kiln_kernel_param: parameter index 2 out of range (rowsum has 2)");
  CHECK(kiln_kernel_param_dim(k, 1, 1, &value, &symbol) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kiln_last_error()) ==
        "kiln_kernel_param_dim: dim 1 out of range (s has rank 1)");
  CHECK(kiln_kernel_param_dim(k, 0, 0, nullptr, &symbol) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(kiln_kernel_symbol(k, 2, &name) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kiln_last_error()) ==
        "kiln_kernel_symbol: index 2 out of range (rowsum has 2 symbols)");
  CHECK(kiln_kernel_param(nullptr, 0, &name, &dtype, &rank, &out) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kiln_last_error()) == "kiln_kernel_param: kernel is NULL");
  CHECK(kiln_kernel_name(nullptr, &name) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(kiln_kernel_counts(nullptr, &np, &ns) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(kiln_bundle_kernel_count(nullptr, &n) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(kiln_bundle_free(b) == KILN_OK);

  // Every kernel of every bundle given: each dim is a fixed extent or a symbol in range, and
  // every symbol appears in some parameter's shape.
  for (const std::string& dir : g_bundles) {
    REQUIRE(kiln_bundle_load(rt, dir.c_str(), &b) == KILN_OK);
    REQUIRE(kiln_bundle_kernel_count(b, &n) == KILN_OK);
    REQUIRE(n > 0);
    for (size_t i = 0; i < n; ++i) {
      REQUIRE(kiln_bundle_kernel_at(b, i, &k) == KILN_OK);
      REQUIRE(kiln_kernel_counts(k, &np, &ns) == KILN_OK);
      std::vector<bool> used(ns, false);
      for (size_t p = 0; p < np; ++p) {
        REQUIRE(kiln_kernel_param(k, p, &name, &dtype, &rank, &out) == KILN_OK);
        for (size_t d = 0; d < rank; ++d) {
          REQUIRE(kiln_kernel_param_dim(k, p, d, &value, &symbol) == KILN_OK);
          if (symbol < 0) {
            CHECK(value > 0);
          } else {
            REQUIRE(static_cast<size_t>(symbol) < ns);
            used[static_cast<size_t>(symbol)] = true;
          }
        }
      }
      for (size_t j = 0; j < ns; ++j) CHECK(used[j]);
    }
    CHECK(kiln_bundle_free(b) == KILN_OK);
  }
  CHECK(kiln_runtime_close(rt) == KILN_OK);
}

TEST_CASE("only a driver library that cannot be loaded is 'no driver'", "[launch]") {
  setenv("KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  auto none = Runtime::open();
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().no_driver());
  CHECK_THAT(none.message(), Catch::StartsWith("no CUDA driver: /nonexistent/libcuda.so.1"));

  setenv("KILN_CUDA_DRIVER", g_fake.c_str(), 1);
  for (const char* fail : {"cuInit", "cuDeviceGetCount", "cuDevicePrimaryCtxRetain"}) {
    INFO(fail);
    setenv("KILN_FAKE_CUDA_FAIL", fail, 1);
    auto rt = Runtime::open();
    REQUIRE_FALSE(rt.ok());
    CHECK_FALSE(rt.status().no_driver());
    CHECK_THAT(rt.message(), Catch::Contains("failed") && Catch::Contains("CUDA_ERROR_UNKNOWN"));
  }
  unsetenv("KILN_FAKE_CUDA_FAIL");
  setenv("KILN_FAKE_CUDA_DEVICES", "0", 1);
  auto zero = Runtime::open();
  unsetenv("KILN_FAKE_CUDA_DEVICES");
  REQUIRE_FALSE(zero.ok());
  CHECK_FALSE(zero.status().no_driver());
  CHECK(zero.message() == "no CUDA device found");
  CHECK(zero.status().code() == StatusCode::no_device);

  // The C API: no driver and no device are KILN_ERROR_NO_DEVICE, a failing driver KILN_ERROR.
  kiln_runtime* rt = nullptr;
  setenv("KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  CHECK(kiln_runtime_open(0, &rt) == KILN_ERROR_NO_DEVICE);
  setenv("KILN_CUDA_DRIVER", g_fake.c_str(), 1);
  CHECK(kiln_runtime_open(1, &rt) == KILN_ERROR_NO_DEVICE);
  CHECK(std::string(kiln_last_error()) == "CUDA device 1 does not exist (1 device found)");
  setenv("KILN_FAKE_CUDA_FAIL", "cuInit", 1);
  CHECK(kiln_runtime_open(0, &rt) == KILN_ERROR);
  unsetenv("KILN_FAKE_CUDA_FAIL");
  CHECK(rt == nullptr);
}

TEST_CASE("the heuristic is a pure function that never fails on any sizes", "[launch]") {
  // Every step of every bundle, at extreme sizes, with and without memory pools.
  for (const std::string& dir : g_bundles) {
    auto m = bundle::read_manifest(dir);
    REQUIRE(m.ok());
    for (const bundle::KernelInfo& info : m->kernels) {
      for (const bundle::Step& step : info.steps) {
        std::vector<bool> loadable(step.variants.size(), true);
        for (bool pools : {false, true}) {
          for (int sms : {1, 132, 1 << 20}) {
            const launch::DeviceFacts dev{sms, pools};
            const launch::StepRule rule = launch::step_rule(step, loadable, dev);
            for (int64_t rows : {int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{131},
                                 int64_t{1} << 40, std::numeric_limits<int64_t>::max()}) {
              for (int64_t r : {int64_t{0}, int64_t{1}, int64_t{16385}, int64_t{1} << 62,
                                std::numeric_limits<int64_t>::max()}) {
                const int v = launch::heuristic_variant(step, rule, rows, r, dev);
                REQUIRE(v >= 0);
                REQUIRE(static_cast<size_t>(v) < step.variants.size());
                if (!pools) CHECK(step.variants[v].split.phases == 0);
                CHECK(step.variants[v].stage.bytes_per_element == 0);
              }
            }
          }
        }
      }
    }
  }
}

// ---- KILN_RECORD_SHAPES (runtime/shape_recorder.h) -------------------------------------------

namespace {

// The shapes every child launches for each kernel: 10 per kernel, the same in every process.
std::vector<std::vector<int64_t>> recorded_test_shapes(const bundle::KernelInfo& k) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t v : {1, 5, 33, 100, 1000}) {
    out.emplace_back(k.symbols.size(), v);
    std::vector<int64_t> other(k.symbols.size(), v + 2);
    if (!other.empty()) other[0] = v;
    out.push_back(other);
  }
  return out;
}

// The child: every kernel of every bundle at every test shape, from `threads` threads at once,
// each thread three times over in its own order. Returns the exit code.
int record_shapes_child(const std::string& fake, int threads,
                        const std::vector<std::string>& dirs) {
  setenv("KILN_CUDA_DRIVER", fake.c_str(), 1);
  auto rt = Runtime::open();
  if (!rt.ok()) {
    std::fprintf(stderr, "child: %s\n", rt.message().c_str());
    return 3;
  }
  std::vector<std::unique_ptr<Bundle>> bundles;
  struct Job {
    const Kernel* kernel;
    std::vector<int64_t> values;
    std::vector<CUdeviceptr> ptrs;
  };
  std::vector<Job> jobs;
  for (const std::string& dir : dirs) {
    auto b = Bundle::load(**rt, dir);
    if (!b.ok()) return 4;
    bundles.push_back(std::move(b).value());
    for (const bundle::KernelInfo& info : bundles.back()->manifest().kernels) {
      for (const std::vector<int64_t>& v : recorded_test_shapes(info)) {
        std::vector<CUdeviceptr> ptrs;
        for (const bundle::ParamInfo& p : info.params) {
          if (p.scalar) {  // passed by value: 0 of any type
            ptrs.push_back(0);
            continue;
          }
          int64_t n = 1;
          for (const Dim& d : p.shape) {
            if (d.is_fixed()) {
              n *= d.value();
            } else {
              auto at = std::find(info.symbols.begin(), info.symbols.end(), d.name());
              n *= v[static_cast<size_t>(at - info.symbols.begin())];
            }
          }
          CUdeviceptr ptr = 0;
          if ((*rt)->driver().cuMemAlloc(&ptr, static_cast<size_t>(n) * size_of(p.dtype)) !=
              CUDA_SUCCESS) {
            return 5;
          }
          ptrs.push_back(ptr);
        }
        jobs.push_back({bundles.back()->find(info.name), v, ptrs});
      }
    }
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> pool;
  // Each thread's order: a stride coprime with the number of jobs visits every one of them.
  size_t stride = 7;
  while (std::gcd(stride, jobs.size()) != 1) stride += 2;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = 0; i < jobs.size(); ++i) {
          const Job& j = jobs[(i * stride + static_cast<size_t>(t) * 13) % jobs.size()];
          if (!j.kernel->launch(nullptr, j.ptrs, j.values).ok()) ++failures;
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  if (failures > 0) {
    std::fprintf(stderr, "child: %d launches failed\n", failures.load());
    return 6;
  }
  // Every shape was seen: recording them again allocates nothing.
  if (ShapeRecorder* r = ShapeRecorder::from_environment()) {
    const long before = g_allocations.load();
    for (const Job& j : jobs) r->record(j.kernel->info(), j.values);
    if (g_allocations.load() != before) {
      std::fprintf(stderr, "child: recording seen shapes allocated %ld times\n",
                   g_allocations.load() - before);
      return 7;
    }
  }
  return 0;
}

// Runs `n` children at once (this binary, --record-shapes-child) with KILN_RECORD_SHAPES=file,
// each child's stderr in file.stderr.I; returns their exit codes.
std::vector<int> run_record_children(int n, int threads, const std::string& file) {
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      setenv("KILN_RECORD_SHAPES", file.c_str(), 1);
      std::string err = fmt::format("{}.stderr.{}", file, i);
      int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) dup2(fd, 2);
      std::vector<std::string> args = {"kiln_host_launch_tests", "--record-shapes-child", g_fake,
                                       std::to_string(threads)};
      args.insert(args.end(), g_bundles.begin(), g_bundles.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("KILN_RECORD_SHAPES: 4 processes of 4 threads each record every shape once",
          "[launch][record]") {
  if (real_driver()) return;
  const std::string file = fmt::format("/tmp/kiln_record_shapes_{}.jsonl", getpid());
  std::remove(file.c_str());
  const int processes = 4;
  std::vector<int> codes = run_record_children(processes, 4, file);
  for (int i = 0; i < processes; ++i) {
    INFO("child " << i << " stderr: " << read_text(fmt::format("{}.stderr.{}", file, i)));
    CHECK(codes[static_cast<size_t>(i)] == 0);
    CHECK(read_text(fmt::format("{}.stderr.{}", file, i)).empty());
  }
  // What the children launched, as the file must say it.
  auto rt = open_fake();
  std::map<std::string, int> want;
  for (const std::string& dir : g_bundles) {
    auto b = Bundle::load(*rt, dir);
    REQUIRE(b.ok());
    for (const bundle::KernelInfo& info : (*b)->manifest().kernels) {
      for (const std::vector<int64_t>& v : recorded_test_shapes(info)) {
        want[shapes::record_line(info.name, info.hash, info.symbols, v)] = processes;
      }
    }
  }
  const std::string text = read_text(file);
  Result<std::vector<shapes::Recorded>> parsed = shapes::parse(text, file);
  INFO(parsed.message());
  REQUIRE(parsed.ok());  // every line parses
  std::map<std::string, int> got;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) ++got[line + "\n"];
  CHECK(parsed->size() == want.size() * processes);
  CHECK(got == want);  // each pair exactly once per process, no torn or foreign line
  for (int i = 0; i < processes; ++i) std::remove(fmt::format("{}.stderr.{}", file, i).c_str());
  std::remove(file.c_str());
}

TEST_CASE("KILN_RECORD_SHAPES: a file that cannot be written is said once, launches go on",
          "[launch][record]") {
  if (real_driver()) return;
  const std::string file = "/nonexistent-kiln-dir/shapes.jsonl";
  const std::string err_base = fmt::format("/tmp/kiln_record_bad_{}", getpid());
  // The children's stderr goes next to FILE, which cannot be made: use a writable base.
  std::vector<int> codes;
  {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      setenv("KILN_RECORD_SHAPES", file.c_str(), 1);
      int fd = ::open((err_base + ".stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) dup2(fd, 2);
      std::vector<std::string> args = {"kiln_host_launch_tests", "--record-shapes-child", g_fake,
                                       "4"};
      args.insert(args.end(), g_bundles.begin(), g_bundles.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      _exit(127);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    codes.push_back(WEXITSTATUS(status));
  }
  const std::string err = read_text(err_base + ".stderr");
  INFO(err);
  CHECK(codes[0] == 0);  // every launch succeeded
  CHECK(err ==
        "kiln: KILN_RECORD_SHAPES: cannot open /nonexistent-kiln-dir/shapes.jsonl: No "
        "such file or directory; shapes are not recorded\n");
  std::remove((err_base + ".stderr").c_str());
}

int main(int argc, char** argv) {
  if (argc >= 4 && std::string(argv[1]) == "--record-shapes-child") {
    return record_shapes_child(argv[2], std::atoi(argv[3]),
                               std::vector<std::string>(argv + 4, argv + argc));
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FAKE_DRIVER BUNDLE_DIR... [-- catch options]\n", argv[0]);
    return 1;
  }
  g_fake = argv[1];
  int i = 2;
  for (; i < argc && std::string(argv[i]) != "--"; ++i) g_bundles.emplace_back(argv[i]);
  std::vector<char*> rest{argv[0]};
  for (++i; i < argc; ++i) rest.push_back(argv[i]);
  return Catch::Session().run(static_cast<int>(rest.size()), rest.data());
}
