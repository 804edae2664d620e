// libkiln_runtime: load a bundle and launch its kernels through the CUDA Driver API.
//
// libcuda is opened with dlopen at run time, so a program linked with the runtime starts (and
// can report "no CUDA driver") on machines without one. The runtime never links LLVM.
// Launch checks every argument against the manifest before touching the GPU; a launch that
// passes the checks costs one cuLaunchKernel per step and allocates nothing.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bundle/cache.h"
#include "bundle/manifest.h"
#include "bundle/status.h"
#include "runtime/launch.h"

namespace kiln {

/// Element types of f16 and bf16 tensors in typed launchers (compiler/header.h): their
/// 16-bit patterns; device pointers of __half or __nv_bfloat16 convert with reinterpret_cast.
struct f16 {
  uint16_t bits;
};
struct bf16 {
  uint16_t bits;
};

struct DeviceInfo {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t total_memory = 0;
  int driver_version = 0;  // cuDriverGetVersion, e.g. 13000
  // The shared memory (bytes) one block may opt in to: 232448 on Hopper; 0 when unknown.
  int max_shared_optin = 0;
  // The L2 cache (bytes): 52428800 on an H100 or H200; 0 when unknown.
  int l2_bytes = 0;
  // What one SM holds: threads, 32-bit registers, shared memory (bytes); 0 when unknown. Only
  // the rule's split grids size themselves by them (bundle::resident_blocks).
  int threads_per_sm = 0, registers_per_sm = 0, shared_per_sm = 0;
  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

/// The driver entry points Kiln uses, resolved from libcuda with dlsym.
struct DriverApi;

/// An open CUDA device with its primary context current on the creating thread.
class Runtime {
 public:
  /// Loads libcuda (libcuda.so.1), initialises it and retains device `ordinal`'s primary
  /// context. Fails with a clear message when there is no driver or no device.
  static Result<std::unique_ptr<Runtime>> open(int ordinal = 0);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const DeviceInfo& device() const { return device_; }
  const DriverApi& driver() const { return *api_; }
  CUcontext context() const { return ctx_; }
  /// Makes the runtime's context current on the calling thread.
  Status make_current() const;
  /// Device memory in stream order from the runtime's own pool: usable by work enqueued on
  /// `stream` after this call, until free_async on the same stream. Fails when the driver has
  /// no memory pools (before CUDA 11.2) or the device is out of memory.
  Result<CUdeviceptr> alloc_async(size_t bytes, CUstream stream) const;
  void free_async(CUdeviceptr p, CUstream stream) const;
  bool has_memory_pool() const { return pool_ != nullptr; }

