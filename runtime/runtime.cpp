// The runtime: open a device through the dlopen'ed driver, load a bundle's modules, check
// and launch kernels.
//
// Loading picks one image per variant: the cubin built for this device's architecture, else
// a cubin of the same major architecture and a lower minor, else the PTX of the highest
// architecture not above the device's (JIT-compiled by the driver). Every module file is
// loaded once and shared by the variants that name it. A variant that cannot be loaded keeps
// its reason; a step with no loadable variant fails the load.
//
// Launching checks every argument before the first cuLaunchKernel, so a rejected launch
// touches nothing. The success path allocates nothing: shapes are pre-encoded at load time
// and the kernel-parameter array is a fixed-size array on the stack that points into the
// caller's spans.
#include "runtime/runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>

#include "bundle/image.h"
#include "runtime/driver.h"

namespace kiln {
namespace {

using bundle::ArchImage;
using bundle::KernelInfo;
using bundle::Variant;

// ---- images ----

struct Arch {
  int major = 0, minor = 0;
  char suffix = 0;  // 'a' (arch-specific: exactly this device), 'f' (family) or 0
};

std::optional<Arch> parse_arch(std::string_view s) {
  if (s.substr(0, 3) != "sm_") return std::nullopt;
  s.remove_prefix(3);
  Arch a;
  if (!s.empty() && (s.back() == 'a' || s.back() == 'f')) {
    a.suffix = s.back();
    s.remove_suffix(1);
  }
  if (s.size() < 2 || s.size() > 4) return std::nullopt;
  int n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  a.major = n / 10;
  a.minor = n % 10;
  return a;
}

struct ImageChoice {
  const ArchImage* image = nullptr;
  bool cubin = false;
};

// Whether code for `a` runs on a device of compute capability major.minor. Machine code
// (and family or arch-specific PTX) needs the same major; plain PTX runs on any later device.
bool runs_on(const Arch& a, int major, int minor, bool machine_code) {
  if (a.suffix == 'a') return a.major == major && a.minor == minor;
  if (machine_code || a.suffix == 'f') return a.major == major && a.minor <= minor;
  return a.major < major || (a.major == major && a.minor <= minor);
}

ImageChoice pick_image(const Variant& v, int major, int minor) {
  ImageChoice best;
  std::optional<Arch> best_arch;
  // Of the images for one architecture, the arch-specific one (sm_90a) wins: it may use
  // instructions the portable one cannot (a contraction's wgmma), and runs only where it fits.
  auto better = [&](const Arch& a) {
    return !best_arch || a.major > best_arch->major ||
           (a.major == best_arch->major && a.minor > best_arch->minor) ||
           (a.major == best_arch->major && a.minor == best_arch->minor && a.suffix == 'a');
  };
  for (const ArchImage& im : v.images) {
    std::optional<Arch> a = parse_arch(im.arch);
    if (a && !im.cubin.empty() && runs_on(*a, major, minor, true) && better(*a)) {
      best = {&im, true};
      best_arch = a;
    }
  }
  if (best.image != nullptr) return best;
  for (const ArchImage& im : v.images) {
    std::optional<Arch> a = parse_arch(im.arch);
    if (a && runs_on(*a, major, minor, false) && better(*a)) {
      best = {&im, false};
      best_arch = a;
    }
  }
  return best;
}

std::string one_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

struct Module {
  CUmodule module = nullptr;
  std::string error;
  std::map<std::string, int64_t> param_bytes;  // by entry, for cubins (bundle/image.h)
};

// Loads `im`'s cubin or PTX from bundle `dir`; the driver only sees bytes that read_image
// checked (bundle/image.h).
Module load_module(const Runtime& rt, const std::string& dir, const ArchImage& im, bool cubin) {
  const DriverApi& api = rt.driver();
  Result<std::string> data = bundle::read_image(dir, im, cubin);
  if (!data.ok()) return {nullptr, data.message(), {}};
  std::string path = (std::filesystem::path(dir) / (cubin ? im.cubin : im.ptx)).string();
  std::array<char, 8192> log{};
  std::array<CUjit_option, 2> opts = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  std::array<void*, 2> vals = {log.data(), reinterpret_cast<void*>(uintptr_t{log.size() - 1})};
  CUmodule m = nullptr;
  CUresult r = api.cuModuleLoadDataEx(&m, data->c_str(), static_cast<unsigned>(opts.size()),
                                      opts.data(), vals.data());
  if (r != CUDA_SUCCESS) {
    std::string msg = fmt::format("loading {} ({} {}) failed: {}", path, im.arch,
                                  cubin ? "cubin" : "PTX", rt.describe(r));
    log.back() = '\0';
    if (log[0] != '\0') msg += "; JIT log: " + one_line(log.data());
    return {nullptr, msg, {}};
  }
  return {m, {}, cubin ? bundle::cubin_param_bytes(*data) : std::map<std::string, int64_t>{}};
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) {
    if (!s.empty()) s.append(", ");
    s.append(n);
  }
  return s;
}

// The names of the arguments a variant's entry takes (manifest.h): parameters, buffers,
// symbols, and for a split variant its workspace and phase.
// The entry's parameters by the manifest (manifest.h): names and bytes (8, a scalar's dtype
// size, or a tensor map's 128 at a multiple of 64).
struct AbiParam {
  std::string name;
  int64_t bytes = 8;
};
std::vector<AbiParam> abi_params(const KernelInfo& k, const Variant& v) {
  std::vector<AbiParam> out;
  for (const bundle::ParamInfo& p : k.params) {
    out.push_back({p.name, p.scalar ? static_cast<int64_t>(size_of(p.dtype)) : 8});
  }
  for (const bundle::ParamInfo& b : k.buffers) out.push_back({b.name});
  for (const std::string& s : k.symbols) out.push_back({s});
  if (v.split.phases > 0) out.insert(out.end(), {{"workspace"}, {"phase"}});
  for (size_t i = 0; i < v.tile.tensor_maps.size(); ++i) {
    out.push_back({fmt::format("tensor_map{}", i), sizeof(CUtensorMap)});
  }
  if (!v.tile.tensor_maps.empty()) out.push_back({"maps_ok"});
  for (const bundle::ParamInfo& p : k.params) {  // strided inputs' strides, last (format 8)
    if (!p.strided) continue;
    for (size_t d = 0; d < p.shape.size(); ++d)
      out.push_back({fmt::format("{}.stride{}", p.name, d)});
  }
  return out;
}
std::vector<std::string> abi_names(const KernelInfo& k, const Variant& v) {
  std::vector<std::string> names;
  for (const AbiParam& p : abi_params(k, v)) names.push_back(p.name);
  return names;
}
// The bytes of the parameters, each at a multiple of its size (at most 8): the end of the last.
int64_t abi_bytes(const std::vector<AbiParam>& params) {
  int64_t sum = 0;
  for (const AbiParam& p : params) {
    const int64_t align = std::min<int64_t>(p.bytes, 8);
    sum = (sum + align - 1) / align * align + p.bytes;
  }
  return sum;
}

// The entry's parameter bytes, read from its cubin (bundle::cubin_param_bytes), against the
// manifest's kernel ABI: 8 bytes per argument but scalars. Catches an entry taking more parameters
// than the manifest says as well as fewer; unknown for PTX images.
Status check_param_bytes(const std::map<std::string, int64_t>& param_bytes, const KernelInfo& k,
                         const Variant& v, const std::string& entry, const std::string& file) {
  auto it = param_bytes.find(entry);
  if (it == param_bytes.end()) return Status::ok_status();
  const std::vector<std::string> names = abi_names(k, v);
  const int64_t expected = abi_bytes(abi_params(k, v));
  if (it->second == expected) return Status::ok_status();
  // A tensor map sits at a multiple of 64 bytes of the constant bank, whose parameters start
  // at an offset of the architecture's: up to 56 bytes of padding before each.
  const auto padding = static_cast<int64_t>(56 * v.tile.tensor_maps.size());
  if (it->second > expected && it->second <= expected + padding) return Status::ok_status();
  if (v.tile.tensor_maps.empty()) {
    return Status::error(fmt::format(
        "entry {} in {} takes {} bytes of parameters, but the manifest's kernel {} passes {} "
        "({}: {})",
        entry, file, it->second, k.name, expected,
        expected == static_cast<int64_t>(8 * names.size())
            ? fmt::format("{} x 8", names.size())
            : fmt::format("{} parameters with scalars", names.size()),
        join_names(names)));
  }
  return Status::error(fmt::format(
      "entry {} in {} takes {} bytes of parameters, but the manifest's kernel {} passes {} to "
      "{} ({} with {} tensor map(s): {})",
      entry, file, it->second, k.name, expected, expected + padding, names.size(),
      v.tile.tensor_maps.size(), join_names(names)));
}

// The entry's parameters against the manifest's kernel ABI (manifest.h), asked of the driver
// for PTX images too: each parameter the manifest names must exist and be 8 bytes. Only those
// are asked for: asking past the last one fails by design, and compute-sanitizer reports it
// for every valid load (an entry taking more parameters is caught by check_param_bytes, for
// cubins). Without cuFuncGetParamInfo (drivers before CUDA 12.4), or when the driver cannot
// answer, nothing is checked here.
Status check_params(const DriverApi& api, CUfunction fn, const KernelInfo& k, const Variant& v,
                    const std::string& entry, const std::string& file) {
  if (api.cuFuncGetParamInfo == nullptr) return Status::ok_status();
  const std::vector<AbiParam> params = abi_params(k, v);
  const std::vector<std::string> names = abi_names(k, v);
  const size_t expected = names.size();
  for (size_t i = 0; i < expected; ++i) {
    size_t offset = 0, size = 0;
    CUresult r = api.cuFuncGetParamInfo(fn, i, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) {  // past the entry's last parameter
      return Status::error(fmt::format(
          "entry {} in {} takes {} parameters, but the manifest's kernel {} has {} ({})", entry,
          file, i, k.name, expected, join_names(names)));
    }
    if (r != CUDA_SUCCESS) return Status::ok_status();
    if (static_cast<int64_t>(size) != params[i].bytes) {
      return Status::error(fmt::format(
          "entry {} in {}: parameter {} is {} bytes, but the manifest's kernel {} passes {} ({})",
          entry, file, i + 1, size, k.name, params[i].bytes,
          params[i].bytes == 8  ? "a pointer or an i64"
          : params[i].bytes < 8 ? "a scalar"
                                : "a tensor map"));
    }
  }
  return Status::ok_status();
}

// Entry `entry` of variant `v` from `mod`, checked against the manifest's kernel ABI
// (check_param_bytes, check_params): a variant's entry and its general entry
// (bundle::GeneralForm) alike. `fn` is null unless it loaded and passed.
Status load_entry(const Runtime& rt, const Module& mod, const KernelInfo& k, const Variant& v,
                  const std::string& entry, const std::string& file, CUfunction& fn) {
  fn = nullptr;
  if (CUresult r = rt.driver().cuModuleGetFunction(&fn, mod.module, entry.c_str());
      r != CUDA_SUCCESS) {
    fn = nullptr;
    return Status::error(fmt::format("entry {} not found in {}: {}", entry, file, rt.describe(r)));
  }
  Status s = check_param_bytes(mod.param_bytes, k, v, entry, file);
  if (s.ok()) s = check_params(rt.driver(), fn, k, v, entry, file);
  if (!s.ok()) fn = nullptr;
  return s;
}

// Lets a staging variant's `fn` have the most dynamic shared memory the device allows a block
// (its opt-in maximum) less the kernel's static shared memory (the combines'); returns that
// many bytes, or 0 when the driver refuses (the variant then runs unstaged).
int64_t allow_dynamic_smem(const Runtime& rt, CUfunction fn) {
  const DriverApi& api = rt.driver();
  int static_bytes = 0;
  if (api.cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn) !=
      CUDA_SUCCESS) {
    return 0;
  }
  const int dynamic = rt.device().max_shared_optin - static_bytes;
  if (dynamic <= 0 || api.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             dynamic) != CUDA_SUCCESS) {
    return 0;
  }
  return dynamic;
}

