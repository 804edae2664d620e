// The launch sequence's pure steps (runtime/launch.h): check, choose, lay out. The driver
// calls of the last step, and Kernel's methods that run the sequence, are runtime/kernel.cpp.
//
// Every check of step 1 comes before anything reads a size: a symbol of 0 or of 2^62, a null
// or misaligned pointer, an output overlapping an input are refused with a message naming the
// argument or symbol, and a rejected launch touches nothing on the device. The heuristic of
// step 2 and the layout of step 3 only see values that passed, and are written so that they
// would not divide by zero or overflow even on values that did not.
#include "runtime/launch.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln {
namespace launch {
namespace {

using bundle::KernelInfo;
using bundle::Variant;

int64_t extent(int64_t d, std::span<const int64_t> symbols) {
  return d > 0 ? d : symbols[static_cast<size_t>(-d - 1)];
}

std::vector<int64_t> encode_dims(const std::vector<Dim>& dims, const KernelInfo& k) {
  std::vector<int64_t> out;
  for (const Dim& d : dims) {
    if (d.is_fixed()) {
      out.push_back(d.value());
    } else {
      auto it = std::find(k.symbols.begin(), k.symbols.end(), d.name());
      out.push_back(-static_cast<int64_t>(it - k.symbols.begin()) - 1);
    }
  }
  return out;
}

// "[M, N] = [4097, 33]"
std::string shape_text(const std::vector<Dim>& shape, const std::vector<int64_t>& dims,
                       std::span<const int64_t> symbols) {
  std::vector<std::string> names, values;
  for (size_t i = 0; i < shape.size(); ++i) {
    names.push_back(shape[i].is_fixed() ? std::to_string(shape[i].value()) : shape[i].name());
    values.push_back(std::to_string(extent(dims[i], symbols)));
  }
  return fmt::format("[{}] = [{}]", fmt::join(names, ", "), fmt::join(values, ", "));
}

using bundle::ceil_div;

}  // namespace

EncodedKernel encode(const KernelInfo& k) {
  EncodedKernel e;
  for (const bundle::ParamInfo& p : k.params) e.params.push_back(encode_dims(p.shape, k));
  for (const bundle::ParamInfo& b : k.buffers) e.buffers.push_back(encode_dims(b.shape, k));
  for (const bundle::Step& s : k.steps) {
    e.spaces.push_back(encode_dims(s.space, k));
    e.reduced.push_back(encode_dims(s.reduced, k));
  }
  return e;
}

std::optional<int64_t> numel(const std::vector<int64_t>& dims, std::span<const int64_t> symbols) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(n, extent(d, symbols), &n)) return std::nullopt;
  }
  return n;
}

int heuristic_for(const KernelInfo& info, const EncodedKernel& enc, size_t step,
                  const StepRule& rule, std::span<const int64_t> symbols,
                  const DeviceFacts& device) {
  if (symbols.size() != info.symbols.size()) return rule.chosen;
  std::vector<int64_t> space, reduced;
  for (int64_t d : enc.spaces[step]) space.push_back(extent(d, symbols));
  for (int64_t d : enc.reduced[step]) reduced.push_back(extent(d, symbols));
  return bundle::rule_variant(info.steps[step], rule, space, reduced, device);
}

size_t stride_count(const KernelInfo& info) {
  size_t n = 0;
  for (const bundle::ParamInfo& p : info.params) n += p.strided ? p.shape.size() : 0;
  return n;
}