  /// How many streams keep their scratch between launches, and the most each keeps (bytes).
  static constexpr int kCachedStreams = 8;
  static constexpr size_t kMaxCachedScratch = size_t{32} << 20;
  /// Scratch memory for one launch on `stream` (its buffers and split workspace), held by
  /// `out` until it is destroyed or given another: usable by work that launch enqueues on
  /// `stream`, never by other streams or threads. Outside graph capture a stream keeps its
  /// scratch (up to kMaxCachedScratch bytes, known by cuStreamGetId, unique for the program's
  /// life): the next launch on it reuses the memory in stream order, where an allocation and a
  /// release from the pool at every launch cost about a microsecond of GPU time
  /// (bench/results/2026-11-29-h200-lead-last). kCachedStreams streams keep scratch at once; a
  /// new stream takes the slot given back least recently, whose memory is freed on the
  /// runtime's own stream after an event recorded at its last use (its stream may be gone).
  /// Under capture (the graph's own memory nodes), for larger sizes, while another thread's
  /// launch on the same stream holds it, while every slot is held, or with a driver before
  /// CUDA 12.0, the lease allocates from the pool and frees in stream order. The kept memory
  /// goes back when the runtime closes. Fails as alloc_async does.
  class ScratchLease;
  Status scratch(size_t bytes, CUstream stream, ScratchLease& out) const;
  /// Whether streams keep their scratch between launches (Runtime::scratch). On by default;
  /// KILN_KEEP_SCRATCH=0 in the environment when the runtime opens, or this setter, turns it
  /// off: every launch then takes its scratch from the pool and gives it back (to measure what
  /// keeping gains, or to rule it out). Not synchronized with launches on other threads: set
  /// it first.
  void set_keep_scratch(bool on) { keep_scratch_ = on; }
  bool keep_scratch() const { return keep_scratch_; }
  /// Frees the scratch every stream keeps, except where a launch holds it now, in stream order
  /// after each one's last launch (on the runtime's own stream); later launches take scratch
  /// again. Returns the bytes given back to the pool.
  size_t trim_scratch() const;
  /// The streams that keep scratch now (trimmed ones do not), and its bytes in all.
  std::pair<int, size_t> cached_scratch() const;
  /// A debugging hook for test and tuning harnesses: with a byte in 0..255, every kernel
  /// buffer and split workspace a launch allocates is filled with it (cuMemsetD8Async, in
  /// stream order) before the launch's first step, so a kernel that reads scratch memory it
  /// never wrote sees garbage instead of what an earlier launch left there. -1 (the default)
  /// turns it off. Not synchronized with launches running on other threads: set it first.
  void set_scratch_poison(int byte) { scratch_poison_ = byte >= 0 && byte <= 255 ? byte : -1; }
  int scratch_poison() const { return scratch_poison_; }
  /// Whether steps after a launch's first run as programmatic dependent launches where their
  /// image allows (sm_90 and later, bundle::KernelInfo::dependent_launch, a driver with
  /// cuLaunchKernelEx): each may start while the kernel before it still runs, and waits for it
  /// itself. On by default; KILN_DEPENDENT_LAUNCH=0 in the environment when the runtime opens,
  /// or this setter, turns it off (to measure what it gains, or to rule it out).
  void set_dependent_launch(bool on);
  bool dependent_launch() const { return dependent_launch_; }
  /// A driver error code as "CUDA_ERROR_X: description".
  std::string describe(CUresult r) const;

 private:
  Runtime() = default;
  void* lib_ = nullptr;
  std::unique_ptr<DriverApi> api_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  DeviceInfo device_;
  // Keeps what it was given (release threshold: unlimited): after the first launches of a
  // shape, allocating a workspace asks the operating system for nothing.
  CUmemoryPool pool_ = nullptr;
  // The streams' kept scratch (Runtime::scratch): a slot is busy while a lease holds it.
  struct KeptScratch {
    unsigned long long stream_id = 0;
    CUdeviceptr ptr = 0;
    size_t bytes = 0;
    CUevent done = nullptr;  // recorded on the stream after each lease's launch
    uint64_t last_use = 0;   // kept_clock_ when last given back
    bool busy = false;
    bool lost = false;  // recording `done` failed: never reused, never freed
  };
  mutable std::mutex scratch_mu_;
  mutable std::array<KeptScratch, kCachedStreams> kept_{};
  mutable int kept_count_ = 0;
  mutable uint64_t kept_clock_ = 0;
  mutable CUstream reclaim_ = nullptr;  // frees slots whose streams may be gone
  bool keep_scratch_ = true;
  // Frees slot `k`'s memory on reclaim_ after its last use (scratch_mu_ held, or the runtime
  // closing); false when the wait could not be enqueued (the memory then stays).
  bool free_kept(KeptScratch& k) const;
  int claim_kept(size_t bytes, CUstream stream, CUdeviceptr& ptr) const;
  friend class ScratchLease;
  int scratch_poison_ = -1;
  bool dependent_launch_ = false;
};

/// Scratch memory one launch holds on one stream (Runtime::scratch). Given back when
/// destroyed: to the stream's keeping, or freed from the pool in stream order.
class Runtime::ScratchLease {
 public:
  ScratchLease() = default;
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  ~ScratchLease() { release(); }
  CUdeviceptr ptr() const { return ptr_; }
  /// Whether the memory is the stream's kept scratch (else the pool's, for this lease only).
  bool kept() const { return slot_ >= 0; }
  void release();

