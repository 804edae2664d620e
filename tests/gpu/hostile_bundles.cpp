// GPU tests of hostile and broken inputs to libkiln_runtime (issue 7): bundle files that are
// truncated, random or missing, manifests that disagree with the compiled kernel, cache
// entries from another GPU, launches with wrong argument counts, overflowing shapes and symbol
// values past 32-bit indexing and the grid limit. Every case copies a pristine bundle into a
// temporary directory, breaks the copy, and checks the error the user gets; where the runtime
// cannot tell, the test says so and launches nothing that could corrupt memory
// (docs/errors.md, "Bad inputs tried and what each gets"). Links only the runtime.
//
//   kiln_gpu_hostile_tests ADD_BUNDLE SWIGLU_BUNDLE [catch options]
//
// ADD_BUNDLE and SWIGLU_BUNDLE are `kiln compile` outputs of examples/add.kiln and
// examples/swiglu.kiln; they are only read. Without a CUDA driver library it says it skipped
// and exits 77 (reported as skipped); any other failure to open the GPU, or
// KILN_REQUIRE_GPU=1, fails (autotune/open_gpu.h). A case that cannot run (no cubin for this
// GPU, not enough device memory) fails rather than passing untested.
#define CATCH_CONFIG_RUNNER
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "autotune/open_gpu.h"
#include "ir/text.h"
#include "runtime/driver.h"
#include "runtime/runtime.h"
#include "tests/unit/cache_fixtures.h"

using namespace kiln;
namespace fs = std::filesystem;
using kiln::cache::testing::read_text;
using kiln::cache::testing::TempDir;
using kiln::cache::testing::write_text;

namespace {

Runtime* g_rt = nullptr;
std::string g_add, g_swiglu;

const DriverApi& api() {
  return g_rt->driver();
}

// A copy of a pristine bundle in a fresh temporary directory, with its manifest at hand.
struct BundleCopy {
  TempDir tmp;
  std::string dir;
  bundle::Manifest manifest;
  explicit BundleCopy(const std::string& pristine) : dir(tmp.file("bundle")) {
    fs::copy(pristine, dir, fs::copy_options::recursive);
    manifest = bundle::read_manifest(dir).value();
  }
  std::string path(const std::string& file) const { return dir + "/" + file; }
  bundle::Step& step0() { return manifest.kernels.at(0).steps.at(0); }
  void save_manifest() const { write_text(path("manifest.json"), bundle::to_json(manifest)); }
  // Every file's bytes, to show that loading changed nothing.
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> files;
    for (const auto& f : fs::directory_iterator(dir)) {
      files[f.path().filename().string()] = read_text(f.path().string());
    }
    return files;
  }
};

// The machine code Bundle::load picks for `v` on this device: a cubin of the device's major
// architecture and a minor not above it (the highest), or nullptr when it would JIT PTX.
const bundle::ArchImage* device_cubin(const bundle::Variant& v) {
  const DeviceInfo& d = g_rt->device();
  const bundle::ArchImage* best = nullptr;
  for (const bundle::ArchImage& im : v.images) {
    int cc = std::stoi(im.arch.substr(3, 2));
    if (im.cubin.empty() || im.arch.size() != 5 || cc / 10 != d.cc_major || cc % 10 > d.cc_minor) {
      continue;
    }
    if (best == nullptr || im.arch > best->arch) best = &im;
  }
  return best;
}

// device_cubin; a bundle without one fails the test (the bundles given are compiled with
// nvJitLink for this GPU's architecture: a cubin case that cannot run is a broken setup).
const bundle::ArchImage* device_cubin_or_fail(const bundle::Variant& v) {
  const bundle::ArchImage* im = device_cubin(v);
  if (im == nullptr) {
    FAIL("the bundle has no cubin for " << g_rt->device().arch()
                                        << ": compile it with nvJitLink and --arch for this GPU");
  }
  return im;
}

