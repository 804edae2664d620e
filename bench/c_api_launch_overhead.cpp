// The cost of one launch through the C API (runtime/c_api.h), the baseline that
// bench/python_launch_overhead.py compares the Python binding with.
//
//   kiln_c_api_launch_overhead BUNDLE_DIR [COUNT]     (BUNDLE_DIR compiled from examples/add.kiln)
//
// Enqueues COUNT (default 20000) back-to-back kiln_launch calls of `add` at N = 1 on the
// default stream (the GPU work is tiny, so the host side is what is timed): host time from
// the first launch to the end of cuStreamSynchronize, divided by COUNT; the median of 7 rounds
// after a warm-up of 2000 launches. Only C API calls launch; the three 4-byte buffers come
// from the driver library the runtime loads (KILN_CUDA_DRIVER, else libcuda.so.1), so the
// program also runs against the tests' fake driver. Prints, on its last lines,
//   device NAME
//   c_api_us_per_launch 2.345
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/c_api.h"

namespace {

int die(const char* what) {
  std::fprintf(stderr, "c_api_launch_overhead: %s: %s\n", what, kiln_last_error());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s BUNDLE_DIR [COUNT]\n", argv[0]);
    return 1;
  }
  const int count = argc > 2 ? std::atoi(argv[2]) : 20000;
  if (count < 1) {
    std::fprintf(stderr, "c_api_launch_overhead: COUNT must be >= 1\n");
    return 1;
  }
  kiln_runtime* rt = nullptr;
  const int rc = kiln_runtime_open(0, &rt);
  if (rc == KILN_ERROR_NO_DEVICE) {
    std::fprintf(stderr, "c_api_launch_overhead: skipped: %s\n", kiln_last_error());
    return 77;
  }
  if (rc != KILN_OK) return die("kiln_runtime_open");
  kiln_bundle* bundle = nullptr;
  if (kiln_bundle_load(rt, argv[1], &bundle) != KILN_OK) return die("kiln_bundle_load");
  const kiln_kernel* add = kiln_bundle_find(bundle, "add");
  if (add == nullptr) return die("kiln_bundle_find");

  // The same driver library as the runtime's (already loaded: dlopen returns its handle).
  const char* env = std::getenv("KILN_CUDA_DRIVER");
  void* lib = dlopen(env != nullptr && *env != '\0' ? env : "libcuda.so.1", RTLD_NOW);
  if (lib == nullptr) {
    std::fprintf(stderr, "c_api_launch_overhead: dlopen: %s\n", dlerror());
    return 1;
  }
  using Alloc = CUresult (*)(CUdeviceptr*, size_t);
  using Free = CUresult (*)(CUdeviceptr);
  using Sync = CUresult (*)(CUstream);
  auto alloc = reinterpret_cast<Alloc>(dlsym(lib, "cuMemAlloc_v2"));
  auto release = reinterpret_cast<Free>(dlsym(lib, "cuMemFree_v2"));
  auto sync = reinterpret_cast<Sync>(dlsym(lib, "cuStreamSynchronize"));
  if (alloc == nullptr || release == nullptr || sync == nullptr) {
    std::fprintf(stderr,
                 "c_api_launch_overhead: the driver lacks cuMemAlloc_v2, cuMemFree_v2 "
                 "or cuStreamSynchronize\n");
    return 1;
  }
  CUdeviceptr ptrs[3] = {};
  for (CUdeviceptr& p : ptrs) {
    if (alloc(&p, 256) != CUDA_SUCCESS) {
      std::fprintf(stderr, "c_api_launch_overhead: cuMemAlloc failed\n");
      return 1;
    }
  }
  const int64_t symbols[1] = {1};
  auto run = [&](int n) -> bool {
    for (int i = 0; i < n; ++i) {
      if (kiln_launch(add, nullptr, ptrs, 3, symbols, 1) != KILN_OK) return false;
    }
    return sync(nullptr) == CUDA_SUCCESS;
  };
  if (!run(2000)) return die("kiln_launch");
  std::vector<double> rounds;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!run(count)) return die("kiln_launch");
    const std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - t0;
    rounds.push_back(us.count() / count);
  }
  std::sort(rounds.begin(), rounds.end());
  const char* name = "?";
  (void)kiln_device_name(rt, &name);
  std::printf("launches %d x 7 rounds, median\n", count);
  std::printf("device %s\n", name);
  std::printf("c_api_us_per_launch %.3f\n", rounds[3]);
  for (CUdeviceptr p : ptrs) (void)release(p);
  kiln_bundle_free(bundle);
  kiln_runtime_close(rt);
  return 0;
}