// How many clusters of contraction variant `v` (tile.cluster blocks, its block and shared
// memory) the device holds at once: the persistent grid's clusters (launch::lay_out).
Result<int64_t> resident_clusters(const Runtime& rt, CUfunction fn, const Variant& v) {
  const DriverApi& api = rt.driver();
  if (api.cuOccupancyMaxActiveClusters == nullptr || api.cuLaunchKernelEx == nullptr) {
    return Status::error("the CUDA driver has no cluster launches (CUDA 12.0)");
  }
  CUlaunchAttribute attr;
  const CUlaunchConfig config =
      cluster_launch_config(static_cast<unsigned>(v.tile.cluster),
                            static_cast<unsigned>(v.tile.cluster * rt.device().sm_count),
                            static_cast<unsigned>(v.block_threads),
                            static_cast<unsigned>(v.tile.smem_bytes), nullptr, attr);
  int held = 0;
  if (CUresult r = api.cuOccupancyMaxActiveClusters(&held, fn, &config); r != CUDA_SUCCESS) {
    return Status::error("cuOccupancyMaxActiveClusters failed: " + rt.describe(r));
  }
  if (held <= 0) return Status::error("the device holds none at once");
  return int64_t{held};
}

}  // namespace

// ---- Runtime ----

Result<std::unique_ptr<Runtime>> Runtime::open(int ordinal) {
  try {
    std::unique_ptr<Runtime> rt(new Runtime());
    rt->api_ = std::make_unique<DriverApi>();
    if (Status s = load_driver_api(rt->lib_, *rt->api_); !s.ok()) return s;
    const DriverApi& api = *rt->api_;
    auto check = [&](CUresult r, std::string_view what) {
      return r == CUDA_SUCCESS
                 ? Status::ok_status()
                 : Status::error(fmt::format("CUDA driver: {} failed: {}", what, rt->describe(r)));
    };
    if (Status s = check(api.cuInit(0), "cuInit"); !s.ok()) return s;
    int count = 0;
    if (Status s = check(api.cuDeviceGetCount(&count), "cuDeviceGetCount"); !s.ok()) return s;
    if (count == 0) return Status::error("no CUDA device found", StatusCode::no_device);
    if (ordinal < 0 || ordinal >= count) {
      return Status::error(fmt::format("CUDA device {} does not exist ({} device{} found)", ordinal,
                                       count, count == 1 ? "" : "s"),
                           StatusCode::no_device);
    }
    if (Status s = check(api.cuDeviceGet(&rt->dev_, ordinal), "cuDeviceGet"); !s.ok()) return s;
    std::array<char, 256> name{};
    if (Status s =
            check(api.cuDeviceGetName(name.data(), static_cast<int>(name.size() - 1), rt->dev_),
                  "cuDeviceGetName");
        !s.ok()) {
      return s;
    }
    DeviceInfo& d = rt->device_;
    d.name = name.data();
    struct {
      CUdevice_attribute attr;
      int* out;
      const char* what;
    } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &d.cc_major, "compute capability"},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &d.cc_minor, "compute capability"},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &d.sm_count, "multiprocessor count"},
    };
    for (auto& a : attrs) {
      if (Status s = check(api.cuDeviceGetAttribute(a.out, a.attr, rt->dev_), a.what); !s.ok()) {
        return s;
      }
    }
    size_t total = 0;
    if (Status s = check(api.cuDeviceTotalMem(&total, rt->dev_), "cuDeviceTotalMem"); !s.ok()) {
      return s;
    }
    d.total_memory = static_cast<int64_t>(total);
    api.cuDriverGetVersion(&d.driver_version);
    // Only staging variants need it: without it they run unstaged (Bundle::load).
    if (api.cuDeviceGetAttribute(&d.max_shared_optin,
                                 CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                 rt->dev_) != CUDA_SUCCESS) {
      d.max_shared_optin = 0;
    }
    // Only the tuner's L2 flush sizes itself by it (autotune/l2_flush.cpp).
    if (api.cuDeviceGetAttribute(&d.l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, rt->dev_) !=
        CUDA_SUCCESS) {
      d.l2_bytes = 0;
    }
    // Only the split grids size themselves by these (the rule's defaults stand in otherwise).
    struct {
      CUdevice_attribute attr;
      int* out;
    } per_sm[] = {
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &d.threads_per_sm},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, &d.registers_per_sm},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &d.shared_per_sm},
    };
    for (auto& a : per_sm) {
      if (api.cuDeviceGetAttribute(a.out, a.attr, rt->dev_) != CUDA_SUCCESS) *a.out = 0;
    }
    if (Status s = check(api.cuDevicePrimaryCtxRetain(&rt->ctx_, rt->dev_),
                         "retaining the "
                         "primary context");
        !s.ok()) {
      rt->ctx_ = nullptr;
      return s;
    }
    if (Status s = rt->make_current(); !s.ok()) return s;
    const char* dependent = std::getenv("KILN_DEPENDENT_LAUNCH");
    rt->set_dependent_launch(dependent == nullptr || std::string_view(dependent) != "0");
    const char* keep = std::getenv("KILN_KEEP_SCRATCH");
    rt->set_keep_scratch(keep == nullptr || std::string_view(keep) != "0");
    if (api.cuMemPoolCreate && api.cuMemPoolDestroy && api.cuMemPoolSetAttribute &&
        api.cuMemAllocFromPoolAsync && api.cuMemFreeAsync) {
      CUmemPoolProps props{};
      props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
      props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
      props.location = {CU_MEM_LOCATION_TYPE_DEVICE, ordinal};
      if (api.cuMemPoolCreate(&rt->pool_, &props) != CUDA_SUCCESS) {
        rt->pool_ = nullptr;  // split reductions then never run (Kernel::heuristic)
      } else {
        cuuint64_t keep = ~cuuint64_t{0};
        (void)api.cuMemPoolSetAttribute(rt->pool_, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
      }
    }
    return rt;
  } catch (const std::exception& e) {
    return Status::error(fmt::format("opening the CUDA device failed: {}", e.what()));
  }
}