 private:
  friend class Runtime;
  const Runtime* rt_ = nullptr;
  CUstream stream_ = nullptr;
  CUdeviceptr ptr_ = 0;
  int slot_ = -1;
};

class Bundle;

/// One kernel of a loaded bundle: every variant of every step, with its CUfunction.
class Kernel {
 public:
  /// Most arguments (pointers, buffers and symbols, plus a split step's workspace and phase)
  /// and steps a launch supports; the argument array lives on the stack.
  static constexpr size_t kMaxLaunchArgs = launch::kMaxArgs;
  static constexpr size_t kMaxSteps = launch::kMaxSteps;

  const bundle::KernelInfo& info() const { return *info_; }
  const std::string& name() const { return info_->name; }

  /// Which variant each step uses when no choice is given (the manifest default unless the
  /// caller overrides it with set_choice). A reduction step without an override picks, per
  /// launch, the heuristic tier for its row length (bundle/manifest.h, max_reduced).
  int chosen_variant(size_t step) const { return rules_[step].chosen; }
  /// Overrides the variant of step `step`: it then runs at every shape, the heuristic's picks
  /// (tiers, splits, smaller tiles) off for that step until the bundle is loaded again
  /// (bundle::pinned_rule); fails as check_variant does.
  Status set_choice(size_t step, int variant);
  /// Whether variant `variant` of step `step` can run here: fails, saying why, if either is out
  /// of range or the variant did not load on this device. Changes nothing.
  Status check_variant(size_t step, int variant) const;

  /// Launches on `stream`, as the sequence of runtime/launch.h: check every argument, choose
  /// the variants, lay out buffers and workspaces, enqueue. `ptrs` are device pointers for
  /// inputs then outputs (declared order); `symbols` are the values of info().symbols in
  /// order. Checks the counts, that
  /// pointers are non-null, that symbols are > 0, that no tensor's element count overflows
  /// int64 and that the grid fits; a vectorised variant whose alignment a pointer does not
  /// meet falls back to the step's best scalar variant (the default if it is scalar, else
  /// the lowest loadable id). Error messages number arguments from 1 ("softmax: argument 2
  /// (y): null pointer"). Safe from several threads at once: a thread whose current context
  /// is not the runtime's gets it made current. Safe inside CUDA graph capture (it only
  /// enqueues kernels, and for buffers or a split step an allocation and its free, which
  /// capture records as memory nodes). Allocates nothing, except scratch memory for the
  /// kernel's buffers (info().buffers) and its split steps' workspace (a few bytes per row
  /// block) when it has them: Runtime::scratch, which a stream keeps between launches outside
  /// capture. Without memory pools a kernel with buffers cannot launch.
  ///
  /// `strides`: the views of the strided inputs (`x: f32[M, N] strided`; info().params[i]
  /// .strided): for each, in parameter order, one stride per dimension in elements (>= 0;
  /// launch::stride_count(info()) in all), or empty for contiguous tensors. When every
  /// strided input's strides are the contiguous ones the launch runs as above; otherwise each
  /// step that reads one runs its strided variant (bundle/rule.h), tuned winners aside.
  Status launch(CUstream stream, std::span<const CUdeviceptr> ptrs,
                std::span<const int64_t> symbols, std::span<const int64_t> strides = {}) const;
  /// Where a launch's variants come from.
  enum class Source { default_config, tuned_exact, tuned_bucket };
  /// The variants launch() would use for these symbol values, and why: a tuned winner for
  /// exactly this shape, else for its bucket (bundle/cache.h; a row tier's shifting twin
  /// instead where this shape's rows are not whole vectors: bundle/rule.h odd_rows_variant),
  /// else the chosen default.
  /// Allocates nothing. `why` (optional, allocates) gets a sentence for logs.
  /// With `strides` (checked, as launch() takes them) that are not the contiguous ones, each
  /// step that reads a strided input gets its strided variant, as launch() would run it.
  Source choose(std::span<const int64_t> symbols, std::span<int> variants,
                std::string* why = nullptr, std::span<const int64_t> strides = {}) const;