// The PTX the driver JIT-compiles for `v` when it has no cubin: the highest architecture not
// above the device's.
const bundle::ArchImage* device_ptx(const bundle::Variant& v) {
  const DeviceInfo& d = g_rt->device();
  const bundle::ArchImage* best = nullptr;
  for (const bundle::ArchImage& im : v.images) {
    if (im.arch.size() != 5 || std::stoi(im.arch.substr(3, 2)) > d.cc_major * 10 + d.cc_minor) {
      continue;
    }
    if (best == nullptr || im.arch > best->arch) best = &im;
  }
  return best;
}

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Why variant `v` of step 0 cannot run ("" when it can).
std::string variant_error(const Kernel& k, int v) {
  Status s = k.check_variant(0, v);
  return s.ok() ? "" : s.message();
}

// Why variant 0 of add's step 0 in bundle `dir` cannot run, loaded afresh ("" when it can).
std::string variant0_error(const std::string& dir) {
  auto loaded = Bundle::load(*g_rt, dir);
  REQUIRE(loaded.ok());
  return variant_error(*(*loaded)->find("add"), 0);
}

// variant0_error when variant 0's image `path` has changed since compile.
std::string hash_mismatch(const std::string& path) {
  return "add: step 0 (add_s0): variant 0 cannot run here: bundle image " + path +
         " does not match the hash in its manifest: corrupted or edited after compile";
}

// Device memory freed on scope exit.
struct DeviceMemory {
  CUdeviceptr ptr = 0;
  explicit DeviceMemory(size_t bytes) { REQUIRE(api().cuMemAlloc(&ptr, bytes) == CUDA_SUCCESS); }
  ~DeviceMemory() { api().cuMemFree(ptr); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};

// Launches add (its chosen variants) on n elements and returns how many of z are wrong.
int64_t add_errors(const Kernel& k, int64_t n) {
  DeviceMemory x(n * 4), y(n * 4), z(n * 4);
  std::vector<float> hx(n), hy(n), hz(n);
  for (int64_t i = 0; i < n; ++i) {
    hx[i] = 0.25f * static_cast<float>(i);
    hy[i] = 3.0f - static_cast<float>(i % 7);
  }
  REQUIRE(api().cuMemcpyHtoD(x.ptr, hx.data(), n * 4) == CUDA_SUCCESS);
  REQUIRE(api().cuMemcpyHtoD(y.ptr, hy.data(), n * 4) == CUDA_SUCCESS);
  REQUIRE(api().cuMemsetD8(z.ptr, 0xFF, n * 4) == CUDA_SUCCESS);
  CUdeviceptr ptrs[] = {x.ptr, y.ptr, z.ptr};
  int64_t syms[] = {n};
  Status s = k.launch(nullptr, ptrs, syms);
  INFO(s.message());
  REQUIRE(s.ok());
  REQUIRE(api().cuCtxSynchronize() == CUDA_SUCCESS);
  REQUIRE(api().cuMemcpyDtoH(hz.data(), z.ptr, n * 4) == CUDA_SUCCESS);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += hz[i] != hx[i] + hy[i];
  return bad;
}

}  // namespace

// ---- bundle files ----

TEST_CASE("a truncated cubin disables its variant, and a bundle of them does not load",
          "[hostile][bundle]") {
  BundleCopy b(g_add);
  int dv = -1;
  for (const bundle::Variant& v : b.step0().variants) {
    if (v.is_default) dv = v.id;
  }
  const bundle::ArchImage* im = device_cubin_or_fail(b.step0().variants[dv]);
  std::string cubin = b.path(im->cubin);
  std::string bytes = read_text(cubin);
  write_text(cubin, bytes.substr(0, bytes.size() / 2));
  auto before = b.snapshot();

  auto loaded = Bundle::load(*g_rt, b.dir);
  REQUIRE(loaded.ok());
  Kernel& k = *(*loaded)->find("add");
  CHECK(k.chosen_variant(0) != dv);  // the default cannot load; the lowest loadable id runs
  CHECK_THAT(variant_error(k, dv),
             Catch::StartsWith(fmt::format("add: step 0 (add_s0): variant {} cannot run here: {} "
                                           "is not a valid cubin: truncated ({} bytes; ",
                                           dv, cubin, bytes.size() / 2)));
  CHECK(add_errors(k, 100003) == 0);
  CHECK(b.snapshot() == before);

  // Every variant's cubin truncated: the step has nothing to run and the load says why.
  for (const bundle::Variant& v : b.step0().variants) {
    std::string f = b.path(device_cubin(v)->cubin);
    std::string data = read_text(f);
    write_text(f, data.substr(0, data.size() / 2));
  }
  auto none = Bundle::load(*g_rt, b.dir);
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.message(),
             Catch::StartsWith(fmt::format("{}: kernel add, step 0 (add_s0): no variant can run on "
                                           "{} ({}): variant 0: ",
                                           b.dir, g_rt->device().arch(), g_rt->device().name)));
  CHECK_THAT(none.message(), Catch::Contains("is not a valid cubin: truncated"));
  CHECK_THAT(none.message(),
             Catch::EndsWith(fmt::format("; and {} more", b.step0().variants.size() - 4)));
}

