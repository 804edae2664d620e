// Kernel: the launch as a sequence (runtime/launch.h) — check every argument, choose the
// variants (a tuned winner, else the heuristic), lay out buffers and workspaces, then enqueue
// (the only step that calls the driver). Also the explicit variant choices of `kiln tune`
// and `kiln run --variant`.
#include <fmt/format.h>

#include <bit>
#include <cstdio>

#include "bundle/cache.h"
#include "runtime/driver.h"
#include "runtime/launch.h"
#include "runtime/runtime.h"
#include "runtime/shape_recorder.h"

namespace kiln {
namespace {

// The element type of a tensor map of `dt` elements (manifest.h: bf16, f16 and f32 operands, the
// last read as tf32; bf16, f16 and f32 outputs).
CUtensorMapDataType tensor_map_type(DType dt) {
  switch (dt) {
    case DType::f16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::f32:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    default:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  }
}

}  // namespace

Status Kernel::check_variant(size_t step, int variant) const {
  const bundle::KernelInfo& info = *info_;
  if (step >= steps_.size()) {
    return Status::error(
        fmt::format("{}: step {} does not exist ({} steps)", info.name, step, steps_.size()));
  }
  const auto& loaded = steps_[step];
  if (variant < 0 || static_cast<size_t>(variant) >= loaded.size()) {
    return Status::error(fmt::format("{}: step {} ({}): variant {} does not exist ({} variants)",
                                     info.name, step, info.steps[step].name, variant,
                                     loaded.size()));
  }
  if (loaded[variant].fn == nullptr) {
    return Status::error(fmt::format("{}: step {} ({}): variant {} cannot run here: {}", info.name,
                                     step, info.steps[step].name, variant,
                                     loaded[variant].load_error));
  }
  return Status::ok_status();
}

Status Kernel::set_choice(size_t step, int variant) {
  if (Status s = check_variant(step, variant); !s.ok()) return s;
  rules_[step] = bundle::pinned_rule(rules_[step], variant);
  return Status::ok_status();
}

int Kernel::heuristic(size_t step, std::span<const int64_t> symbols) const {
  return launch::heuristic_for(*info_, enc_, step, rules_[step], symbols, facts_);
}

Kernel::Source Kernel::choose(std::span<const int64_t> symbols, std::span<int> variants,
                              std::string* why, std::span<const int64_t> strides) const {
  for (size_t s = 0; s < variants.size() && s < rules_.size(); ++s) {
    variants[s] = heuristic(s, symbols);
  }
  auto match = [&](bool bucket) -> const Tuned* {
    for (const Tuned& t : tuned_) {
      if (t.bucket != bucket || t.values.size() != symbols.size()) continue;
      bool same = true;
      for (size_t i = 0; same && i < symbols.size(); ++i) {
        same = (bucket ? cache::bucket_value(symbols[i]) : symbols[i]) == t.values[i];
      }
      if (same) return &t;
    }
    return nullptr;
  };
  Source src = Source::tuned_exact;
  const Tuned* t = match(false);
  if (!t) {
    src = Source::tuned_bucket;
    t = match(true);
  }
  if (!t) src = Source::default_config;
  if (t) {
    for (size_t s = 0; s < variants.size() && s < t->variants.size(); ++s) {
      if (t->variants[s] < 0) continue;
      variants[s] = t->variants[s];
      // Tuned for another shape of the bucket: rows of this length may not be whole vectors,
      // where the tuned tier's shifting twin runs (bundle/rule.h odd_rows_variant).
      if (src != Source::tuned_bucket || s >= rules_.size()) continue;
      if (const std::optional<int64_t> reduced = launch::numel(enc_.reduced[s], symbols)) {
        variants[s] = bundle::odd_rows_variant(info_->steps[s], rules_[s], variants[s], *reduced);
      }
    }
  }
  if (!strides.empty() && strides.size() == launch::stride_count(*info_)) {
    std::array<int64_t, launch::kMaxArgs> buf;
    const std::span<int64_t> effective(buf.data(), strides.size());
    if (!launch::effective_strides(*info_, enc_, symbols, strides, effective)) {
      (void)launch::choose_strided(*info_, enc_, rules_, symbols, variants,
                                   false);  // a failure: as it was
    }
  }
  if (why) {
    std::string shape, vars;
    for (size_t i = 0; i < symbols.size() && i < info_->symbols.size(); ++i) {
      shape += fmt::format("{}{}={}", i ? "," : "", info_->symbols[i], symbols[i]);
    }
    for (size_t s = 0; s < variants.size(); ++s)
      vars += fmt::format("{}v{}", s ? "+" : "", variants[s]);
    *why = fmt::format("{} {}: {} ({})", name(), shape, vars,
                       src == Source::tuned_exact    ? "tuned for this shape"
                       : src == Source::tuned_bucket ? "tuned for this shape's bucket"
                                                     : "no tuned entry: the heuristic default");
  }
  return src;
}

Status Kernel::launch(CUstream stream, std::span<const CUdeviceptr> ptrs,
                      std::span<const int64_t> symbols, std::span<const int64_t> strides) const {
  if (Status s = launch::check_arguments(*info_, enc_, ptrs, symbols, strides); !s.ok()) return s;
  record_launch_shape(*info_, symbols);  // KILN_RECORD_SHAPES (runtime/shape_recorder.h)
  std::array<int64_t, launch::kMaxArgs> stride_buf;
  const std::span<int64_t> effective(stride_buf.data(), launch::stride_count(*info_));
  const bool contiguous = launch::effective_strides(*info_, enc_, symbols, strides, effective);
  std::array<int, launch::kMaxSteps> buf;
  std::span<int> variants(buf.data(), steps_.size());
  const Source src = choose(symbols, variants);
  if (log_ && !logged_[static_cast<int>(src)].exchange(true)) {
    std::string why;
    choose(symbols, variants, &why);
    std::fprintf(stderr, "kiln: %s\n", why.c_str());
  }
  if (!contiguous) {
    if (Status s = launch::choose_strided(*info_, enc_, rules_, symbols, variants, false);
        !s.ok()) {
      return s;
    }
  }
  return lay_out_and_enqueue(stream, ptrs, symbols, variants, true, effective);
}

Status Kernel::launch_variants(CUstream stream, std::span<const CUdeviceptr> ptrs,
                               std::span<const int64_t> symbols, std::span<const int> variants,
                               std::span<const int64_t> strides) const {
  if (Status s = launch::check_arguments(*info_, enc_, ptrs, symbols, strides); !s.ok()) return s;
  if (variants.size() != steps_.size()) {
    return Status::error(fmt::format("{}: expected {} variant choices (one per step), got {}",
                                     name(), steps_.size(), variants.size()));
  }
  for (size_t s = 0; s < variants.size(); ++s) {
    int v = variants[s];
    if (v < 0 || static_cast<size_t>(v) >= steps_[s].size() || steps_[s][v].fn == nullptr) {
      return Status::error(
          fmt::format("{}: step {} ({}): variant {} {}", name(), s, info_->steps[s].name, v,
                      v < 0 || static_cast<size_t>(v) >= steps_[s].size()
                          ? fmt::format("does not exist ({} variants)", steps_[s].size())
                          : "cannot run here: " + steps_[s][v].load_error));
    }
  }
  std::array<int64_t, launch::kMaxArgs> stride_buf;
  const std::span<int64_t> effective(stride_buf.data(), launch::stride_count(*info_));
  if (!launch::effective_strides(*info_, enc_, symbols, strides, effective)) {
    std::array<int, launch::kMaxSteps> copy;
    std::copy(variants.begin(), variants.end(), copy.begin());
    if (Status s = launch::choose_strided(*info_, enc_, rules_, symbols,
                                          std::span<int>(copy.data(), variants.size()), true);
        !s.ok()) {
      return s;
    }
  }
  return lay_out_and_enqueue(stream, ptrs, symbols, variants, false, effective);
}

Status Kernel::lay_out_and_enqueue(CUstream stream, std::span<const CUdeviceptr> ptrs,
                                   std::span<const int64_t> symbols, std::span<const int> variants,
                                   bool fallback, std::span<const int64_t> strides) const {
  launch::Layout layout;
  if (Status s = launch::lay_out(*info_, enc_, rules_, max_dynamic_smem_, ptrs, symbols, variants,
                                 fallback, facts_, layout, clusters_);
      !s.ok()) {
    return s;
  }
  return enqueue(stream, ptrs, symbols, layout, strides);
}

Status Kernel::enqueue(CUstream stream, std::span<const CUdeviceptr> ptrs,
                       std::span<const int64_t> symbols, const launch::Layout& layout,
                       std::span<const int64_t> strides) const {
  const bundle::KernelInfo& info = *info_;
  const size_t np = info.params.size(), nb = info.buffers.size(), ns = info.symbols.size();
  const DriverApi& api = rt_->driver();

  // The runtime may be used from threads that never made its context current.
  CUcontext current = nullptr;
  if (api.cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != rt_->context()) {
    if (CUresult r = api.cuCtxSetCurrent(rt_->context()); r != CUDA_SUCCESS) {
      return Status::error(fmt::format("{}: cannot make the runtime's context current: {}",
                                       info.name, rt_->describe(r)));
    }
  }

  // Scratch memory (buffers, workspaces) filled with the harness's poison byte when it asks.
  auto poison = [&](CUdeviceptr p, int64_t bytes) {
    const int byte = rt_->scratch_poison();
    return byte < 0 ? CUDA_SUCCESS
                    : api.cuMemsetD8Async(p, static_cast<unsigned char>(byte),
                                          static_cast<size_t>(bytes), stream);
  };

  // One scratch memory holds the buffers, then the split steps' workspace; the lease gives it
  // back (to the stream's keeping, or freed in stream order) on every path out.
  Runtime::ScratchLease scratch;
  std::array<CUdeviceptr, launch::kMaxArgs> buffer_ptrs{};
  if (layout.scratch_bytes > 0) {
    if (Status st = rt_->scratch(static_cast<size_t>(layout.scratch_bytes), stream, scratch);
        !st.ok()) {
      return Status::error(
          fmt::format("{}: the kernel's scratch memory ({} bytes: buffers and "
                      "split workspace): {}",
                      info.name, layout.scratch_bytes, st.message()));
    }
    if (scratch.ptr() % bundle::kBufferAlign != 0) {  // the driver's pools align to more
      return Status::error(
          fmt::format("{}: the driver allocated the kernel's scratch memory at {:#x}, "
                      "not a multiple of {} bytes",
                      info.name, scratch.ptr(), bundle::kBufferAlign));
    }
  }
  for (size_t i = 0; i < nb; ++i) {
    buffer_ptrs[i] = scratch.ptr() + static_cast<CUdeviceptr>(layout.buffer_offset[i]);
  }
  if (nb > 0) {
    if (CUresult r = poison(scratch.ptr(), layout.buffer_bytes); r != CUDA_SUCCESS) {
      return Status::error(fmt::format("{}: poisoning the kernel's buffers failed: {}", info.name,
                                       rt_->describe(r)));
    }
  }

  // A scalar's slot holds its value zero-extended (manifest.h): on a little-endian host the
  // slot's address is the address of its value in its own type, which is what the driver
  // copies the parameter's bytes from.
  static_assert(std::endian::native == std::endian::little, "scalar slots are little-endian");
  std::array<void*, launch::kMaxArgs> args;
  for (size_t i = 0; i < np; ++i) args[i] = const_cast<CUdeviceptr*>(&ptrs[i]);
  for (size_t i = 0; i < nb; ++i) args[np + i] = &buffer_ptrs[i];
  const size_t na = np + nb;  // pointer arguments
  for (size_t j = 0; j < ns; ++j) args[na + j] = const_cast<int64_t*>(&symbols[j]);
  CUdeviceptr workspace = 0;
  int64_t phase = 0;
  std::array<CUtensorMap, bundle::kMaxTensorMaps> maps;
  int64_t maps_ok = 0;
  bool after_kernel = false;  // the stream's last operation is this launch's previous kernel
  for (size_t s = 0; s < info.steps.size(); ++s) {
    const launch::StepLaunch& l = layout.steps[s];
    const bundle::Variant& var = info.steps[s].variants[static_cast<size_t>(l.variant)];
    args[na + ns] = &workspace;
    args[na + ns + 1] = &phase;
    // After the symbols, a split's workspace and phase; then a contraction's tensor maps and
    // their flag, or the strided inputs' strides (manifest.h).
    const size_t after_split = na + ns + (var.split.phases > 0 ? 2 : 0);
    if (!var.tile.tensor_maps.empty()) {
      // The maps, and in the flag bit 0 when those read through were all encoded (else the
      // kernel copies without them), bit 1 when those stored through were (else it stores
      // without them): manifest.h.
      const bool can = api.cuTensorMapEncodeTiled != nullptr;
      bool loads_ok = can, stores_ok = can;
      for (size_t i = 0; i < var.tile.tensor_maps.size(); ++i) {
        const bundle::TensorMapInfo& t = var.tile.tensor_maps[i];
        const auto p = static_cast<size_t>(t.param);
        const CUdeviceptr address = p < np ? ptrs[p] : buffer_ptrs[p - np];
        const launch::TensorMapRequest r =
            launch::tensor_map_request(info, enc_, t, address, symbols);
        maps[i] = CUtensorMap{};
        bool& ok = t.store ? stores_ok : loads_ok;
        if (ok && r.encodable) {
          const DType dt = p < np ? info.params[p].dtype : info.buffers[p - np].dtype;
          const cuuint32_t unit[bundle::kMaxTensorMapRank] = {1, 1, 1, 1, 1};
          ok = api.cuTensorMapEncodeTiled(
                   &maps[i], tensor_map_type(dt), static_cast<cuuint32_t>(r.rank),
                   reinterpret_cast<void*>(address), r.dims.data(), r.strides.data(), r.box.data(),
                   unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
        } else {
          ok = false;
        }
        args[after_split + i] = &maps[i];
      }
      // Bit 1 only with a store map: a kernel of a bundle before format 12 reads any flag
      // but 0 as its maps encoded.
      maps_ok = (loads_ok ? 1 : 0) | (var.tile.stores_output() && stores_ok ? 2 : 0);
      args[after_split + var.tile.tensor_maps.size()] = &maps_ok;
    }
    for (size_t j = 0; j < strides.size(); ++j) {
      args[after_split + j] = const_cast<int64_t*>(&strides[j]);
    }
    auto fail = [&](std::string_view what, CUresult r) {
      return Status::error(fmt::format(
          "{}: step {} ({}), variant {}: {} failed: {}{}", info.name, s, info.steps[s].name,
          l.variant, what, rt_->describe(r),
          r == CUDA_ERROR_INVALID_CONTEXT ? " (call Runtime::make_current on this thread)" : ""));
    };
    const LoadedVariant& lv = steps_[s][static_cast<size_t>(l.variant)];
    CUfunction fn = l.general ? lv.general_fn : lv.fn;
    const char* launcher = "";
    auto launch = [&](unsigned grid) {
      // A dependent launch only right after this launch's previous kernel: the first step
      // waits for whatever the stream ran before in full (a launch before it on the stream
      // may have used the same scratch), and so does a kernel after a workspace's poisoning.
      const bool dependent = after_kernel && lv.dependent && rt_->dependent_launch();
      after_kernel = true;
      launcher = l.cluster > 1 || dependent ? "cuLaunchKernelEx" : "cuLaunchKernel";
      if (l.cluster > 1 || dependent) {  // clusters load only where cuLaunchKernelEx is
        std::array<CUlaunchAttribute, 2> attrs;
        const CUlaunchConfig config =
            launch_config(l.cluster, dependent, grid, l.block, l.smem_bytes, stream, attrs);
        return api.cuLaunchKernelEx(&config, fn, args.data(), nullptr);
      }
      return api.cuLaunchKernel(fn, grid, 1, 1, l.block, 1, 1, l.smem_bytes, stream, args.data(),
                                nullptr);
    };
    if (l.phases == 0) {
      if (CUresult r = launch(l.grid); r != CUDA_SUCCESS) return fail(launcher, r);
      continue;
    }
    workspace = scratch.ptr() + static_cast<CUdeviceptr>(layout.workspace_offset);
    if (CUresult r = poison(workspace, l.workspace_bytes); r != CUDA_SUCCESS) {
      return fail("poisoning the split workspace (cuMemsetD8Async)", r);
    }
    if (rt_->scratch_poison() >= 0) after_kernel = false;  // a memset came between
    for (int p = 0; p < l.phases; ++p) {
      // The last phase of a lead_last variant: one block per tile, S in the high word.
      const bool lead = l.lead_split > 0 && p == l.phases - 1;
      phase = lead ? (l.lead_split << 32) | p : p;
      const unsigned grid = lead ? static_cast<unsigned>(l.grid / l.lead_split) : l.grid;
      if (CUresult r = launch(grid); r != CUDA_SUCCESS) {
        return fail(fmt::format("{} (phase {})", launcher, p), r);
      }
    }
  }
  return Status::ok_status();
}

}  // namespace kiln