Status check_arguments(const KernelInfo& info, const EncodedKernel& enc,
                       std::span<const CUdeviceptr> ptrs, std::span<const int64_t> symbols,
                       std::span<const int64_t> strides) {
  const size_t np = info.params.size(), nb = info.buffers.size(), ns = info.symbols.size();
  const size_t nstrides = stride_count(info);
  if (np + nb + ns + nstrides + kMaxTrailingArgs > kMaxArgs) {
    return Status::error(fmt::format(
        "{}: {} arguments (pointers, buffers, symbols and strides); the runtime supports at "
        "most {}",
        info.name, np + nb + ns + nstrides, kMaxArgs - kMaxTrailingArgs));
  }
  if (!strides.empty() && strides.size() != nstrides) {
    std::vector<std::string> names;
    for (const auto& p : info.params) {
      if (p.strided) names.push_back(fmt::format("{} of {}", p.shape.size(), p.name));
    }
    return Status::error(fmt::format(
        "{}: expected {} strides ({}), or none for contiguous tensors, got {}", info.name, nstrides,
        names.empty() ? std::string("no strided parameters")
                      : fmt::format("{}", fmt::join(names, ", ")),
        strides.size()));
  }
  if (info.steps.size() > kMaxSteps) {
    return Status::error(fmt::format("{}: {} steps; the runtime supports at most {}", info.name,
                                     info.steps.size(), kMaxSteps));
  }
  if (ptrs.size() != np) {
    std::vector<std::string> names;
    for (const auto& p : info.params) names.push_back(p.name);
    return Status::error(fmt::format("{}: expected {} pointer{} ({}), got {}", info.name, np,
                                     np == 1 ? "" : "s", fmt::join(names, ", "), ptrs.size()));
  }
  if (symbols.size() != ns) {
    return Status::error(fmt::format("{}: expected {} symbol value{} ({}), got {}", info.name, ns,
                                     ns == 1 ? "" : "s", fmt::join(info.symbols, ", "),
                                     symbols.size()));
  }
  for (size_t i = 0; i < np; ++i) {
    if (ptrs[i] == 0 && !info.params[i].scalar) {
      return Status::error(
          fmt::format("{}: argument {} ({}): null pointer", info.name, i + 1, info.params[i].name));
    }
  }
  for (size_t j = 0; j < ns; ++j) {
    if (symbols[j] <= 0) {
      return Status::error(
          fmt::format("{}: symbol {} = {} must be > 0", info.name, info.symbols[j], symbols[j]));
    }
  }
  std::array<int64_t, kMaxArgs> bytes{};  // each parameter's, for the overlap check
  size_t next_stride = 0;                 // the first stride of the next strided input
  for (size_t i = 0; i < np; ++i) {
    const bundle::ParamInfo& p = info.params[i];
    const auto elem = static_cast<int64_t>(size_of(p.dtype));
    if (p.scalar) {  // its slot holds its value, zero-extended: no memory behind it
      if (elem < 8 && (ptrs[i] >> (8 * elem)) != 0) {
        return Status::error(
            fmt::format("{}: argument {} ({}): a {} scalar's slot holds its {} "
                        "bytes, zero-extended; got 0x{:x}",
                        info.name, i + 1, p.name, to_string(p.dtype), elem, ptrs[i]));
      }
      continue;
    }
    if (ptrs[i] % static_cast<CUdeviceptr>(elem) != 0) {
      return Status::error(
          fmt::format("{}: argument {} ({}): pointer is not aligned to its {}-byte elements",
                      info.name, i + 1, p.name, elem));
    }
    std::optional<int64_t> n = numel(enc.params[i], symbols);
    if (!n || __builtin_mul_overflow(*n, elem, &bytes[i])) {
      return Status::error(
          fmt::format("{}: argument {} ({}): shape {} is too large (its {} overflows int64)",
                      info.name, i + 1, p.name, shape_text(p.shape, enc.params[i], symbols),
                      n ? "size in bytes" : "element count"));
    }
    if (p.strided && !strides.empty()) {
      // The view's footprint: its last element's offset plus one, in bytes, within int64 (the
      // kernels' offsets are 64-bit).
      const std::span<const int64_t> st = strides.subspan(next_stride, p.shape.size());
      next_stride += p.shape.size();
      int64_t last = 0;
      for (size_t d = 0; d < st.size(); ++d) {
        if (st[d] < 0) {
          return Status::error(fmt::format(
              "{}: argument {} ({}): stride {} of dimension {} is negative; negative strides "
              "are not supported (pass the flipped view's base and its absolute strides "
              "through a contiguous copy)",
              info.name, i + 1, p.name, st[d], d));
        }
        int64_t term = 0;
        if (__builtin_mul_overflow(extent(enc.params[i][d], symbols) - 1, st[d], &term) ||
            __builtin_add_overflow(last, term, &last)) {
          last = -1;
          break;
        }
      }
      if (last < 0 || __builtin_add_overflow(last, 1, &last) ||
          __builtin_mul_overflow(last, elem, &bytes[i])) {
        return Status::error(fmt::format(
            "{}: argument {} ({}): strides [{}] of shape {} reach past int64 bytes", info.name,
            i + 1, p.name, fmt::join(st, ", "), shape_text(p.shape, enc.params[i], symbols)));
      }
    }
  }
  // The buffers must fit one allocation of aligned pieces (lay_out places them).
  int64_t total = 0;
  for (size_t i = 0; i < nb; ++i) {
    std::optional<int64_t> n = numel(enc.buffers[i], symbols);
    const auto elem = static_cast<int64_t>(size_of(info.buffers[i].dtype));
    int64_t b = 0;
    if (!n || __builtin_mul_overflow(*n, elem, &b) || __builtin_add_overflow(total, b, &total) ||
        __builtin_add_overflow(total, bundle::kBufferAlign, &total)) {
      return Status::error(fmt::format(
          "{}: buffer {}: shape {} is too large (the kernel's buffers overflow int64 bytes)",
          info.name, info.buffers[i].name,
          shape_text(info.buffers[i].shape, enc.buffers[i], symbols)));
    }
  }
  for (size_t s = 0; s < info.steps.size(); ++s) {
    const bundle::Step& step = info.steps[s];
    if (!numel(enc.spaces[s], symbols)) {
      return Status::error(fmt::format("{}: step {} ({}): iteration space {} overflows int64",
                                       info.name, s, step.name,
                                       shape_text(step.space, enc.spaces[s], symbols)));
    }
    if (!numel(enc.reduced[s], symbols)) {  // one dim: never, but the layout relies on it
      return Status::error(fmt::format("{}: step {} ({}): reduced extent {} overflows int64",
                                       info.name, s, step.name,
                                       shape_text(step.reduced, enc.reduced[s], symbols)));
    }
  }
  // Kernels take their pointers as noalias: an output may not overlap any other argument.
  for (size_t i = 0; i < np; ++i) {
    if (!info.params[i].output) continue;
    for (size_t j = 0; j < np; ++j) {
      if (j == i || info.params[j].scalar) continue;
      const CUdeviceptr a = ptrs[i], b = ptrs[j];
      if (a < b + static_cast<CUdeviceptr>(bytes[j]) &&
          b < a + static_cast<CUdeviceptr>(bytes[i])) {
        return Status::error(fmt::format(
            "{}: argument {} ({}) overlaps argument {} ({}); outputs may not alias other arguments",
            info.name, i + 1, info.params[i].name, j + 1, info.params[j].name));
      }
    }
  }
  return Status::ok_status();
}