  /// Launches a specific variant of each step (one entry per step); never falls back: a
  /// misaligned pointer for a vectorised variant is an error, and so is a variant other than
  /// the step's strided one when `strides` are not the contiguous ones.
  Status launch_variants(CUstream stream, std::span<const CUdeviceptr> ptrs,
                         std::span<const int64_t> symbols, std::span<const int> variants,
                         std::span<const int64_t> strides = {}) const;

 private:
  friend class Bundle;
  struct LoadedVariant {
    CUfunction fn = nullptr;          // null when the variant could not be loaded here
    CUfunction general_fn = nullptr;  // its general entry (bundle::GeneralForm), if it has one
    bool dependent = false;  // its image waits for the kernel before it (a dependent launch)
    std::string load_error;
  };
  /// Steps 3 and 4 of the launch, on checked arguments and variants that loaded.
  Status lay_out_and_enqueue(CUstream stream, std::span<const CUdeviceptr> ptrs,
                             std::span<const int64_t> symbols, std::span<const int> variants,
                             bool fallback, std::span<const int64_t> strides) const;
  /// Step 4 of the launch: the driver calls for a checked, laid-out launch; `strides` are the
  /// effective ones (launch::effective_strides).
  Status enqueue(CUstream stream, std::span<const CUdeviceptr> ptrs,
                 std::span<const int64_t> symbols, const launch::Layout& layout,
                 std::span<const int64_t> strides) const;
  /// The variant step `step` runs without a tuned entry (launch::heuristic_variant).
  int heuristic(size_t step, std::span<const int64_t> symbols) const;

  const Runtime* rt_ = nullptr;
  const bundle::KernelInfo* info_ = nullptr;
  std::vector<std::vector<LoadedVariant>> steps_;  // [step][variant]
  launch::EncodedKernel enc_;
  launch::DeviceFacts facts_;
  std::vector<launch::StepRule> rules_;                      // [step]
  std::vector<std::vector<int64_t>> max_dynamic_smem_;       // [step][variant], staging variants
  std::vector<std::vector<launch::ClusterFacts>> clusters_;  // [step][variant]

  // Tuned winners from the cache, one row per shape (exact or bucket), in symbol order; a
  // variant of -1 means the step had no entry and uses its rule (heuristic or chosen).
  struct Tuned {
    bool bucket = false;
    std::vector<int64_t> values;
    std::vector<int> variants;
  };
  std::vector<Tuned> tuned_;
  mutable std::array<std::atomic<bool>, 3> logged_{};  // KILN_LOG: once per kernel and source
  bool log_ = false;
};

/// A bundle loaded onto the device: every variant's module, cubin for this device's
/// architecture when the bundle has one (else the PTX, JIT-compiled by the driver).
class Bundle {
 public:
  /// Reads DIR/manifest.json and loads every variant that can run on `rt`'s device (see
  /// runtime.cpp for the image choice). Fails when a step has no such variant, naming the
  /// kernel, the step and each variant's reason. `rt` must outlive the bundle.
  static Result<std::unique_ptr<Bundle>> load(const Runtime& rt, const std::string& dir);
  ~Bundle();
  const bundle::Manifest& manifest() const { return manifest_; }
  /// nullptr when the bundle has no such kernel.
  const Kernel* find(std::string_view name) const;
  Kernel* find(std::string_view name);

  /// Uses the tuned winners of `c` for this device: entries for this GPU (name, compute
  /// capability, SM count), driver version and Kiln version whose kernel hash and winning
  /// config the bundle has. Returns one line per entry it ignored and why. With KILN_LOG=1
  /// in the environment each kernel reports on stderr, once per kind of choice, which
  /// variants it launched and why. Call it before launching: it is not synchronized with
  /// launches running on other threads.
  std::vector<std::string> use_cache(const cache::Cache& c);

 private:
  Bundle() = default;
  const Runtime* rt_ = nullptr;
  bundle::Manifest manifest_;
  std::vector<CUmodule> modules_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
};

}  // namespace kiln