TEST_CASE("a cubin of random bytes is refused before the driver sees it", "[hostile][bundle]") {
  BundleCopy b(g_add);
  const bundle::ArchImage* im = device_cubin_or_fail(b.step0().variants[0]);
  std::string cubin = b.path(im->cubin);
  const std::string pristine = read_text(cubin);

  SECTION("all random") {
    write_text(cubin, random_bytes(pristine.size(), 1));
    auto loaded = Bundle::load(*g_rt, b.dir);
    REQUIRE(loaded.ok());
    CHECK(variant_error(*(*loaded)->find("add"), 0) ==
          "add: step 0 (add_s0): variant 0 cannot run here: " + cubin +
              " is not a valid cubin: no 64-bit ELF header");
  }
  SECTION("a valid ELF header followed by random bytes") {
    write_text(cubin, pristine.substr(0, 64) + random_bytes(pristine.size() - 64, 2));
    auto loaded = Bundle::load(*g_rt, b.dir);
    REQUIRE(loaded.ok());
    CHECK_THAT(variant_error(*(*loaded)->find("add"), 0),
               Catch::StartsWith("add: step 0 (add_s0): variant 0 cannot run here: " + cubin +
                                 " is not a valid cubin: "));
  }
  SECTION("empty") {
    write_text(cubin, "");
    auto loaded = Bundle::load(*g_rt, b.dir);
    REQUIRE(loaded.ok());
    CHECK(variant_error(*(*loaded)->find("add"), 0) ==
          "add: step 0 (add_s0): variant 0 cannot run here: " + cubin + " is empty");
  }
  SECTION("missing") {
    fs::remove(cubin);
    auto loaded = Bundle::load(*g_rt, b.dir);
    REQUIRE(loaded.ok());
    CHECK(variant_error(*(*loaded)->find("add"), 0) ==
          "add: step 0 (add_s0): variant 0 cannot run here: cannot read " + cubin +
              ": No such file or directory");
  }
  SECTION("a cubin of another architecture under this one's name") {
    const bundle::ArchImage* other = nullptr;
    for (const bundle::ArchImage& x : b.step0().variants[0].images) {
      if (x.arch[3] != im->arch[3] && !x.cubin.empty()) other = &x;
    }
    if (other == nullptr) {
      FAIL("the bundle has no cubin of another major architecture than "
           << im->arch << " (kiln compile builds sm_80 and sm_90 by default)");
    }
    const std::string foreign = read_text(b.path(other->cubin));
    write_text(cubin, foreign);
    CHECK(variant0_error(b.dir) == hash_mismatch(cubin));
    // With the manifest's hash edited to match, the driver gets the file and refuses it.
    for (bundle::ArchImage& x : b.step0().variants[0].images) {
      if (x.cubin == im->cubin) x.cubin_hash = content_hash(foreign);
    }
    b.save_manifest();
    CHECK(variant0_error(b.dir) ==
          fmt::format("add: step 0 (add_s0): variant 0 cannot run here: loading {} ({} cubin) "
                      "failed: CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available for "
                      "execution on the device",
                      cubin, im->arch));
  }
  CHECK(api().cuCtxSynchronize() == CUDA_SUCCESS);
}