void Runtime::set_dependent_launch(bool on) {
  dependent_launch_ = on && api_->cuLaunchKernelEx != nullptr;
}

Runtime::~Runtime() {
  // The library handle stays open: libcuda keeps threads that must not lose their code.
  // The kept scratch's streams may be gone: each slot's memory is freed on the runtime's own
  // stream once its event (recorded after the slot's last use) has passed. The pool then goes
  // when the frees have run (cuMemPoolDestroy returns at once).
  if (kept_count_ > 0) (void)make_current();
  for (int i = 0; i < kept_count_; ++i) {
    KeptScratch& k = kept_[i];
    if (!k.lost) (void)free_kept(k);
    if (k.done != nullptr) (void)api_->cuEventDestroy(k.done);
  }
  if (reclaim_ != nullptr) (void)api_->cuStreamDestroy(reclaim_);
  if (pool_ != nullptr) (void)api_->cuMemPoolDestroy(pool_);
  if (ctx_ != nullptr) (void)api_->cuDevicePrimaryCtxRelease(dev_);
}

Result<CUdeviceptr> Runtime::alloc_async(size_t bytes, CUstream stream) const {
  if (pool_ == nullptr) {
    return Status::error(
        "this CUDA driver has no stream-ordered memory pools (cuMemAllocFromPoolAsync)");
  }
  CUdeviceptr p = 0;
  if (CUresult r = api_->cuMemAllocFromPoolAsync(&p, std::max<size_t>(bytes, 4), pool_, stream);
      r != CUDA_SUCCESS) {
    return Status::error(fmt::format("allocating {} bytes failed: {}", bytes, describe(r)));
  }
  return p;
}

