// A fake CUDA driver (libkiln_fake_cuda.so) for host-side tests of the runtime: the runtime
// loads it instead of libcuda.so.1 when KILN_CUDA_DRIVER names it (runtime/driver.cpp).
//
// It exports every entry point the runtime resolves, under the names cuda.h maps them to, and
// behaves like one sm_90 device whose memory is host memory: allocations are malloc'ed,
// copies and memsets really copy and set, so the argument checks, the heuristic, the buffer
// and workspace layout and the C API run end to end. Kernels do not run: cuLaunchKernel
// records the launch (entry, grid, block, shared memory, the first arguments) for the test to
// read through the kiln_fake_* functions below.
//
// The environment shapes it:
//   KILN_FAKE_CUDA_FAIL=cuInit,cuModuleLoadDataEx   these entry points return
//                                                   CUDA_ERROR_UNKNOWN (999)
//   KILN_FAKE_CUDA_SMS=N                            the multiprocessor count (default 132)
//   KILN_FAKE_CUDA_CC=MAJOR.MINOR                   the compute capability (default 9.0)
//   KILN_FAKE_CUDA_DEVICES=N                        the device count (default 1)
//   KILN_FAKE_CUDA_L2_BYTES=N                       the L2's size (default 0: not said)
//   KILN_FAKE_CUDA_CAPTURING=1                      every stream is in graph capture
//                                                   (cuStreamIsCapturing)
#include <cuda.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct Function {
  std::string entry;
};

struct Launch {
  std::string entry;
  unsigned grid = 0, block = 0, smem = 0;
  unsigned cluster = 1;        // blocks per cluster (cuLaunchKernelEx)
  bool dependent = false;      // a programmatic dependent launch (cuLaunchKernelEx)
  std::vector<uint64_t> args;  // the first arg_count arguments, 8 bytes each
};

struct State {
  std::mutex mu;
  std::vector<Launch> launches;
  std::map<uint64_t, size_t> allocations;         // address -> bytes
  std::vector<std::pair<uint64_t, int>> memsets;  // (address, byte)
  int pool_allocations = 0;                       // cuMemAllocFromPoolAsync calls
  int event_records = 0, event_waits = 0;         // cuEventRecord, cuStreamWaitEvent calls
  unsigned long long next_stream_id = 100;
  int arg_count = 0;
  int contexts = 0;  // primary contexts retained and not released
  CUcontext current = nullptr;
};

State& state() {
  static State* s = new State();  // never destroyed: threads may call during exit
  return *s;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// Whether `name` is listed in KILN_FAKE_CUDA_FAIL.
bool fails(const char* name) {
  const char* v = std::getenv("KILN_FAKE_CUDA_FAIL");
  if (v == nullptr) return false;
  const std::string list = std::string(",") + v + ",";
  return list.find(std::string(",") + name + ",") != std::string::npos;
}

#define FAKE_FAIL_IF_ASKED(name) \
  if (fails(name)) return CUDA_ERROR_UNKNOWN

CUcontext the_context() {
  return reinterpret_cast<CUcontext>(uintptr_t{0xC0});
}

void* host(CUdeviceptr p) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

CUresult allocate(CUdeviceptr* p, size_t bytes) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // 256-byte aligned, as the driver's allocations are.
  void* mem = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
  if (mem == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(mem));
  std::lock_guard lock(state().mu);
  state().allocations[*p] = bytes;
  return CUDA_SUCCESS;
}