// The sections' contents (the machine code, symbol and string tables) replaced by random
// bytes, the ELF header and section header table intact: the structural check passes. Given
// to the driver, such a file crashed the process inside cuModuleLoadDataEx (SIGSEGV, H200,
// driver 580.159.04); the manifest's content hash now stops it first.
TEST_CASE("random machine code in a well-formed ELF cubin is refused by its hash",
          "[hostile][bundle]") {
  BundleCopy b(g_add);
  const bundle::ArchImage* im = device_cubin_or_fail(b.step0().variants[0]);
  std::string cubin = b.path(im->cubin);
  std::string data = read_text(cubin);
  uint64_t shoff = 0;
  std::memcpy(&shoff, data.data() + 0x28, 8);
  size_t end = std::min<uint64_t>(shoff, data.size());
  REQUIRE(end > 64);
  data.replace(64, end - 64, random_bytes(end - 64, 3));
  write_text(cubin, data);
  auto before = b.snapshot();
  auto loaded = Bundle::load(*g_rt, b.dir);
  REQUIRE(loaded.ok());
  Kernel& k = *(*loaded)->find("add");
  CHECK(variant_error(k, 0) == hash_mismatch(cubin));
  CHECK(add_errors(k, 100003) == 0);  // the other variants still run
  CHECK(b.snapshot() == before);
}

TEST_CASE("a truncated PTX (no cubin) is refused by the driver's JIT with its log",
          "[hostile][bundle]") {
  BundleCopy b(g_add);
  for (bundle::Variant& v : b.step0().variants) {
    for (bundle::ArchImage& im : v.images) im.cubin.clear();  // the PTX path for every variant
  }
  b.save_manifest();
  const bundle::ArchImage* im = device_ptx(b.step0().variants[0]);
  REQUIRE(im != nullptr);
  std::string ptx = b.path(im->ptx);
  std::string text = read_text(ptx);

  SECTION("cut in half") {
    const std::string half = text.substr(0, text.size() / 2);
    write_text(ptx, half);
    CHECK(variant0_error(b.dir) == hash_mismatch(ptx));
    // With the manifest's hash edited to match, the driver's JIT refuses it with its log.
    for (bundle::ArchImage& x : b.step0().variants[0].images) {
      if (x.ptx == im->ptx) x.ptx_hash = content_hash(half);
    }
    b.save_manifest();
    auto loaded = Bundle::load(*g_rt, b.dir);
    REQUIRE(loaded.ok());
    Kernel& k = *(*loaded)->find("add");
    std::string why = variant_error(k, 0);
    CHECK_THAT(why, Catch::StartsWith(fmt::format(
                        "add: step 0 (add_s0): variant 0 cannot run here: loading {} ({} PTX) "
                        "failed: CUDA_ERROR_INVALID_PTX: ",
                        ptx, im->arch)));
    CHECK_THAT(why, Catch::Contains("; JIT log: "));
    CHECK(add_errors(k, 4097) == 0);  // the other variants, JIT-compiled, still run
  }
  SECTION("empty") {
    write_text(ptx, "");
    auto loaded = Bundle::load(*g_rt, b.dir);
    REQUIRE(loaded.ok());
    CHECK(variant_error(*(*loaded)->find("add"), 0) ==
          "add: step 0 (add_s0): variant 0 cannot run here: " + ptx + " is empty");
  }
  CHECK(api().cuCtxSynchronize() == CUDA_SUCCESS);
}