void Runtime::free_async(CUdeviceptr p, CUstream stream) const {
  (void)api_->cuMemFreeAsync(p, stream);
}

// The slot of `stream`'s kept scratch, claimed and holding at least `bytes` at `ptr`, or -1
// where the lease takes its memory from the pool instead (Runtime::scratch says when).
int Runtime::claim_kept(size_t bytes, CUstream stream, CUdeviceptr& ptr) const {
  if (!keep_scratch_ || bytes > kMaxCachedScratch || api_->cuStreamIsCapturing == nullptr ||
      api_->cuStreamGetId == nullptr) {
    return -1;
  }
  // A stream in capture records the pool's allocation as the graph's memory node instead: a
  // graph replayed later must not share memory with the stream's launches. An error (the
  // legacy stream while another thread captures) is treated the same way.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  unsigned long long id = 0;
  if (api_->cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS ||
      capture != CU_STREAM_CAPTURE_STATUS_NONE ||
      api_->cuStreamGetId(stream, &id) != CUDA_SUCCESS) {
    return -1;
  }
  std::lock_guard lock(scratch_mu_);
  if (reclaim_ == nullptr &&
      api_->cuStreamCreate(&reclaim_, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    reclaim_ = nullptr;
    return -1;
  }
  int slot = -1;
  for (int i = 0; i < kept_count_ && slot < 0; ++i) {
    if (kept_[i].stream_id == id) slot = i;
  }
  if (slot < 0 && kept_count_ < kCachedStreams) {
    KeptScratch k;
    if (api_->cuEventCreate(&k.done, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return -1;
    slot = kept_count_++;
    kept_[slot] = k;
  } else if (slot < 0) {
    // Every slot taken: the one least recently given back goes to this stream, its memory
    // freed on the runtime's stream after its last use (its stream may be gone).
    for (int i = 0; i < kept_count_; ++i) {
      const KeptScratch& k = kept_[i];
      if (!k.busy && !k.lost && (slot < 0 || k.last_use < kept_[slot].last_use)) slot = i;
    }
    if (slot < 0 || !free_kept(kept_[slot])) return -1;
  }
  KeptScratch& k = kept_[slot];
  if (k.busy || k.lost) return -1;  // another thread's launch on this stream holds it
  k.stream_id = id;
  if (k.ptr == 0 || k.bytes < bytes) {
    // Grown to a power of two, so that a stream whose shapes grow reallocates a few times.
    const size_t grown = std::min(std::bit_ceil(std::max<size_t>(bytes, 4096)), kMaxCachedScratch);
    CUdeviceptr p = 0;
    if (api_->cuMemAllocFromPoolAsync(&p, grown, pool_, stream) != CUDA_SUCCESS) return -1;
    // The old memory after the launches before on this very stream, in stream order.
    if (k.ptr != 0) (void)api_->cuMemFreeAsync(k.ptr, stream);
    k.ptr = p;
    k.bytes = grown;
  }
  k.busy = true;
  ptr = k.ptr;
  return slot;
}

bool Runtime::free_kept(KeptScratch& k) const {
  if (k.ptr != 0) {
    if (api_->cuStreamWaitEvent(reclaim_, k.done, 0) != CUDA_SUCCESS) return false;
    (void)api_->cuMemFreeAsync(k.ptr, reclaim_);
  }
  k.ptr = 0;
  k.bytes = 0;
  return true;
}

size_t Runtime::trim_scratch() const {
  std::lock_guard lock(scratch_mu_);
  size_t freed = 0;
  for (int i = 0; i < kept_count_; ++i) {
    KeptScratch& k = kept_[i];
    const size_t bytes = k.bytes;
    if (!k.busy && !k.lost && free_kept(k)) freed += bytes;
  }
  return freed;
}

Status Runtime::scratch(size_t bytes, CUstream stream, ScratchLease& out) const {
  out.release();
  if (pool_ == nullptr) {
    return Status::error(
        "this CUDA driver has no stream-ordered memory pools (cuMemAllocFromPoolAsync)");
  }
  out.rt_ = this;
  out.stream_ = stream;
  if (const int slot = claim_kept(bytes, stream, out.ptr_); slot >= 0) {
    out.slot_ = slot;
    return Status::ok_status();
  }
  Result<CUdeviceptr> p = alloc_async(bytes, stream);
  if (!p.ok()) return p.status();
  out.ptr_ = *p;
  return Status::ok_status();
}

std::pair<int, size_t> Runtime::cached_scratch() const {
  std::lock_guard lock(scratch_mu_);
  int streams = 0;
  size_t bytes = 0;
  for (int i = 0; i < kept_count_; ++i) {
    streams += kept_[i].ptr != 0;  // trimmed slots keep nothing
    bytes += kept_[i].bytes;
  }
  return {streams, bytes};
}

void Runtime::ScratchLease::release() {
  if (rt_ != nullptr && slot_ >= 0) {
    std::lock_guard lock(rt_->scratch_mu_);
    KeptScratch& k = rt_->kept_[slot_];
    // The event marks the slot's last use, for whoever frees it later. Without it the memory
    // can never be freed safely: the slot stays held until the runtime closes (and leaks then).
    k.lost = rt_->api_->cuEventRecord(k.done, stream_) != CUDA_SUCCESS;
    k.busy = k.lost;
    k.last_use = ++rt_->kept_clock_;
  } else if (rt_ != nullptr && ptr_ != 0) {
    rt_->free_async(ptr_, stream_);
  }
  rt_ = nullptr;
  ptr_ = 0;
  slot_ = -1;
}

Status Runtime::make_current() const {
  CUresult r = api_->cuCtxSetCurrent(ctx_);
  if (r != CUDA_SUCCESS) return Status::error("cuCtxSetCurrent failed: " + describe(r));
  return Status::ok_status();
}

std::string Runtime::describe(CUresult r) const {
  return describe_cuda_error(*api_, r);
}

// ---- Bundle ----

Result<std::unique_ptr<Bundle>> Bundle::load(const Runtime& rt, const std::string& dir) {
  try {
    Result<bundle::Manifest> m = bundle::read_manifest(dir);
    if (!m.ok()) return m.status();
    if (Status s = rt.make_current(); !s.ok()) return s;
    std::unique_ptr<Bundle> b(new Bundle());  // unloads whatever was loaded if we fail
    b->rt_ = &rt;
    b->manifest_ = std::move(m).value();
    const DriverApi& api = rt.driver();
    const DeviceInfo& dev = rt.device();
    std::map<std::string, Module> modules;  // by file name

    for (const KernelInfo& info : b->manifest_.kernels) {
      auto k = std::make_unique<Kernel>();
      k->rt_ = &rt;
      k->info_ = &info;
      k->enc_ = launch::encode(info);
      k->facts_ = {dev.sm_count, rt.has_memory_pool()};
      if (dev.threads_per_sm > 0) k->facts_.threads_per_sm = dev.threads_per_sm;
      if (dev.registers_per_sm > 0) k->facts_.registers_per_sm = dev.registers_per_sm;
      if (dev.shared_per_sm > 0) k->facts_.shared_per_sm = dev.shared_per_sm;
      for (size_t si = 0; si < info.steps.size(); ++si) {
        const bundle::Step& step = info.steps[si];
        std::vector<Kernel::LoadedVariant>& loaded = k->steps_.emplace_back(step.variants.size());
        std::vector<int64_t>& smem = k->max_dynamic_smem_.emplace_back(step.variants.size());
        std::vector<launch::ClusterFacts>& clusters =
            k->clusters_.emplace_back(step.variants.size());
        for (size_t vi = 0; vi < step.variants.size(); ++vi) {
          const Variant& v = step.variants[vi];
          ImageChoice c = pick_image(v, dev.cc_major, dev.cc_minor);
          if (c.image == nullptr) {
            std::vector<std::string> archs;
            for (const ArchImage& im : v.images) archs.push_back(im.arch);
            loaded[vi].load_error =
                fmt::format("no image runs on {} (variant has {})", dev.arch(), join_names(archs));
            continue;
          }
          const std::string& file = c.cubin ? c.image->cubin : c.image->ptx;
          auto it = modules.find(file);
          if (it == modules.end()) {
            it = modules.emplace(file, load_module(rt, dir, *c.image, c.cubin)).first;
            if (it->second.module != nullptr) b->modules_.push_back(it->second.module);
          }
          if (it->second.module == nullptr) {
            loaded[vi].load_error = it->second.error;
            continue;
          }
          // Images for sm_90 and later of a kernel compiled to wait (make_dependent).
          loaded[vi].dependent = info.dependent_launch && parse_arch(c.image->arch)->major >= 9;
          Status entry = load_entry(rt, it->second, info, v, v.entry, file, loaded[vi].fn);
          if (entry.ok() && !v.general.entry.empty()) {
            entry =
                load_entry(rt, it->second, info, v, v.general.entry, file, loaded[vi].general_fn);
            if (!entry.ok()) loaded[vi].fn = nullptr;
          }
          if (!entry.ok()) {
            loaded[vi].load_error = entry.message();
          } else if (v.stage.bytes_per_element > 0) {
            smem[vi] = allow_dynamic_smem(rt, loaded[vi].fn);
          } else if (v.tile.smem_bytes > 0) {
            // A contraction's pipeline needs its shared memory: without it, it cannot run.
            if (v.tile.smem_bytes > dev.max_shared_optin ||
                api.cuFuncSetAttribute(loaded[vi].fn,
                                       CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       static_cast<int>(v.tile.smem_bytes)) != CUDA_SUCCESS) {
              loaded[vi].fn = nullptr;
              loaded[vi].load_error =
                  fmt::format("entry {} needs {} bytes of shared memory per block; {} allows {}",
                              v.entry, v.tile.smem_bytes, dev.name, dev.max_shared_optin);
            } else {
              smem[vi] = v.tile.smem_bytes;
            }
            // Its sm_90a image runs in clusters (the others walk tiles alone: manifest.h).
            if (loaded[vi].fn != nullptr && v.tile.cluster > 1 && c.image->arch == "sm_90a") {
              Result<int64_t> held = resident_clusters(rt, loaded[vi].fn, v);
              if (held.ok()) {
                clusters[vi] = {v.tile.cluster, *held};
              } else {
                loaded[vi].fn = nullptr;
                loaded[vi].load_error = fmt::format("entry {} runs in clusters of {} blocks: {}",
                                                    v.entry, v.tile.cluster, held.message());
              }
            }
          }
        }
        std::vector<bool> loadable(step.variants.size());
        for (size_t vi = 0; vi < step.variants.size(); ++vi)
          loadable[vi] = loaded[vi].fn != nullptr;
        launch::StepRule rule = launch::step_rule(step, loadable, k->facts_);
        if (rule.chosen < 0) {
          std::string reasons;
          size_t shown = std::min<size_t>(step.variants.size(), 4);
          for (size_t vi = 0; vi < shown; ++vi) {
            reasons += fmt::format("{}variant {}: {}", vi ? "; " : "", vi, loaded[vi].load_error);
          }
          if (shown < step.variants.size()) {
            reasons += fmt::format("; and {} more", step.variants.size() - shown);
          }
          return Status::error(
              fmt::format("{}: kernel {}, step {} ({}): no variant can run on "
                          "{} ({}): {}",
                          dir, info.name, si, step.name, dev.arch(), dev.name, reasons));
        }
        k->rules_.push_back(std::move(rule));
      }
      b->kernels_.push_back(std::move(k));
    }
    return b;
  } catch (const std::exception& e) {
    return Status::error(fmt::format("{}: loading the bundle failed: {}", dir, e.what()));
  }
}

Bundle::~Bundle() {
  if (modules_.empty()) return;
  (void)rt_->make_current();
  for (CUmodule m : modules_) (void)rt_->driver().cuModuleUnload(m);
}

std::vector<std::string> Bundle::use_cache(const cache::Cache& c) {
  std::vector<std::string> ignored;
  const DeviceInfo& d = rt_->device();
  const cache::GpuKey gpu{d.name, d.cc_major, d.cc_minor, d.sm_count};
  for (auto& k : kernels_) {
    k->tuned_.clear();
    k->log_ = std::getenv("KILN_LOG") != nullptr && std::string(std::getenv("KILN_LOG")) != "0";
  }
  for (const cache::Entry& e : c.entries) {
    auto it = std::find_if(kernels_.begin(), kernels_.end(),
                           [&](const auto& k) { return k->info_->hash == e.key.kernel_hash; });
    if (it == kernels_.end()) continue;  // another bundle's kernel
    Kernel& k = **it;
    auto skip = [&](const std::string& why) {
      ignored.push_back(fmt::format("{} step {}: {}", k.name(), e.key.step, why));
    };
    if (!(e.key.gpu == gpu)) {
      skip(fmt::format("tuned on {} (sm_{}{}, {} SMs), not this GPU", e.key.gpu.name,
                       e.key.gpu.cc_major, e.key.gpu.cc_minor, e.key.gpu.sm_count));
      continue;
    }
    if (e.key.driver_version != d.driver_version || e.key.kiln_version != KILN_VERSION) {
      skip(fmt::format("tuned with driver {} and kiln {}, this is driver {} and kiln {}",
                       e.key.driver_version, e.key.kiln_version, d.driver_version, KILN_VERSION));
      continue;
    }
    if (e.key.step < 0 || static_cast<size_t>(e.key.step) >= k.steps_.size()) {
      skip("no such step");
      continue;
    }
    const auto& variants = k.info_->steps[e.key.step].variants;
    auto v = std::find_if(variants.begin(), variants.end(),
                          [&](const bundle::Variant& x) { return x.config == e.winner.config; });
    if (v == variants.end() || k.steps_[e.key.step][v->id].fn == nullptr) {
      skip("the winning config is not in this bundle or cannot load here");
      continue;
    }
    std::vector<int64_t> values;
    for (const std::string& s : k.info_->symbols) {
      auto sv = e.key.shape.find(s);
      values.push_back(sv == e.key.shape.end() ? -1 : sv->second);
    }
    auto row = std::find_if(k.tuned_.begin(), k.tuned_.end(), [&](const Kernel::Tuned& t) {
      return t.bucket == e.key.bucket && t.values == values;
    });
    if (row == k.tuned_.end()) {
      k.tuned_.push_back({e.key.bucket, values, std::vector<int>(k.steps_.size(), -1)});
      row = k.tuned_.end() - 1;
    }
    row->variants[e.key.step] = v->id;
  }
  return ignored;
}

const Kernel* Bundle::find(std::string_view name) const {
  for (const auto& k : kernels_) {
    if (k->name() == name) return k.get();
  }
  return nullptr;
}

Kernel* Bundle::find(std::string_view name) {
  return const_cast<Kernel*>(static_cast<const Bundle*>(this)->find(name));
}

}  // namespace kiln