bool effective_strides(const KernelInfo& info, const EncodedKernel& enc,
                       std::span<const int64_t> symbols, std::span<const int64_t> strides,
                       std::span<int64_t> out) {
  bool contiguous = true;
  size_t at = 0;
  for (size_t i = 0; i < info.params.size(); ++i) {
    if (!info.params[i].strided) continue;
    const std::vector<int64_t>& dims = enc.params[i];
    std::array<int64_t, kMaxArgs> extents{};
    for (size_t d = 0; d < dims.size(); ++d) extents[d] = extent(dims[d], symbols);
    const std::span<int64_t> mine = out.subspan(at, dims.size());
    if (strides.empty()) {
      int64_t s = 1;
      for (size_t d = dims.size(); d-- > 0;) {
        mine[d] = s;
        s *= extents[d];  // checked: the element count fits int64
      }
    } else {
      std::copy_n(strides.begin() + static_cast<std::ptrdiff_t>(at), dims.size(), mine.begin());
      contiguous = contiguous && bundle::contiguous_strides(
                                     std::span<const int64_t>(extents.data(), dims.size()), mine);
    }
    at += dims.size();
  }
  return contiguous;
}

Status choose_strided(const KernelInfo& info, const EncodedKernel& enc,
                      std::span<const StepRule> rules, std::span<const int64_t> symbols,
                      std::span<int> variants, bool explicit_choice) {
  for (size_t s = 0; s < info.steps.size() && s < variants.size(); ++s) {
    const StepRule& r = rules[s];
    if (!r.reads_strided) continue;
    const bundle::Step& step = info.steps[s];
    const auto v = static_cast<size_t>(variants[s]);
    if (explicit_choice && v < step.variants.size() && step.variants[v].strided) continue;
    const int64_t reduced = numel(enc.reduced[s], symbols).value_or(0);
    const int strided = bundle::strided_variant(r, reduced);
    if (strided < 0) {
      return Status::error(fmt::format(
          "{}: step {} ({}): strides that are not the contiguous ones need the step's strided "
          "variant, which cannot run here",
          info.name, s, step.name));
    }
    if (explicit_choice) {
      return Status::error(fmt::format(
          "{}: step {} ({}): variant {} reads the strided inputs as contiguous tensors, but "
          "their strides are not the contiguous ones (variant {} reads them through strides)",
          info.name, s, step.name, variants[s], strided));
    }
    variants[s] = strided;
  }
  return Status::ok_status();
}

