// GPU tests of the C API (runtime/c_api.h, installed as kiln/kiln_runtime.h): a bundle loaded,
// add and a row sum launched through kiln_* functions only, their results checked on the host,
// and every kind of bad argument answered with an error code and a message, nothing launched.
// Device memory comes from the driver through a kiln::Runtime opened beside the C one (both
// retain device 0's primary context, so their pointers are interchangeable). Links only the
// runtime.
//
//   kiln_gpu_c_api_tests ADD_BUNDLE_DIR ROWSUM_BUNDLE_DIR [catch options]
//
// Skips (77) only without a CUDA driver library, and not under KILN_REQUIRE_GPU=1
// (autotune/open_gpu.h).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "autotune/open_gpu.h"
#include "runtime/c_api.h"
#include "runtime/driver.h"
#include "runtime/runtime.h"

using namespace kiln;

namespace {

Runtime* g_rt = nullptr;  // for device memory only
kiln_runtime* g_crt = nullptr;
std::string g_add, g_rowsum;

const DriverApi& api() {
  return g_rt->driver();
}

struct DeviceMemory {
  CUdeviceptr ptr = 0;
  explicit DeviceMemory(size_t bytes) { REQUIRE(api().cuMemAlloc(&ptr, bytes) == CUDA_SUCCESS); }
  ~DeviceMemory() { api().cuMemFree(ptr); }
};

// A bundle loaded through the C API, freed at scope exit.
struct CBundle {
  kiln_bundle* b = nullptr;
  explicit CBundle(const std::string& dir) {
    INFO(kiln_last_error());
    REQUIRE(kiln_bundle_load(g_crt, dir.c_str(), &b) == KILN_OK);
    REQUIRE(b != nullptr);
  }
  ~CBundle() { CHECK(kiln_bundle_free(b) == KILN_OK); }
};

std::string last_error() {
  return kiln_last_error();
}

}  // namespace

TEST_CASE("the C API reports the device", "[gpu][c_api]") {
  const char* name = nullptr;
  REQUIRE(kiln_device_name(g_crt, &name) == KILN_OK);
  CHECK(std::string(name) == g_rt->device().name);
  int major = 0, minor = 0;
  REQUIRE(kiln_device_compute_capability(g_crt, &major, &minor) == KILN_OK);
  CHECK(major == g_rt->device().cc_major);
  CHECK(minor == g_rt->device().cc_minor);
  CHECK(kiln_runtime_make_current(g_crt) == KILN_OK);
}

TEST_CASE("add launched through kiln_launch", "[gpu][c_api]") {
  CBundle b(g_add);
  const kiln_kernel* k = kiln_bundle_find(b.b, "add");
  INFO(kiln_last_error());
  REQUIRE(k != nullptr);
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{1000003}}) {
    INFO("N=" << n);
    std::vector<float> x(n), y(n), z(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i % 1001) * 0.25f;
      y[i] = static_cast<float>(i % 7) - 3.0f;
    }
    DeviceMemory dx(n * 4), dy(n * 4), dz(n * 4);
    REQUIRE(api().cuMemcpyHtoD(dx.ptr, x.data(), n * 4) == CUDA_SUCCESS);
    REQUIRE(api().cuMemcpyHtoD(dy.ptr, y.data(), n * 4) == CUDA_SUCCESS);
    REQUIRE(api().cuMemsetD8(dz.ptr, 0xFF, n * 4) == CUDA_SUCCESS);
    CUdeviceptr ptrs[] = {dx.ptr, dy.ptr, dz.ptr};
    int64_t syms[] = {n};
    INFO(kiln_last_error());
    REQUIRE(kiln_launch(k, nullptr, ptrs, 3, syms, 1) == KILN_OK);
    REQUIRE(api().cuCtxSynchronize() == CUDA_SUCCESS);
    REQUIRE(api().cuMemcpyDtoH(z.data(), dz.ptr, n * 4) == CUDA_SUCCESS);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += z[i] != x[i] + y[i];  // exact: quarters and integers
    CHECK(bad == 0);
  }
}

TEST_CASE("a row sum launched through kiln_launch, plain and split", "[gpu][c_api]") {
  CBundle b(g_rowsum);
  const kiln_kernel* k = kiln_bundle_find(b.b, "rowsum");
  INFO(kiln_last_error());
  REQUIRE(k != nullptr);
  // Integers in [-3, 3]: every partial sum of a row (|s| <= 3 * 3000017 < 2^24) is exact in
  // f32, so the sums must be exact whatever the order; M = 3 rows of 3000017 run split.
  for (auto [m, n] : {std::pair<int64_t, int64_t>{7, 1000}, {4097, 33}, {3, 3000017}}) {
    INFO("M=" << m << " N=" << n);
    std::vector<float> x(m * n), s(m);
    std::vector<double> want(m, 0.0);
    for (int64_t i = 0; i < m * n; ++i) {
      x[i] = static_cast<float>((i * 7919) % 7 - 3);
      want[i / n] += x[i];
    }
    DeviceMemory dx(m * n * 4), ds(m * 4);
    REQUIRE(api().cuMemcpyHtoD(dx.ptr, x.data(), m * n * 4) == CUDA_SUCCESS);
    REQUIRE(api().cuMemsetD8(ds.ptr, 0xFF, m * 4) == CUDA_SUCCESS);
    CUdeviceptr ptrs[] = {dx.ptr, ds.ptr};
    int64_t syms[] = {m, n};
    INFO(kiln_last_error());
    REQUIRE(kiln_launch(k, nullptr, ptrs, 2, syms, 2) == KILN_OK);
    REQUIRE(api().cuCtxSynchronize() == CUDA_SUCCESS);
    REQUIRE(api().cuMemcpyDtoH(s.data(), ds.ptr, m * 4) == CUDA_SUCCESS);
    int64_t bad = 0;
    for (int64_t i = 0; i < m; ++i) bad += s[i] != static_cast<float>(want[i]);
    CHECK(bad == 0);
  }
}

