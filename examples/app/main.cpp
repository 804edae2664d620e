// Runs the SwiGLU gate through Kiln: open the GPU, load the bundle that kiln_add_kernels built
// (and, if given, a tuned cache from `kiln tune`), launch through the generated typed launcher,
// check against the CPU and print the time.
//
//   app [CACHE.json]     exit 0: correct; 1: an error or a wrong result; 77: no GPU here
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "runtime/driver.h"   // kiln::DriverApi: libcuda's entry points, loaded by the runtime
#include "runtime/runtime.h"  // kiln::Runtime, kiln::Bundle, kiln::Kernel
#include "swiglu.h"           // generated: kiln_kernels::swiglu(), kiln_kernels::Kernels

namespace {

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "app: %s\n", message.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  auto rt = kiln::Runtime::open();
  if (!rt.ok()) {
    std::printf("[SKIP] %s\n", rt.message().c_str());
    return 77;
  }
  const kiln::DriverApi& cu = (*rt)->driver();
  auto check = [&](CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) die(std::string(what) + ": " + (*rt)->describe(r));
  };

  auto bundle = kiln::Bundle::load(**rt, KILN_BUNDLE_SWIGLU);
  if (!bundle.ok()) die(bundle.message());
  if (argc > 1) {  // tuned winners: used for the shapes (or shape buckets) they were tuned for
    auto cache = kiln::cache::load(argv[1]);
    if (!cache.ok()) die(cache.message());
    for (const std::string& ignored : (*bundle)->use_cache(*cache)) {
      std::printf("cache: ignored %s\n", ignored.c_str());
    }
  }
  auto kernels = kiln_kernels::Kernels::find(**bundle);
  if (!kernels.ok()) die(kernels.message());

  const int64_t M = 4096, N = 4096;
  const size_t n = M * N, bytes = n * sizeof(float);
  std::vector<float> a(n), b(n), y(n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  for (size_t i = 0; i < n; ++i) a[i] = uniform(rng), b[i] = uniform(rng);

  CUdeviceptr da, db, dy;
  check(cu.cuMemAlloc(&da, bytes), "cuMemAlloc");
  check(cu.cuMemAlloc(&db, bytes), "cuMemAlloc");
  check(cu.cuMemAlloc(&dy, bytes), "cuMemAlloc");
  check(cu.cuMemcpyHtoD(da, a.data(), bytes), "cuMemcpyHtoD");
  check(cu.cuMemcpyHtoD(db, b.data(), bytes), "cuMemcpyHtoD");

  // The launcher takes typed device pointers, inputs then outputs, then the symbols M and N.
  auto run = [&] {
    kiln::Status s = kiln_kernels::swiglu(
        *kernels->swiglu, /*stream=*/nullptr, reinterpret_cast<const float*>(da),
        reinterpret_cast<const float*>(db), reinterpret_cast<float*>(dy), M, N);
    if (!s.ok()) die(s.message());
  };
  run();  // warm-up
  check(cu.cuCtxSynchronize(), "swiglu");
  const int reps = 20;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) run();
  check(cu.cuCtxSynchronize(), "swiglu");
  double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      reps;
  check(cu.cuMemcpyDtoH(y.data(), dy, bytes), "cuMemcpyDtoH");

  // Check a few hundred elements spread over the whole output against the CPU.
  int checked = 0, wrong = 0;
  for (size_t i = 0; i < n; i += n / 500 + 1, ++checked) {
    float expect = a[i] / (1.0f + std::exp(-a[i])) * b[i];
    if (std::fabs(y[i] - expect) > 1e-5f + 1e-5f * std::fabs(expect)) {
      if (++wrong <= 5) std::printf("y[%zu] = %g, expected %g\n", i, y[i], expect);
    }
  }
  std::printf(
      "swiglu M=%lld N=%lld on %s: %d of %d checked elements wrong; %.1f us per launch "
      "(%.0f GB/s)\n",
      static_cast<long long>(M), static_cast<long long>(N), (*rt)->device().name.c_str(), wrong,
      checked, us, 3.0 * bytes / us / 1e3);

  cu.cuMemFree(da);
  cu.cuMemFree(db);
  cu.cuMemFree(dy);
  return wrong == 0 ? 0 : 1;
}