TensorMapRequest tensor_map_request(const KernelInfo& info, const EncodedKernel& enc,
                                    const bundle::TensorMapInfo& t, CUdeviceptr address,
                                    std::span<const int64_t> symbols) {
  const size_t np = info.params.size(), p = static_cast<size_t>(t.param);
  const std::vector<int64_t>& shape = p < np ? enc.params[p] : enc.buffers[p - np];
  const DType dtype = p < np ? info.params[p].dtype : info.buffers[p - np].dtype;
  TensorMapRequest r;
  r.rank = static_cast<int>(shape.size());
  bool ok = address % 16 == 0 && shape.size() == t.box.size() &&
            shape.size() <= bundle::kMaxTensorMapRank;
  cuuint64_t stride = size_of(dtype);
  for (size_t d = 0; ok && d < shape.size(); ++d) {
    const auto n = static_cast<cuuint64_t>(extent(shape[shape.size() - 1 - d], symbols));
    r.dims[d] = n;
    r.box[d] = static_cast<cuuint32_t>(t.box[d]);
    if (d > 0) r.strides[d - 1] = stride;
    ok = n <= (cuuint64_t{1} << 32) &&
         (d == 0 || (stride % 16 == 0 && stride < (cuuint64_t{1} << 40)));
    if (__builtin_mul_overflow(stride, n, &stride)) stride = ~cuuint64_t{0};  // past every limit
  }
  r.encodable = ok;
  return r;
}

