// The launch as a sequence. Kernel::launch (runtime/launch.cpp) runs four steps in order, and
// only the last one calls the driver:
//   1. check_arguments: the counts, every pointer non-null and aligned to its elements, every
//      symbol > 0, every tensor's, buffer's and step's size within int64, no output
//      overlapping another argument;
//   2. choose: per step a tuned winner, else heuristic_variant, evaluated on checked values
//      only (a symbol of 0 never reaches a division);
//   3. lay_out: the vector-alignment fallback, each step's grid, a split step's workspace, a
//      staging step's dynamic shared memory, the buffers' and the workspace's offsets in one
//      scratch memory;
//   4. enqueue (Kernel::enqueue): the scratch (Runtime::scratch), the launches.
// Steps 1 to 3 are pure functions of the manifest, the device's facts and the arguments:
// `kiln explain`, the tests and the launch fuzz target call them without a GPU. They allocate
// nothing (the hot path stays allocation-free); only the error messages do.
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "bundle/manifest.h"
#include "bundle/rule.h"
#include "bundle/status.h"

namespace kiln::launch {

/// Most arguments (pointers, buffers and symbols, plus a split step's workspace and phase or
/// a contraction's tensor maps and their flag) and steps a launch supports: its arrays live
/// on the stack.
inline constexpr size_t kMaxArgs = 64;
inline constexpr size_t kMaxSteps = 32;
/// The arguments after the symbols a step may take (manifest.h), strides not counted.
/// (a split contraction's workspace and phase, its tensor maps and their flag).
inline constexpr size_t kMaxTrailingArgs = 2 + bundle::kMaxTensorMaps + 1;

/// A kernel's shapes encoded for evaluation without lookups: an entry > 0 is a fixed extent,
/// an entry v < 0 is symbol number -v - 1 (KernelInfo::symbols order).
struct EncodedKernel {
  std::vector<std::vector<int64_t>> params;   // [param]
  std::vector<std::vector<int64_t>> buffers;  // [buffer]
  std::vector<std::vector<int64_t>> spaces;   // [step]: its iteration space (rows)
  std::vector<std::vector<int64_t>> reduced;  // [step]: its reduced extent, or empty
};
EncodedKernel encode(const bundle::KernelInfo& k);

/// The number of elements of an encoded shape, or nullopt when it overflows int64. `symbols`
/// must hold one value per symbol.
std::optional<int64_t> numel(const std::vector<int64_t>& dims, std::span<const int64_t> symbols);

// Step 2's rule (bundle/rule.h), shared with the compiler's kernel plan.
using bundle::DeviceFacts;
using bundle::heuristic_variant;
using bundle::split_blocks;
using bundle::step_rule;
using bundle::StepRule;

/// The number of strides a launch of `info` takes: the ranks of its strided inputs, summed.
size_t stride_count(const bundle::KernelInfo& info);

/// Step 1. `strides`: for each strided input (ParamInfo::strided) in parameter order, one
/// stride per dimension, in elements; empty means the contiguous ones. Each must be >= 0, and
/// the view's footprint ((extent - 1) * stride summed, plus one element, in bytes) must fit
/// int64; that footprint is what the overlap check of outputs uses.
Status check_arguments(const bundle::KernelInfo& info, const EncodedKernel& enc,
                       std::span<const CUdeviceptr> ptrs, std::span<const int64_t> symbols,
                       std::span<const int64_t> strides = {});

/// The strides the entries take (manifest.h): `strides` copied into `out`, or the contiguous
/// ones when `strides` is empty; on checked arguments. Returns whether every strided input's
/// strides are contiguous (bundle::contiguous_strides). `out` holds stride_count(info).
bool effective_strides(const bundle::KernelInfo& info, const EncodedKernel& enc,
                       std::span<const int64_t> symbols, std::span<const int64_t> strides,
                       std::span<int64_t> out);

/// Step 2 for strided inputs whose strides are not contiguous: every step that reads one runs
/// its strided variant for its rows (bundle::strided_variant; checked symbols). With
/// `explicit_choice` (launch_variants) a variant that is not strided is an error instead of
/// being replaced. Fails when such a step has no strided variant loaded for its rows.
Status choose_strided(const bundle::KernelInfo& info, const EncodedKernel& enc,
                      std::span<const StepRule> rules, std::span<const int64_t> symbols,
                      std::span<int> variants, bool explicit_choice);

/// Step 2 for one step, on checked symbols: heuristic_variant with the step's sizes.
int heuristic_for(const bundle::KernelInfo& info, const EncodedKernel& enc, size_t step,
                  const StepRule& rule, std::span<const int64_t> symbols,
                  const DeviceFacts& device);

/// One step's launch, as step 3 lays it out.
struct StepLaunch {
  int variant = 0;
  unsigned grid = 0;
  unsigned block = 0;
  unsigned smem_bytes = 0;      // staging variants: dynamic shared memory
  int64_t workspace_bytes = 0;  // split variants
  int phases = 0;               // split variants: launches of the step, else 0
  // Split variants with split.lead_last: the blocks per tile (S) of every phase but the last,
  // which runs grid / S blocks and takes S in its phase argument's high word; else 0.
  int64_t lead_split = 0;
  unsigned cluster = 1;  // blocks per cluster (grid a multiple), 1: no cluster
  bool general = false;  // runs the variant's general entry (bundle::GeneralForm)
};

/// How a loaded contraction variant runs in clusters (manifest.h, tile.cluster): its image's
/// blocks per cluster (1: none) and how many such clusters the device holds at once
/// (cuOccupancyMaxActiveClusters).
struct ClusterFacts {
  int blocks = 1;
  int64_t resident = 0;
};

/// What cuTensorMapEncodeTiled takes for one of a variant's tensor maps (manifest.h): the
/// tensor at `address` as the row-major array it is, innermost dimension first.
struct TensorMapRequest {
  int rank = 0;
  std::array<cuuint64_t, bundle::kMaxTensorMapRank> dims{};
  std::array<cuuint64_t, bundle::kMaxTensorMapRank> strides{};  // bytes, of dimensions 1 ..
  std::array<cuuint32_t, bundle::kMaxTensorMapRank> box{};
  /// TMA's rules hold (a 16-byte aligned address, strides multiples of 16 bytes below 2^40,
  /// extents up to 2^32): the runtime asks the driver to encode it, else the kernel copies
  /// without maps.
  bool encodable = false;
};
/// The request for map `t` of a variant of `info` whose tensor is at `address`, on checked
/// symbols.
TensorMapRequest tensor_map_request(const bundle::KernelInfo& info, const EncodedKernel& enc,
                                    const bundle::TensorMapInfo& t, CUdeviceptr address,
                                    std::span<const int64_t> symbols);

struct Layout {
  std::array<StepLaunch, kMaxSteps> steps{};
  std::array<int64_t, kMaxArgs> buffer_offset{};  // [buffer], each a multiple of kBufferAlign
  int64_t buffer_bytes = 0;                       // every buffer, from the scratch's start
  // The split steps' workspace (one at a time, each poisoned before its step when asked),
  // after the buffers in the same scratch memory, and the scratch's size: buffer_bytes plus
  // the largest step's workspace_bytes (0: the launch needs no scratch).
  int64_t workspace_offset = 0;
  int64_t scratch_bytes = 0;
};

/// Step 3, on arguments that passed step 1 and variants that exist and loaded. A variant whose
/// vector alignment a pointer misses is replaced by the step's scalar fallback when `fallback`
/// (else an error). `max_dynamic_smem[s][v]`: the dynamic shared memory a staging variant may
/// use on this device (0 for every other variant). `clusters[s][v]`, where present: how
/// contraction variant v of step s runs in clusters (none where absent).
Status lay_out(const bundle::KernelInfo& info, const EncodedKernel& enc,
               std::span<const StepRule> rules,
               const std::vector<std::vector<int64_t>>& max_dynamic_smem,
               std::span<const CUdeviceptr> ptrs, std::span<const int64_t> symbols,
               std::span<const int> variants, bool fallback, const DeviceFacts& device, Layout& out,
               const std::vector<std::vector<ClusterFacts>>& clusters = {});

}  // namespace kiln::launch
