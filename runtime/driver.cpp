// Resolves the Driver API from libcuda.so.1 (see driver.h).
//
// Each entry point is looked up under the name cuda.h maps it to (the macro-expanded name,
// e.g. cuMemAlloc_v2), which is the symbol a program linked against libcuda would bind.
// cuEventElapsedTime_v2 only exists in drivers >= 12.8; older drivers export the original
// cuEventElapsedTime with the same signature, which we accept instead.
#include "runtime/driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace kiln {
namespace {

#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)  // stringifies after macro expansion: the exported name

// Older exported names accepted when the versioned one is missing.
const char* fallback_symbol(std::string_view symbol) {
  if (symbol == "cuEventElapsedTime_v2") return "cuEventElapsedTime";
  return nullptr;
}

void* resolve(void* lib, const char* symbol) {
  if (void* p = dlsym(lib, symbol)) return p;
  if (const char* old = fallback_symbol(symbol)) return dlsym(lib, old);
  return nullptr;
}

}  // namespace

Status load_driver_api(void*& lib, DriverApi& api) {
  // KILN_CUDA_DRIVER names another driver library: the tests' fake driver
  // (tests/fake_driver), or a driver outside the loader's path.
  const char* env = std::getenv("KILN_CUDA_DRIVER");
  const std::string library = env != nullptr && *env != '\0' ? env : "libcuda.so.1";
  lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Status::error("no CUDA driver: " + library + " could not be loaded (" +
                             (why ? why : "unknown reason") + ")",
                         StatusCode::no_driver);
  }
#define KILN_RESOLVE_OPTIONAL(name) \
  api.name = reinterpret_cast<decltype(api.name)>(resolve(lib, KILN_STR(name)));
#define KILN_RESOLVE(name)                                                                        \
  KILN_RESOLVE_OPTIONAL(name)                                                                     \
  if (api.name == nullptr) {                                                                      \
    return Status::error("CUDA driver too old: " + library + " does not export " KILN_STR(name)); \
  }
  KILN_DRIVER_FUNCTIONS(KILN_RESOLVE)
  KILN_DRIVER_OPTIONAL_FUNCTIONS(KILN_RESOLVE_OPTIONAL)
#undef KILN_RESOLVE
#undef KILN_RESOLVE_OPTIONAL
  return Status::ok_status();
}

CUlaunchConfig cluster_launch_config(unsigned cluster, unsigned grid, unsigned block,
                                     unsigned smem_bytes, CUstream stream,
                                     CUlaunchAttribute& attr) {
  attr = CUlaunchAttribute{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = cluster;
  attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = block;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = smem_bytes;
  config.hStream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  return config;
}

CUlaunchConfig launch_config(unsigned cluster, bool dependent, unsigned grid, unsigned block,
                             unsigned smem_bytes, CUstream stream,
                             std::array<CUlaunchAttribute, 2>& attrs) {
  CUlaunchConfig config = cluster_launch_config(cluster, grid, block, smem_bytes, stream, attrs[0]);
  config.numAttrs = cluster > 1 ? 1 : 0;
  if (dependent) {
    CUlaunchAttribute& a = attrs[config.numAttrs++];
    a = CUlaunchAttribute{};
    a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a.value.programmaticStreamSerializationAllowed = 1;
  }
  config.attrs = attrs.data();
  return config;
}

std::string describe_cuda_error(const DriverApi& api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(r, &name) != CUDA_SUCCESS ||
      name == nullptr) {
    return "CUresult " + std::to_string(static_cast<int>(r));
  }
  std::string s = name;
  if (api.cuGetErrorString != nullptr && api.cuGetErrorString(r, &text) == CUDA_SUCCESS &&
      text != nullptr) {
    s += ": ";
    s += text;
  }
  return s;
}

}  // namespace kiln