CUresult release(CUdeviceptr p) {
  std::lock_guard lock(state().mu);
  auto it = state().allocations.find(p);
  if (it == state().allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  state().allocations.erase(it);
  std::free(host(p));
  return CUDA_SUCCESS;
}

// Whether [p, p + bytes) lies inside one allocation.
bool inside(CUdeviceptr p, size_t bytes) {
  std::lock_guard lock(state().mu);
  auto it = state().allocations.upper_bound(p);
  if (it == state().allocations.begin()) return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

}  // namespace

// ---- what the tests read ----

FAKE_EXPORT void kiln_fake_reset() {
  std::lock_guard lock(state().mu);
  state().launches.clear();
  state().memsets.clear();
  state().pool_allocations = 0;
  state().event_records = 0;
  state().event_waits = 0;
}
/// Each recorded launch keeps its first `n` arguments (the runtime's ABI: 8 bytes each).
FAKE_EXPORT void kiln_fake_set_arg_count(int n) {
  std::lock_guard lock(state().mu);
  state().arg_count = n;
}
FAKE_EXPORT int kiln_fake_launch_count() {
  std::lock_guard lock(state().mu);
  return static_cast<int>(state().launches.size());
}
/// Launch i: its entry name (valid until the next reset), grid, block, shared memory bytes.
FAKE_EXPORT const char* kiln_fake_launch(int i, unsigned* grid, unsigned* block, unsigned* smem) {
  std::lock_guard lock(state().mu);
  const Launch& l = state().launches.at(static_cast<size_t>(i));
  *grid = l.grid;
  *block = l.block;
  *smem = l.smem;
  return l.entry.c_str();
}
/// Blocks per cluster of launch i (1: launched without clusters).
FAKE_EXPORT unsigned kiln_fake_launch_cluster(int i) {
  std::lock_guard lock(state().mu);
  return state().launches.at(static_cast<size_t>(i)).cluster;
}
/// Whether launch i was a programmatic dependent launch (may overlap the kernel before it).
FAKE_EXPORT int kiln_fake_launch_dependent(int i) {
  std::lock_guard lock(state().mu);
  return state().launches.at(static_cast<size_t>(i)).dependent ? 1 : 0;
}
/// Argument `a` of launch `i` (0 when it was not recorded).
FAKE_EXPORT uint64_t kiln_fake_launch_arg(int i, int a) {
  std::lock_guard lock(state().mu);
  const Launch& l = state().launches.at(static_cast<size_t>(i));
  return static_cast<size_t>(a) < l.args.size() ? l.args[static_cast<size_t>(a)] : 0;
}
/// Allocations made and not freed.
FAKE_EXPORT int kiln_fake_live_allocations() {
  std::lock_guard lock(state().mu);
  return static_cast<int>(state().allocations.size());
}
/// cuMemAllocFromPoolAsync calls since the last reset.
FAKE_EXPORT int kiln_fake_pool_allocations() {
  std::lock_guard lock(state().mu);
  return state().pool_allocations;
}
/// cuEventRecord and cuStreamWaitEvent calls since the last reset.
FAKE_EXPORT int kiln_fake_event_records() {
  std::lock_guard lock(state().mu);
  return state().event_records;
}
FAKE_EXPORT int kiln_fake_event_waits() {
  std::lock_guard lock(state().mu);
  return state().event_waits;
}
FAKE_EXPORT int kiln_fake_memset_count() {
  std::lock_guard lock(state().mu);
  return static_cast<int>(state().memsets.size());
}
FAKE_EXPORT int kiln_fake_memset_byte(int i) {
  std::lock_guard lock(state().mu);
  return state().memsets.at(static_cast<size_t>(i)).second;
}

// ---- the driver ----

FAKE_EXPORT CUresult cuGetErrorName(CUresult r, const char** s) {
  switch (r) {
    case CUDA_SUCCESS:
      *s = "CUDA_SUCCESS";
      break;
    case CUDA_ERROR_INVALID_VALUE:
      *s = "CUDA_ERROR_INVALID_VALUE";
      break;
    case CUDA_ERROR_OUT_OF_MEMORY:
      *s = "CUDA_ERROR_OUT_OF_MEMORY";
      break;
    case CUDA_ERROR_NOT_SUPPORTED:
      *s = "CUDA_ERROR_NOT_SUPPORTED";
      break;
    case CUDA_ERROR_UNKNOWN:
      *s = "CUDA_ERROR_UNKNOWN";
      break;
    default:
      *s = "CUDA_ERROR_FAKE";
      break;
  }
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGetErrorString(CUresult r, const char** s) {
  *s = r == CUDA_ERROR_UNKNOWN ? "unknown error (fake driver: KILN_FAKE_CUDA_FAIL)"
                               : "fake driver error";
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuInit(unsigned) {
  FAKE_FAIL_IF_ASKED("cuInit");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDriverGetVersion(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGetCount(int* n) {
  FAKE_FAIL_IF_ASKED("cuDeviceGetCount");
  *n = env_int("KILN_FAKE_CUDA_DEVICES", 1);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  FAKE_FAIL_IF_ASKED("cuDeviceGet");
  *d = ordinal;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice) {
  std::snprintf(name, static_cast<size_t>(len), "%s", "Kiln Fake GPU");
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  FAKE_FAIL_IF_ASKED("cuDeviceGetAttribute");
  const char* cc = std::getenv("KILN_FAKE_CUDA_CC");
  int major = 9, minor = 0;
  if (cc != nullptr && std::sscanf(cc, "%d.%d", &major, &minor) != 2) major = 9, minor = 0;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *v = major;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *v = minor;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *v = env_int("KILN_FAKE_CUDA_SMS", 132);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *v = 232448;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *v = env_int("KILN_FAKE_CUDA_L2_BYTES", 0);
      break;
    default:
      *v = 0;
      break;
  }
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceTotalMem(size_t* bytes, CUdevice) {
  *bytes = size_t{80} << 30;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice) {
  FAKE_FAIL_IF_ASKED("cuDevicePrimaryCtxRetain");
  std::lock_guard lock(state().mu);
  ++state().contexts;
  *c = the_context();
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice) {
  std::lock_guard lock(state().mu);
  --state().contexts;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext* c) {
  *c = state().current;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext c) {
  FAKE_FAIL_IF_ASKED("cuCtxSetCurrent");
  state().current = c;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxSynchronize() {
  return CUDA_SUCCESS;
}

// A module is the set of its entry names: every `.entry NAME` of a PTX text, and for a cubin
// (ELF) every `.text.NAME` section name in it.
FAKE_EXPORT CUresult cuModuleLoadDataEx(CUmodule* m, const void* image, unsigned, CUjit_option*,
                                        void**) {
  FAKE_FAIL_IF_ASKED("cuModuleLoadDataEx");
  auto* entries = new std::set<std::string>();
  const char* p = static_cast<const char*>(image);
  if (std::memcmp(p,
                  "\x7f"
                  "ELF",
                  4) == 0) {
    // Section names live in the string table; scan the bytes for ".text." names.
    const auto* e = reinterpret_cast<const unsigned char*>(p);
    uint64_t shoff = 0;
    uint16_t shentsize = 0, shnum = 0;
    std::memcpy(&shoff, e + 0x28, 8);
    std::memcpy(&shentsize, e + 0x3A, 2);
    std::memcpy(&shnum, e + 0x3C, 2);
    const size_t end = shoff + size_t{shentsize} * shnum;  // the header table closes the file
    for (size_t i = 0; i + 6 < end; ++i) {
      if (std::memcmp(p + i, ".text.", 6) == 0) {
        entries->insert(std::string(p + i + 6));
        i += 6;
      }
    }
  } else {
    const std::string text(p);
    for (size_t at = text.find(".entry "); at != std::string::npos;
         at = text.find(".entry ", at + 1)) {
      size_t b = at + 7, e = text.find_first_of("( \n", b);
      entries->insert(text.substr(b, e - b));
    }
  }
  *m = reinterpret_cast<CUmodule>(entries);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuModuleUnload(CUmodule m) {
  delete reinterpret_cast<std::set<std::string>*>(m);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  const auto* entries = reinterpret_cast<const std::set<std::string>*>(m);
  if (entries->count(name) == 0) return CUDA_ERROR_NOT_FOUND;
  // Functions live as long as the process: the runtime keeps them only while the module does.
  static std::mutex mu;
  static auto* functions = new std::map<std::string, Function>();
  std::lock_guard lock(mu);
  Function& fn = (*functions)[name];
  fn.entry = name;
  *f = reinterpret_cast<CUfunction>(&fn);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuFuncGetAttribute(int* v, CUfunction_attribute, CUfunction) {
  *v = 0;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
  return CUDA_SUCCESS;
}
namespace {
CUresult record_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned smem, unsigned cluster, void** params,
                       void** extra) {
  if (f == nullptr || params == nullptr || extra != nullptr || gx == 0 || bx == 0 || bx > 1024 ||
      gy != 1 || gz != 1 || by != 1 || bz != 1 || smem > 232448 || cluster == 0 || cluster > 8 ||
      gx % cluster != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Launch l;
  l.entry = reinterpret_cast<const Function*>(f)->entry;
  l.grid = gx;
  l.block = bx;
  l.smem = smem;
  l.cluster = cluster;
  std::lock_guard lock(state().mu);
  for (int i = 0; i < state().arg_count; ++i) {
    uint64_t v = 0;
    std::memcpy(&v, params[i], 8);
    l.args.push_back(v);
  }
  state().launches.push_back(std::move(l));
  return CUDA_SUCCESS;
}

// The cluster dimension among a launch config's attributes: 1 without one, 0 when it is not
// a cluster along x.
unsigned cluster_of(const CUlaunchConfig& c) {
  for (unsigned i = 0; i < c.numAttrs; ++i) {
    if (c.attrs[i].id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) continue;
    const auto& d = c.attrs[i].value.clusterDim;
    return d.y == 1 && d.z == 1 ? d.x : 0;
  }
  return 1;
}
}  // namespace

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream,
                                    void** params, void** extra) {
  FAKE_FAIL_IF_ASKED("cuLaunchKernel");
  return record_launch(f, gx, gy, gz, bx, by, bz, smem, 1, params, extra);
}
FAKE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** params,
                                      void** extra) {
  FAKE_FAIL_IF_ASKED("cuLaunchKernelEx");
  if (c == nullptr || (c->numAttrs > 0 && c->attrs == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  bool dependent = false;
  for (unsigned i = 0; i < c->numAttrs; ++i) {
    const CUlaunchAttribute& a = c->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) {
      dependent = a.value.programmaticStreamSerializationAllowed != 0;
    } else if (a.id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      return CUDA_ERROR_INVALID_VALUE;  // an attribute the runtime never sets
    }
  }
  const CUresult r =
      record_launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                    c->blockDimZ, c->sharedMemBytes, cluster_of(*c), params, extra);
  if (r == CUDA_SUCCESS) {
    std::lock_guard lock(state().mu);
    state().launches.back().dependent = dependent;
  }
  return r;
}
// Clusters of the config's size that the fake device holds: its SMs (KILN_FAKE_CUDA_SMS) over
// the cluster size, or KILN_FAKE_CUDA_CLUSTERS.
FAKE_EXPORT CUresult cuOccupancyMaxActiveClusters(int* n, CUfunction f, const CUlaunchConfig* c) {
  FAKE_FAIL_IF_ASKED("cuOccupancyMaxActiveClusters");
  const unsigned cluster = c ? cluster_of(*c) : 0;
  if (n == nullptr || f == nullptr || cluster == 0) return CUDA_ERROR_INVALID_VALUE;
  *n = env_int("KILN_FAKE_CUDA_CLUSTERS",
               env_int("KILN_FAKE_CUDA_SMS", 132) / static_cast<int>(cluster));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemGetInfo(size_t* free_bytes, size_t* total) {
  *free_bytes = size_t{70} << 30;
  *total = size_t{80} << 30;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemAlloc(CUdeviceptr* p, size_t bytes) {
  FAKE_FAIL_IF_ASKED("cuMemAlloc");
  return allocate(p, bytes);
}
FAKE_EXPORT CUresult cuMemFree(CUdeviceptr p) {
  return release(p);
}
FAKE_EXPORT CUresult cuMemcpyHtoD(CUdeviceptr d, const void* h, size_t n) {
  if (!inside(d, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(host(d), h, n);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemcpyDtoH(void* h, CUdeviceptr d, size_t n) {
  if (!inside(d, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(h, host(d), n);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void* h, size_t n, CUstream) {
  return cuMemcpyHtoD(d, h, n);
}
FAKE_EXPORT CUresult cuMemcpyDtoHAsync(void* h, CUdeviceptr d, size_t n, CUstream) {
  return cuMemcpyDtoH(h, d, n);
}
FAKE_EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream) {
  if (!inside(d, n) || !inside(s, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memmove(host(d), host(s), n);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) {
  if (!inside(d, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memset(host(d), v, n);
  std::lock_guard lock(state().mu);
  state().memsets.emplace_back(d, v);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream) {
  return cuMemsetD8(d, v, n);
}
FAKE_EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream) {
  if (!inside(d, n * 4)) return CUDA_ERROR_INVALID_VALUE;
  auto* w = static_cast<uint32_t*>(host(d));
  for (size_t i = 0; i < n; ++i) w[i] = v;
  return CUDA_SUCCESS;
}
// A stream is its id, unique for the program's life as the driver's are (cuStreamGetId).
FAKE_EXPORT CUresult cuStreamCreate(CUstream* s, unsigned) {
  std::lock_guard lock(state().mu);
  *s = reinterpret_cast<CUstream>(new unsigned long long(state().next_stream_id++));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamDestroy(CUstream s) {
  delete reinterpret_cast<unsigned long long*>(s);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamGetId(CUstream s, unsigned long long* id) {
  FAKE_FAIL_IF_ASKED("cuStreamGetId");
  // The NULL stream and CU_STREAM_LEGACY are one stream; CU_STREAM_PER_THREAD is another.
  const auto h = reinterpret_cast<uintptr_t>(s);
  *id = h == 0 || h == 0x1 ? 1 : h == 0x2 ? 2 : *reinterpret_cast<unsigned long long*>(s);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream, CUstreamCaptureStatus* status) {
  FAKE_FAIL_IF_ASKED("cuStreamIsCapturing");
  *status = env_int("KILN_FAKE_CUDA_CAPTURING", 0) != 0 ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                                        : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamSynchronize(CUstream) {
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventCreate(CUevent* e, unsigned) {
  *e = reinterpret_cast<CUevent>(new int(0));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventRecord(CUevent, CUstream) {
  FAKE_FAIL_IF_ASKED("cuEventRecord");
  std::lock_guard lock(state().mu);
  ++state().event_records;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned) {
  std::lock_guard lock(state().mu);
  ++state().event_waits;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventSynchronize(CUevent) {
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent, CUevent) {
  *ms = 0.001f;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventDestroy(CUevent e) {
  delete reinterpret_cast<int*>(e);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamBeginCapture(CUstream, CUstreamCaptureMode) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
FAKE_EXPORT CUresult cuStreamEndCapture(CUstream, CUgraph*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
FAKE_EXPORT CUresult cuGraphInstantiate(CUgraphExec*, CUgraph, unsigned long long) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec, CUstream) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
FAKE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec) {
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGraphDestroy(CUgraph) {
  return CUDA_SUCCESS;
}

// Stream-ordered pools: allocations are immediate, as if the stream had caught up.
FAKE_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps*) {
  FAKE_FAIL_IF_ASKED("cuMemPoolCreate");
  *pool = reinterpret_cast<CUmemoryPool>(new int(0));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  delete reinterpret_cast<int*>(pool);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool, CUmemPool_attribute, void*) {
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* p, size_t bytes, CUmemoryPool, CUstream) {
  FAKE_FAIL_IF_ASKED("cuMemAllocFromPoolAsync");
  {
    std::lock_guard lock(state().mu);
    ++state().pool_allocations;
  }
  return allocate(p, bytes);
}
FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream) {
  return release(p);
}