TEST_CASE("a manifest that is not JSON or names a missing entry point", "[hostile][bundle]") {
  BundleCopy b(g_add);
  SECTION("truncated manifest") {
    std::string text = read_text(b.path("manifest.json"));
    write_text(b.path("manifest.json"), text.substr(0, text.size() / 2));
    auto loaded = Bundle::load(*g_rt, b.dir);
    CHECK_THAT(loaded.message(),
               Catch::StartsWith(b.path("manifest.json") + ": invalid JSON: parse error"));
  }
  SECTION("no manifest") {
    fs::remove(b.path("manifest.json"));
    CHECK(Bundle::load(*g_rt, b.dir).message() ==
          b.path("manifest.json") + ": cannot read: No such file or directory");
  }
  SECTION("an entry name the module does not have") {
    b.step0().variants[0].entry = "add_s0_v0_renamed";
    b.save_manifest();
    auto loaded = Bundle::load(*g_rt, b.dir);
    REQUIRE(loaded.ok());
    CHECK_THAT(variant_error(*(*loaded)->find("add"), 0),
               Catch::StartsWith("add: step 0 (add_s0): variant 0 cannot run here: entry "
                                 "add_s0_v0_renamed not found in add_s0_v0."));
  }
}

// The manifest's parameter list is the runtime's only description of the kernel's ABI. What it
// catches and what it cannot: see docs/errors.md. Nothing here launches a kernel whose
// manifest disagrees with it in a way that could touch memory it should not.
TEST_CASE("a manifest whose parameter list disagrees with the kernel", "[hostile][bundle]") {
  BundleCopy b(g_add);
  bundle::KernelInfo& k = b.manifest.kernels[0];
  std::string manifest = b.path("manifest.json");

  SECTION("a parameter removed: the vector variants' aligned_params give it away") {
    k.params.erase(k.params.begin() + 1);  // y
    b.save_manifest();
    auto loaded = Bundle::load(*g_rt, b.dir);
    REQUIRE_FALSE(loaded.ok());
    CHECK_THAT(loaded.message(),
               Catch::StartsWith(manifest + ": kernels[0].steps[0].variants[") &&
                   Catch::EndsWith("].aligned_params[2]: expected an integer in 0..1, got 2"));
  }
  SECTION("a symbol removed: the shapes that use it give it away") {
    k.symbols.clear();
    b.save_manifest();
    CHECK(Bundle::load(*g_rt, b.dir).message() ==
          manifest +
              ": kernels[0].params[0].shape[0]: symbol \"N\" is not listed in the "
              "kernel's symbols");
  }
  // Before any launch the runtime compares each entry's parameter bytes, read from its cubin's
  // .nv.info section (no driver call), with the manifest's 8 per parameter and per symbol: no
  // variant loads and the bundle is refused.
  auto refused_for_params = [&](const std::string& why) {
    b.save_manifest();
    auto loaded = Bundle::load(*g_rt, b.dir);
    REQUIRE_FALSE(loaded.ok());
    CHECK_THAT(loaded.message(),
               Catch::StartsWith(b.dir + ": kernel add, step 0 (add_s0): no variant can run on ") &&
                   Catch::Contains("variant 0: entry add_s0_v0 in add_s0_v0.") &&
                   Catch::Contains(why));
  };
  SECTION("a parameter removed consistently: the entry's parameter bytes give it away") {
    // The entry point still takes x, y, z, N; a launch would pass x, z, N.
    k.params.erase(k.params.begin() + 1);
    for (bundle::Variant& v : b.step0().variants) {
      std::erase(v.aligned_params, 1);
      for (int& p : v.aligned_params) p = p == 2 ? 1 : p;
    }
    refused_for_params(
        " takes 32 bytes of parameters, but the manifest's kernel add passes 24 (3 x 8: x, z, N)");
  }
  SECTION("a parameter added: the entry's parameter bytes give it away") {
    k.params.insert(k.params.begin() + 2,
                    bundle::ParamInfo{"w", DType::f32, k.params[0].shape, false});
    for (bundle::Variant& v : b.step0().variants) {
      for (int& p : v.aligned_params) p = p >= 2 ? p + 1 : p;
    }
    refused_for_params(
        " takes 32 bytes of parameters, but the manifest's kernel add passes 40 (5 x 8: x, y, w, "
        "z, N)");
  }
  SECTION("a buffer added: the entry's parameter bytes give it away") {
    // A launch would pass the buffer between z and N, where the entry takes N.
    k.buffers.push_back(bundle::ParamInfo{"w", DType::f32, k.params[0].shape, false});
    refused_for_params(
        " takes 32 bytes of parameters, but the manifest's kernel add passes 40 (5 x 8: x, y, z, "
        "w, N)");
  }
  SECTION("a dtype changed from f32 to i32: NOT detected; the kernel's own code decides") {
    k.params[0].dtype = DType::i32;
    b.save_manifest();
    auto loaded = Bundle::load(*g_rt, b.dir);
    REQUIRE(loaded.ok());
    // Same element size, so the launch checks are unchanged and the f32 kernel computes on
    // the f32 buffers as compiled.
    CHECK(add_errors(*(*loaded)->find("add"), 1000) == 0);
  }
}