TEST_CASE("bad arguments to the C API are errors with a message", "[gpu][c_api]") {
  CHECK(kiln_runtime_open(0, nullptr) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(last_error(), Catch::Contains("out is NULL"));
  kiln_bundle* none = reinterpret_cast<kiln_bundle*>(1);
  CHECK(kiln_bundle_load(nullptr, g_add.c_str(), &none) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(none == nullptr);
  CHECK(kiln_bundle_load(g_crt, nullptr, &none) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(kiln_bundle_load(g_crt, "/nonexistent/kiln.bundle", &none) == KILN_ERROR);
  CHECK(none == nullptr);
  CHECK_THAT(last_error(), Catch::Contains("/nonexistent/kiln.bundle"));
  CHECK(kiln_device_name(g_crt, nullptr) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(kiln_runtime_make_current(nullptr) == KILN_ERROR_INVALID_ARGUMENT);

  CBundle b(g_add);
  CHECK(kiln_bundle_find(b.b, "nope") == nullptr);
  CHECK_THAT(last_error(), Catch::Contains("nope"));
  CHECK(kiln_bundle_find(nullptr, "add") == nullptr);
  CHECK(kiln_bundle_use_cache(b.b, "/nonexistent/cache.json") == KILN_ERROR);
  const kiln_kernel* k = kiln_bundle_find(b.b, "add");
  REQUIRE(k != nullptr);

  constexpr int64_t kN = 4096;
  DeviceMemory x(kN * 4), y(kN * 4), z(kN * 4 + 64);
  REQUIRE(api().cuMemsetD8(z.ptr, 0xAB, kN * 4 + 64) == CUDA_SUCCESS);
  const CUdeviceptr X = x.ptr, Y = y.ptr, Z = z.ptr;
  int64_t syms[] = {kN};
  auto launch = [&](std::vector<CUdeviceptr> ptrs, std::vector<int64_t> s) {
    return kiln_launch(k, nullptr, ptrs.data(), ptrs.size(), s.data(), s.size());
  };
  CHECK(kiln_launch(nullptr, nullptr, nullptr, 0, nullptr, 0) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(kiln_launch(k, nullptr, nullptr, 3, syms, 1) == KILN_ERROR_INVALID_ARGUMENT);
  CUdeviceptr ok_ptrs[] = {X, Y, Z};
  CHECK(kiln_launch(k, nullptr, ok_ptrs, 3, nullptr, 1) == KILN_ERROR_INVALID_ARGUMENT);
  CHECK(launch({X, Y}, {kN}) == KILN_ERROR);
  CHECK_THAT(last_error(), Catch::Contains("add: expected 3 pointers"));
  CHECK(launch({X, Y, Z}, {}) == KILN_ERROR);
  CHECK_THAT(last_error(), Catch::Contains("add: expected 1 symbol value"));
  CHECK(launch({X, 0, Z}, {kN}) == KILN_ERROR);
  CHECK_THAT(last_error(), Catch::Contains("argument 2 (y): null pointer"));
  CHECK(launch({X, Y, Z}, {0}) == KILN_ERROR);
  CHECK_THAT(last_error(), Catch::Contains("symbol N = 0 must be > 0"));
  CHECK(launch({X, Y, Z + 2}, {kN}) == KILN_ERROR);
  CHECK_THAT(last_error(), Catch::Contains("argument 3 (z): pointer is not aligned"));
  CHECK(launch({X, Y, X + 4}, {kN}) == KILN_ERROR);  // z overlaps x
  CHECK_THAT(last_error(), Catch::Contains("overlaps"));
  CHECK(launch({X, Y, Y}, {kN}) == KILN_ERROR);  // z is y
  CHECK_THAT(last_error(), Catch::Contains("overlaps"));

  // Nothing was launched: z still holds its poison.
  REQUIRE(api().cuCtxSynchronize() == CUDA_SUCCESS);
  std::vector<uint8_t> hz(kN * 4 + 64);
  REQUIRE(api().cuMemcpyDtoH(hz.data(), Z, hz.size()) == CUDA_SUCCESS);
  CHECK(std::count(hz.begin(), hz.end(), uint8_t{0xAB}) == static_cast<int64_t>(hz.size()));
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ADD_BUNDLE_DIR ROWSUM_BUNDLE_DIR [catch options]\n", argv[0]);
    return 2;
  }
  std::unique_ptr<Runtime> rt;
  if (int rc = open_gpu("kiln_gpu_c_api_tests", rt); rc >= 0) return rc;
  g_rt = rt.get();
  if (kiln_runtime_open(0, &g_crt) != KILN_OK) {
    std::fprintf(stderr, "kiln_gpu_c_api_tests: kiln_runtime_open failed: %s\n", kiln_last_error());
    return 1;
  }
  g_add = argv[1];
  g_rowsum = argv[2];
  argv[2] = argv[0];
  int rc = Catch::Session().run(argc - 2, argv + 2);
  kiln_runtime_close(g_crt);
  return rc;
}