Status lay_out(const KernelInfo& info, const EncodedKernel& enc, std::span<const StepRule> rules,
               const std::vector<std::vector<int64_t>>& max_dynamic_smem,
               std::span<const CUdeviceptr> ptrs, std::span<const int64_t> symbols,
               std::span<const int> variants, bool fallback, const DeviceFacts& device, Layout& out,
               const std::vector<std::vector<ClusterFacts>>& clusters) {
  const size_t np = info.params.size();
  out.buffer_bytes = 0;
  for (size_t i = 0; i < info.buffers.size(); ++i) {
    const int64_t bytes = *numel(enc.buffers[i], symbols) *
                          static_cast<int64_t>(size_of(info.buffers[i].dtype));  // checked
    out.buffer_offset[i] = out.buffer_bytes;
    out.buffer_bytes =
        ceil_div(out.buffer_bytes + bytes, bundle::kBufferAlign) * bundle::kBufferAlign;
  }
  int64_t workspace = 0;  // the largest split step's
  for (size_t s = 0; s < info.steps.size(); ++s) {
    const bundle::Step& step = info.steps[s];
    const int64_t n = *numel(enc.spaces[s], symbols);   // checked
    const int64_t r = *numel(enc.reduced[s], symbols);  // checked; 1 when not a reduction
    int v = variants[s];
    const Variant* var = &step.variants[static_cast<size_t>(v)];
    if (var->align_bytes > 1) {
      for (int p : var->aligned_params) {
        if (static_cast<size_t>(p) >= np) {  // a buffer, at a multiple of bundle::kBufferAlign
          if (bundle::kBufferAlign % var->align_bytes == 0) continue;
          return Status::error(fmt::format(
              "{}: variant {} of step {} ({}) needs {}-byte aligned buffers; the runtime aligns "
              "them to {}",
              info.name, v, s, step.name, var->align_bytes, bundle::kBufferAlign));
        }
        if (ptrs[p] % static_cast<CUdeviceptr>(var->align_bytes) == 0) continue;
        if (!fallback || rules[s].scalar_fallback < 0) {
          return Status::error(fmt::format(
              "{}: argument {} ({}): variant {} of step {} ({}) needs {}-byte aligned pointers{}",
              info.name, p + 1, info.params[p].name, v, s, step.name, var->align_bytes,
              fallback ? " and the step has no scalar variant" : ""));
        }
        v = rules[s].scalar_fallback;
        var = &step.variants[static_cast<size_t>(v)];
        break;
      }
    }
    // A contraction whose operands' tensor maps cannot be encoded runs the variant of the same
    // tiles that copies without them (manifest.h); one whose output's map cannot be stores
    // without it. Buffers are kBufferAlign-aligned: any such address stands for theirs.
    if (fallback && !var->tile.tensor_maps.empty() &&
        static_cast<size_t>(v) < rules[s].map_fallback.size() &&
        rules[s].map_fallback[static_cast<size_t>(v)] >= 0) {
      bool encodable = true;
      for (const bundle::TensorMapInfo& t : var->tile.tensor_maps) {
        if (t.store) continue;
        const auto p = static_cast<size_t>(t.param);
        const CUdeviceptr address = p < np ? ptrs[p] : CUdeviceptr{bundle::kBufferAlign};
        encodable = encodable && tensor_map_request(info, enc, t, address, symbols).encodable;
      }
      if (!encodable) {
        v = rules[s].map_fallback[static_cast<size_t>(v)];
        var = &step.variants[static_cast<size_t>(v)];
      }
    }
    StepLaunch& l = out.steps[s];
    l = StepLaunch{};
    int64_t blocks = ceil_div(n, var->elements_per_block);
    if (step.kind == bundle::StepKind::contraction) {
      // A persistent kernel over tiles of the last two dimensions (manifest.h).
      const std::vector<int64_t>& sp = enc.spaces[s];
      const int64_t m = extent(sp[sp.size() - 2], symbols), cols = extent(sp.back(), symbols);
      const int64_t batch = n / (m * cols);  // n = batch * m * cols, checked
      // With clusters, a cluster walks tiles of cluster x tile.m rows (manifest.h).
      ClusterFacts cf;
      if (s < clusters.size() && static_cast<size_t>(v) < clusters[s].size()) {
        cf = clusters[s][static_cast<size_t>(v)];
      }
      const int64_t tiles_per_matrix =
          ceil_div(m, var->tile.m * cf.blocks) * ceil_div(cols, var->tile.n);
      if (var->split.phases > 0) {
        // Split-K: every tile, S blocks each (below; manifest.h).
        if (batch > bundle::kMaxGridX / tiles_per_matrix) {
          return Status::error(fmt::format(
              "{}: step {} ({}): split variant {} cannot cover {} x {} tiles (more than the "
              "grid limit {})",
              info.name, s, step.name, v, batch, tiles_per_matrix, bundle::kMaxGridX));
        }
        blocks = batch * tiles_per_matrix;
      } else {
        const int64_t persistent =
            cf.blocks > 1 ? cf.resident : int64_t{device.sm_count} * var->tile.ctas_per_sm;
        // Compared without forming batch * tiles_per_matrix, which may exceed int64.
        blocks = batch >= ceil_div(persistent, tiles_per_matrix)
                     ? persistent
                     : std::min(persistent, batch * tiles_per_matrix);
      }
      blocks *= cf.blocks;
      l.cluster = static_cast<unsigned>(cf.blocks);
      l.smem_bytes = static_cast<unsigned>(var->tile.smem_bytes);
    }
    if (var->split.phases > 0 && blocks > bundle::kMaxGridX) {
      // Its entry takes a workspace and a phase: it cannot run as a plain grid-stride launch.
      return Status::error(fmt::format(
          "{}: step {} ({}): split variant {} cannot cover {} tiles of {} rows (more than the "
          "grid limit {})",
          info.name, s, step.name, v, blocks, var->elements_per_block, bundle::kMaxGridX));
    }
    if (var->split.phases > 0) {
      // `blocks` tiles, each over S blocks; a workspace record of split.slots words per row
      // of a block.
      const int64_t per_tile =
          step.kind == bundle::StepKind::contraction
              ? bundle::contraction_split_blocks(blocks, r, var->split.chunk, device.sm_count,
                                                 var->tile.ctas_per_sm)
              : split_blocks(blocks, r, var->split.chunk, device.sm_count,
                             bundle::resident_blocks(*var, device));
      blocks *= per_tile;
      if (var->split.lead_last) l.lead_split = per_tile;
      const std::optional<int64_t> bytes =
          bundle::split_workspace_bytes(blocks, var->elements_per_block, var->split.slots);
      if (!bytes) {
        return Status::error(fmt::format(
            "{}: step {} ({}): the split workspace of {} blocks of {} rows overflows int64 bytes",
            info.name, s, step.name, blocks, var->elements_per_block));
      }
      l.workspace_bytes = *bytes;
      l.phases = var->split.phases;
    }
    if (step.kind == bundle::StepKind::row_reduction && blocks > bundle::kMaxGridX) {
      return Status::error(fmt::format(
          "{}: step {} ({}): {} rows need {} blocks of {} rows, more than the grid limit {}",
          info.name, s, step.name, n, blocks, var->elements_per_block, bundle::kMaxGridX));
    }
    if (var->stage.bytes_per_element > 0) {
      // What the staged rows need when the device has it, else 0: the kernel then loops
      // over global memory (manifest.h), so the launch is correct either way.
      l.smem_bytes = static_cast<unsigned>(
          bundle::stage_bytes(var->stage, r, max_dynamic_smem[s][static_cast<size_t>(v)]));
    }
    l.variant = v;
    // A variant's own entry serves launches of at most 2^31 - 1 elements (a reduction's rows x
    // reduced and workspace words) whose rows are a multiple of its row multiple; its general
    // entry every other (manifest.h).
    const int64_t inner = enc.spaces[s].empty() ? 1 : extent(enc.spaces[s].back(), symbols);
    l.general =
        bundle::runs_general(var->general, bundle::launch_elements(n, r, l.workspace_bytes), inner);
    l.grid = static_cast<unsigned>(std::min(blocks, bundle::kMaxGridX));
    l.block = static_cast<unsigned>(var->block_threads);
    workspace = std::max(workspace, l.workspace_bytes);
  }
  out.workspace_offset = out.buffer_bytes;
  if (__builtin_add_overflow(out.buffer_bytes, workspace, &out.scratch_bytes)) {
    return Status::error(
        fmt::format("{}: the buffers ({} bytes) and a split workspace ({} bytes) "
                    "overflow int64 bytes",
                    info.name, out.buffer_bytes, workspace));
  }
  return Status::ok_status();
}

}  // namespace launch
}  // namespace kiln