// ---- cache entries ----

TEST_CASE("cache entries for another GPU, driver, Kiln, step or config are ignored with a reason",
          "[hostile][cache]") {
  auto loaded = Bundle::load(*g_rt, g_add);
  REQUIRE(loaded.ok());
  Bundle& bundle = **loaded;
  Kernel& k = *bundle.find("add");
  const DeviceInfo& d = g_rt->device();
  const bundle::Step& step = k.info().steps[0];
  int other = k.chosen_variant(0) == 0 ? 1 : 0;  // a winner that is not the default
  auto entry = [&](auto edit) {
    cache::Entry e = cache::testing::sample_entry();
    e.kernel = "add";
    e.key.kernel_hash = k.info().hash;
    e.key.gpu = {d.name, d.cc_major, d.cc_minor, d.sm_count};
    e.key.driver_version = d.driver_version;
    e.key.kiln_version = KILN_VERSION;
    e.key.shape = {{"N", 4096}};
    e.winner.config = step.variants[other].config;
    edit(e);
    return e;
  };
  cache::Cache c;
  c.entries = {
      entry([](cache::Entry& e) {
        e.key.gpu = {"NVIDIA A100-SXM4-80GB", 8, 0, 108};
      }),
      entry([](cache::Entry& e) { e.key.driver_version += 10; }),
      entry([](cache::Entry& e) { e.key.kiln_version = "0.0.1"; }),
      entry([](cache::Entry& e) { e.key.step = 5; }),
      entry([](cache::Entry& e) {
        e.winner.config = {{"block", 96}, {"unroll", 3}, {"vec", 2}};
      }),
      entry([](cache::Entry& e) { e.key.kernel_hash = "another bundle's kernel"; }),
  };
  std::vector<std::string> ignored = bundle.use_cache(c);
  std::string dv = std::to_string(d.driver_version);
  CHECK(
      ignored ==
      std::vector<std::string>{
          "add step 0: tuned on NVIDIA A100-SXM4-80GB (sm_80, 108 SMs), not this GPU",
          fmt::format("add step 0: tuned with driver {} and kiln {}, this is driver {} and kiln {}",
                      d.driver_version + 10, KILN_VERSION, dv, KILN_VERSION),
          fmt::format("add step 0: tuned with driver {} and kiln 0.0.1, this is driver {} and "
                      "kiln {}",
                      dv, dv, KILN_VERSION),
          "add step 5: no such step",
          "add step 0: the winning config is not in this bundle or cannot load here",
      });
  int64_t n[] = {4096};
  int chosen[1];
  CHECK(k.choose(n, chosen) == Kernel::Source::default_config);
  CHECK(chosen[0] == k.chosen_variant(0));

  // The same entry, for this GPU: used.
  c.entries = {entry([](cache::Entry&) {})};
  CHECK(bundle.use_cache(c).empty());
  CHECK(k.choose(n, chosen) == Kernel::Source::tuned_exact);
  CHECK(chosen[0] == other);
}

// ---- launches ----

