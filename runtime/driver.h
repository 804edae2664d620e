// The CUDA Driver API entry points Kiln uses, resolved from libcuda.so.1 with dlopen/dlsym.
//
// Nothing in Kiln links libcuda: a program that uses the runtime starts on any machine and
// reports "no CUDA driver" where there is none. Each member of DriverApi is named after the
// cuda.h function and has its exact type; cuda.h maps several names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2) and those macros apply to the member names as well, so
// `api.cuMemAlloc(&p, n)` calls the entry point that linking libcuda would have called.
// Invariant: after a successful load_driver_api every member of KILN_DRIVER_FUNCTIONS is
// non-null; a member of KILN_DRIVER_OPTIONAL_FUNCTIONS is null when the driver is too old to
// export it, and its caller skips what it was for.
#pragma once

#include <cuda.h>

#include <array>
#include <string>

#include "bundle/status.h"

namespace kiln {

// X(name) for every entry point; `name` is spelled as in cuda.h.
#define KILN_DRIVER_FUNCTIONS(X) \
  X(cuGetErrorName)              \
  X(cuGetErrorString)            \
  X(cuInit)                      \
  X(cuDriverGetVersion)          \
  X(cuDeviceGet)                 \
  X(cuDeviceGetCount)            \
  X(cuDeviceGetName)             \
  X(cuDeviceGetAttribute)        \
  X(cuDeviceTotalMem)            \
  X(cuDevicePrimaryCtxRetain)    \
  X(cuDevicePrimaryCtxRelease)   \
  X(cuCtxGetCurrent)             \
  X(cuCtxSetCurrent)             \
  X(cuCtxSynchronize)            \
  X(cuModuleLoadDataEx)          \
  X(cuModuleUnload)              \
  X(cuModuleGetFunction)         \
  X(cuFuncGetAttribute)          \
  X(cuFuncSetAttribute)          \
  X(cuLaunchKernel)              \
  X(cuMemGetInfo)                \
  X(cuMemAlloc)                  \
  X(cuMemFree)                   \
  X(cuMemcpyHtoD)                \
  X(cuMemcpyDtoH)                \
  X(cuMemcpyHtoDAsync)           \
  X(cuMemcpyDtoHAsync)           \
  X(cuMemcpyDtoDAsync)           \
  X(cuMemsetD8)                  \
  X(cuMemsetD8Async)             \
  X(cuMemsetD32Async)            \
  X(cuStreamCreate)              \
  X(cuStreamDestroy)             \
  X(cuStreamSynchronize)         \
  X(cuEventCreate)               \
  X(cuEventRecord)               \
  X(cuEventSynchronize)          \
  X(cuEventElapsedTime)          \
  X(cuEventDestroy)              \
  X(cuStreamWaitEvent)           \
  X(cuStreamBeginCapture)        \
  X(cuStreamEndCapture)          \
  X(cuGraphInstantiate)          \
  X(cuGraphLaunch)               \
  X(cuGraphExecDestroy)          \
  X(cuGraphDestroy)

// X(name) for entry points newer than the oldest driver Kiln runs on.
#define KILN_DRIVER_OPTIONAL_FUNCTIONS(X)   \
  X(cuFuncGetParamInfo) /* CUDA 12.4 */     \
  X(cuMemPoolCreate)    /* CUDA 11.2 */     \
  X(cuMemPoolDestroy)                       \
  X(cuMemPoolSetAttribute)                  \
  X(cuMemAllocFromPoolAsync)                \
  X(cuMemFreeAsync)                         \
  X(cuTensorMapEncodeTiled) /* CUDA 12.0 */ \
  X(cuLaunchKernelEx)                       \
  X(cuOccupancyMaxActiveClusters)           \
  X(cuStreamIsCapturing) /* CUDA 10.0 */    \
  X(cuStreamGetId)       /* CUDA 12.0 */

/// Function pointers into libcuda, one per entry point of KILN_DRIVER_FUNCTIONS and
/// KILN_DRIVER_OPTIONAL_FUNCTIONS.
struct DriverApi {
#define KILN_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_DRIVER_FUNCTIONS(KILN_DRIVER_MEMBER)
  KILN_DRIVER_OPTIONAL_FUNCTIONS(KILN_DRIVER_MEMBER)
#undef KILN_DRIVER_MEMBER
};

/// Opens libcuda.so.1 and resolves every entry point into `api`; `lib` receives the dlopen
/// handle (which is never closed: the driver keeps threads that outlive it). Fails with
/// "no CUDA driver: libcuda.so.1 could not be loaded (...)" or names a missing symbol (of
/// KILN_DRIVER_FUNCTIONS: optional ones are left null).
/// Calls no driver function, not even cuInit.
Status load_driver_api(void*& lib, DriverApi& api);

/// A launch of `grid` x `block` threads (along x) with `smem_bytes` of dynamic shared memory
/// on `stream`, in clusters of `cluster` blocks along x: what cuLaunchKernelEx and
/// cuOccupancyMaxActiveClusters take. `attr` holds the cluster dimension that the returned
/// config points at: it must outlive the config's use.
CUlaunchConfig cluster_launch_config(unsigned cluster, unsigned grid, unsigned block,
                                     unsigned smem_bytes, CUstream stream, CUlaunchAttribute& attr);

/// The same launch for cuLaunchKernelEx, in clusters of `cluster` blocks where `cluster` > 1,
/// and with `dependent`, a programmatic dependent launch: the grid may start before the kernel
/// before it in the stream ends (it waits for it itself: bundle::KernelInfo::dependent_launch).
/// `attrs` holds the attributes the config points at.
CUlaunchConfig launch_config(unsigned cluster, bool dependent, unsigned grid, unsigned block,
                             unsigned smem_bytes, CUstream stream,
                             std::array<CUlaunchAttribute, 2>& attrs);

/// A driver error code as "CUDA_ERROR_X: description" (or "CUresult N" when unknown).
std::string describe_cuda_error(const DriverApi& api, CUresult r);

}  // namespace kiln
