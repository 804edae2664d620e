// Launch overhead of the runtime against bare cuLaunchKernel, in one process on one GPU.
//
//   kiln_launch_overhead BUNDLE_DIR [CACHE]     (BUNDLE_DIR compiled from examples/add.kiln)
//
// Each method enqueues many back-to-back launches of `add` at N = 1 (the GPU work is a few
// hundred nanoseconds, so the host side is what is timed): host time from the first launch to
// the end of cuStreamSynchronize, divided by the launch count; the median of 7 rounds after a
// warm-up. Methods: bare cuLaunchKernel on the same cubin, Kernel::launch (checks, variant
// choice), the generated typed launcher (compiler/header.h), Kernel::launch with a tuned cache
// attached. Also times Bundle::load and use_cache. Links only the runtime, never LLVM.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "add_kernels.h"  // generated: kiln compile examples/add.kiln --emit=header
#include "bundle/cache.h"
#include "runtime/driver.h"
#include "runtime/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Median microseconds per launch of `launch` over `count` back-to-back launches.
double per_launch_us(const kiln::DriverApi& api, CUstream stream,
                     const std::function<void()>& launch, int count) {
  for (int i = 0; i < 2000; ++i) launch();
  api.cuStreamSynchronize(stream);
  std::vector<double> rounds;
  for (int r = 0; r < 7; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < count; ++i) launch();
    api.cuStreamSynchronize(stream);
    rounds.push_back(ms_since(t0) * 1000.0 / count);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

int fail(const std::string& what) {
  std::fprintf(stderr, "launch_overhead: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return fail("usage: kiln_launch_overhead BUNDLE_DIR [CACHE]");
  auto rt = kiln::Runtime::open();
  if (!rt.ok()) {
    std::printf("[SKIP] %s\n", rt.message().c_str());
    return 77;
  }
  const kiln::DriverApi& api = (*rt)->driver();
  auto t0 = Clock::now();
  auto bundle = kiln::Bundle::load(**rt, argv[1]);
  double load_ms = ms_since(t0);
  if (!bundle.ok()) return fail(bundle.message());
  double cache_ms = -1;
  kiln::cache::Cache cache;
  if (argc > 2) {
    t0 = Clock::now();
    auto c = kiln::cache::load(argv[2]);
    if (!c.ok()) return fail(c.message());
    cache = std::move(c.value());
    cache_ms = ms_since(t0);
  }
  auto kernels = kiln_kernels::Kernels::find(**bundle);
  if (!kernels.ok()) return fail(kernels.message());
  const kiln::Kernel& add = *kernels->add;

  // The bare path: the same cubin loaded directly, the same grid.
  const kiln::bundle::Variant& v = add.info().steps[0].variants[add.chosen_variant(0)];
  std::string cubin;
  for (const auto& im : v.images) {
    if (im.arch == (*rt)->device().arch() && !im.cubin.empty())
      cubin = std::string(argv[1]) + "/" + im.cubin;
  }
  if (cubin.empty()) return fail("no cubin for this device in the bundle");
  std::ifstream f(cubin, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string image = ss.str();
  CUmodule module;
  CUfunction fn;
  if (api.cuModuleLoadDataEx(&module, image.data(), 0, nullptr, nullptr) ||
      api.cuModuleGetFunction(&fn, module, v.entry.c_str())) {
    return fail("cannot load " + cubin);
  }

  CUstream stream;
  CUdeviceptr x, y, z;
  api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  api.cuMemAlloc(&x, 256);
  api.cuMemAlloc(&y, 256);
  api.cuMemAlloc(&z, 256);
  int64_t n = 1;
  void* args[] = {&x, &y, &z, &n};
  CUdeviceptr ptrs[] = {x, y, z};
  int64_t syms[] = {n};
  const int count = 20000;
  double bare = per_launch_us(
      api, stream,
      [&] { api.cuLaunchKernel(fn, 1, 1, 1, v.block_threads, 1, 1, 0, stream, args, nullptr); },
      count);
  double runtime = per_launch_us(
      api, stream, [&] { (void)add.launch(stream, ptrs, syms); }, count);
  auto* fx = reinterpret_cast<const float*>(x);
  auto* fy = reinterpret_cast<const float*>(y);
  auto* fz = reinterpret_cast<float*>(z);
  double wrapper = per_launch_us(
      api, stream, [&] { (void)kiln_kernels::add(add, stream, fx, fy, fz, n); }, count);
  double tuned = -1;
  if (argc > 2) {
    (*bundle)->use_cache(cache);
    tuned = per_launch_us(
        api, stream, [&] { (void)add.launch(stream, ptrs, syms); }, count);
  }
  kiln::Status last = add.launch(stream, ptrs, syms);
  api.cuStreamSynchronize(stream);

  std::printf("device: %s (%s), driver %d; %d launches per round, median of 7\n",
              (*rt)->device().name.c_str(), (*rt)->device().arch().c_str(),
              (*rt)->device().driver_version, count);
  std::printf("bundle load: %.2f ms (%zu variants)%s\n", load_ms,
              add.info().steps[0].variants.size(), cache_ms >= 0 ? "" : "");
  if (cache_ms >= 0)
    std::printf("cache load: %.2f ms (%zu entries)\n", cache_ms, cache.entries.size());
  std::printf("%-34s %10s %14s\n", "method", "us/launch", "over bare (us)");
  auto row = [&](const char* name, double us) {
    std::printf("%-34s %10.3f %14.3f\n", name, us, us - bare);
  };
  row("bare cuLaunchKernel", bare);
  row("Kernel::launch", runtime);
  row("generated launcher (header)", wrapper);
  if (tuned >= 0) row("Kernel::launch with a tuned cache", tuned);
  if (!last.ok()) return fail(last.message());
  return 0;
}