TEST_CASE("launches with wrong counts or overflowing shapes are refused and touch nothing",
          "[hostile][launch]") {
  auto add_bundle = Bundle::load(*g_rt, g_add);
  auto swiglu_bundle = Bundle::load(*g_rt, g_swiglu);
  REQUIRE(add_bundle.ok());
  REQUIRE(swiglu_bundle.ok());
  const Kernel& add = *(*add_bundle)->find("add");
  const Kernel& swiglu = *(*swiglu_bundle)->find("swiglu");
  constexpr int64_t kN = 1024;
  DeviceMemory x(kN * 4), y(kN * 4), z(kN * 4);
  REQUIRE(api().cuMemsetD8(z.ptr, 0xAB, kN * 4) == CUDA_SUCCESS);
  auto refused = [](const Kernel& k, std::vector<CUdeviceptr> ptrs, std::vector<int64_t> syms) {
    Status s = k.launch(nullptr, ptrs, syms);
    CHECK_FALSE(s.ok());
    return s.message();
  };
  const CUdeviceptr X = x.ptr, Y = y.ptr, Z = z.ptr;
  const int64_t kMax = INT64_MAX;

  CHECK(refused(add, {}, {kN}) == "add: expected 3 pointers (x, y, z), got 0");
  CHECK(refused(add, {X, Y}, {kN}) == "add: expected 3 pointers (x, y, z), got 2");
  CHECK(refused(add, {X, Y, Z, Z}, {kN}) == "add: expected 3 pointers (x, y, z), got 4");
  CHECK(refused(add, {X, Y, Z}, {}) == "add: expected 1 symbol value (N), got 0");
  CHECK(refused(add, {X, Y, Z}, {kN, kN}) == "add: expected 1 symbol value (N), got 2");
  CHECK(refused(add, {X, Y, Z}, {-1}) == "add: symbol N = -1 must be > 0");
  CHECK(refused(add, {X, Y, Z}, {kMax}) ==
        "add: argument 1 (x): shape [N] = [9223372036854775807] is too large (its size in bytes "
        "overflows int64)");
  CHECK(refused(add, {X, Y, Z}, {int64_t{1} << 61}) ==
        "add: argument 1 (x): shape [N] = [2305843009213693952] is too large (its size in bytes "
        "overflows int64)");
  CHECK(refused(add, {X, Y, X}, {kN}) ==
        "add: argument 3 (z) overlaps argument 1 (x); outputs may not alias other arguments");

  CHECK(refused(swiglu, {X, Y, Z}, {kN}) == "swiglu: expected 2 symbol values (M, N), got 1");
  CHECK(refused(swiglu, {X, Y, Z}, {int64_t{1} << 32, int64_t{1} << 32}) ==
        "swiglu: argument 1 (a): shape [M, N] = [4294967296, 4294967296] is too large (its "
        "element count overflows int64)");
  CHECK(refused(swiglu, {X, Y, Z}, {int64_t{1} << 31, int64_t{1} << 31}) ==
        "swiglu: argument 1 (a): shape [M, N] = [2147483648, 2147483648] is too large (its size "
        "in bytes overflows int64)");
  CHECK(refused(swiglu, {X, Y, Z}, {kN, 0}) == "swiglu: symbol N = 0 must be > 0");

  // Nothing was launched: z still holds its poison.
  REQUIRE(api().cuCtxSynchronize() == CUDA_SUCCESS);
  std::vector<uint8_t> hz(kN * 4);
  REQUIRE(api().cuMemcpyDtoH(hz.data(), Z, hz.size()) == CUDA_SUCCESS);
  CHECK(std::count(hz.begin(), hz.end(), uint8_t{0xAB}) == kN * 4);
}

// N >= 2^31 elements takes the kernels' 64-bit index path (below it, 32-bit indices are
// enough); the grid is clamped to 2^31 - 1 blocks and the kernel loops over the rest. x and
// y share one buffer (inputs may alias), so this needs 2 x 8 GiB of device memory.
TEST_CASE("symbol values past 32-bit indexing and the grid limit", "[hostile][launch][large]") {
  constexpr int64_t kGuard = 4096;  // bytes of poison on each side of z
  constexpr int64_t kBig = (int64_t{1} << 31) + 1029;
  size_t free_bytes = 0, total = 0;
  REQUIRE(api().cuMemGetInfo(&free_bytes, &total) == CUDA_SUCCESS);
  if (free_bytes < static_cast<size_t>(2 * kBig * 4 + 4 * kGuard + (int64_t{1} << 30))) {
    FAIL("needs about 17 GiB of free device memory, the device has "
         << (free_bytes >> 20) << " MiB free (leave this case out with the Catch filter "
         << "\"~[large]\")");
  }
  BundleCopy b(g_add);
  // A variant whose manifest claims one element per block: the runtime asks for one block per
  // element, which at 2^31 + 1029 elements is past the grid limit and is clamped.
  int v0_epb = static_cast<int>(b.step0().variants[0].elements_per_block);
  b.step0().variants[0].elements_per_block = 1;
  b.save_manifest();
  auto loaded = Bundle::load(*g_rt, b.dir);
  REQUIRE(loaded.ok());
  const Kernel& k = *(*loaded)->find("add");
  const int dv = k.chosen_variant(0);
  REQUIRE(k.info().steps[0].variants[dv].align_bytes > 1);  // the default is a vector variant

  DeviceMemory xs(kBig * 4), zs(kBig * 4 + 2 * kGuard);
  const CUdeviceptr x = xs.ptr, z = zs.ptr + kGuard;
  // x[i] = i mod 1048573 (a prime, so a wrong index shows), exact in f32.
  constexpr int64_t kChunk = int64_t{1} << 24;
  std::vector<float> h(kChunk);
  for (int64_t off = 0; off < kBig; off += kChunk) {
    int64_t n = std::min(kChunk, kBig - off);
    for (int64_t i = 0; i < n; ++i) h[i] = static_cast<float>((off + i) % 1048573);
    REQUIRE(api().cuMemcpyHtoD(x + off * 4, h.data(), n * 4) == CUDA_SUCCESS);
  }
  // Runs `variant` on the first n elements and counts wrong elements of z and changed guard
  // bytes.
  auto run = [&](int variant, int64_t n) {
    REQUIRE(api().cuMemsetD8(zs.ptr, 0xFF, kBig * 4 + 2 * kGuard) == CUDA_SUCCESS);
    CUdeviceptr ptrs[] = {x, x, z};
    int64_t syms[] = {n};
    int choice[] = {variant};
    Status s = k.launch_variants(nullptr, ptrs, syms, choice);
    INFO(s.message());
    REQUIRE(s.ok());
    REQUIRE(api().cuCtxSynchronize() == CUDA_SUCCESS);
    int64_t bad = 0;
    for (int64_t off = 0; off < n; off += kChunk) {
      int64_t m = std::min(kChunk, n - off);
      REQUIRE(api().cuMemcpyDtoH(h.data(), z + off * 4, m * 4) == CUDA_SUCCESS);
      for (int64_t i = 0; i < m; ++i) bad += h[i] != 2.0f * static_cast<float>((off + i) % 1048573);
    }
    std::vector<uint8_t> guard(kGuard);
    for (CUdeviceptr g : {zs.ptr, z + static_cast<CUdeviceptr>(n * 4)}) {
      REQUIRE(api().cuMemcpyDtoH(guard.data(), g, kGuard) == CUDA_SUCCESS);
      bad += kGuard - std::count(guard.begin(), guard.end(), uint8_t{0xFF});
    }
    return bad;
  };
  INFO("variant 0 runs " << v0_epb << " elements per block");
  CHECK(run(dv, kBig) == 0);                    // 64-bit path, vectors
  CHECK(run(dv, (int64_t{1} << 31) - 1) == 0);  // the largest 32-bit path
  CHECK(run(0, kBig) == 0);                     // 2^31 - 1 blocks (clamped), grid-stride
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ADD_BUNDLE SWIGLU_BUNDLE [catch options]\n", argv[0]);
    return 2;
  }
  std::unique_ptr<Runtime> rt;
  if (int rc = open_gpu("kiln_gpu_hostile_tests", rt); rc >= 0) return rc;
  g_rt = rt.get();
  g_add = argv[1];
  g_swiglu = argv[2];
  argv[2] = argv[0];
  return Catch::Session().run(argc - 2, argv + 2);
}
