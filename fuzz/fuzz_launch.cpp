// libFuzzer target: the launch path without a GPU (runtime/launch.h) against real manifests.
// The manifests are read once, from the directory KILN_FUZZ_MANIFESTS names (fuzz/run.sh
// fills it with compiled bundles' manifest.json files: pointwise, row, outer, split, staged
// and buffered steps); the input's bytes pick a kernel and drive everything else: the
// pointers, the symbols (small, large, 0, negative, near 2^63), which variants loaded, the
// device's SM count and memory pools, the heuristic or an explicit choice per step, the
// fallback flag, and the strides of strided inputs (none, too few, negative, 0, huge). Then
// check_arguments, the heuristic and lay_out run as Kernel::launch runs them. Nothing may crash,
// overflow or divide by zero, and what passes must be coherent: checked symbols > 0 and pointers
// non-null; chosen variants in range and loadable; grids in 1..kMaxGridX, blocks as the variant
// says, workspaces >= 0, buffers at 256-byte multiples that do not overlap.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <vector>

#include "bundle/manifest.h"
#include "runtime/launch.h"

namespace {

using namespace kiln;

std::vector<bundle::Manifest>* g_manifests = nullptr;

// Reads the input front to back; past its end every value is 0.
struct Bytes {
  const uint8_t* p;
  size_t n;
  template <class T>
  T take() {
    T v{};
    const size_t k = n < sizeof(T) ? n : sizeof(T);
    std::memcpy(&v, p, k);
    p += k;
    n -= k;
    return v;
  }
};

int64_t symbol_value(Bytes& in) {
  switch (in.take<uint8_t>() % 8) {
    case 0:
      return 0;
    case 1:
      return -static_cast<int64_t>(in.take<uint8_t>());
    case 2:
      return int64_t{1} << (in.take<uint8_t>() % 63);
    case 3:
      return std::numeric_limits<int64_t>::max() - in.take<uint8_t>();
    case 4:
      return in.take<int64_t>();
    case 5:
      return 1 + in.take<uint32_t>();
    default:
      return 1 + in.take<uint16_t>() % 5000;
  }
}

CUdeviceptr pointer(Bytes& in, size_t i) {
  switch (in.take<uint8_t>() % 4) {
    case 0:
      return 0;
    case 1:
      return in.take<uint64_t>();
    // Apart, aligned or a little off, sometimes overlapping the next one.
    default:
      return (CUdeviceptr{1} << 40) * (i + 1) + in.take<uint16_t>() * 2;
  }
}

#define EXPECT(cond)                                                                \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "fuzz_launch: %s failed at line %d\n", #cond, __LINE__); \
      __builtin_trap();                                                             \
    }                                                                               \
  } while (0)

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_manifests = new std::vector<bundle::Manifest>();
  const char* dir = std::getenv("KILN_FUZZ_MANIFESTS");
  if (dir == nullptr) {
    std::fprintf(stderr, "fuzz_launch: set KILN_FUZZ_MANIFESTS to a directory of manifests\n");
    std::exit(2);
  }
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_directory()) continue;
    auto m = bundle::read_manifest(e.path().string());
    if (m.ok()) g_manifests->push_back(std::move(m).value());
  }
  if (g_manifests->empty()) {
    std::fprintf(stderr, "fuzz_launch: no bundle with a readable manifest in %s\n", dir);
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  const bundle::Manifest& m = (*g_manifests)[in.take<uint8_t>() % g_manifests->size()];
  const bundle::KernelInfo& info = m.kernels[in.take<uint8_t>() % m.kernels.size()];
  const launch::EncodedKernel enc = launch::encode(info);
  const uint8_t flags = in.take<uint8_t>();
  const launch::DeviceFacts dev{1 + in.take<uint16_t>() % 2048, (flags & 1) != 0};
  const bool fallback = (flags & 2) != 0, explicit_choice = (flags & 4) != 0;

  std::vector<CUdeviceptr> ptrs;
  for (size_t i = 0; i < info.params.size(); ++i) ptrs.push_back(pointer(in, i));
  std::vector<int64_t> symbols;
  for (size_t j = 0; j < info.symbols.size(); ++j) symbols.push_back(symbol_value(in));
  // Strides: none (contiguous), the right count, or one fewer; each from symbol_value's mix.
  std::vector<int64_t> strides;
  const size_t nstrides = launch::stride_count(info);
  if (nstrides > 0 && (flags & 8) != 0) {
    const size_t n = (flags & 16) != 0 ? nstrides - 1 : nstrides;
    for (size_t j = 0; j < n; ++j) strides.push_back(symbol_value(in) - ((flags & 32) ? 1 : 0));
  }

  std::vector<launch::StepRule> rules;
  std::vector<std::vector<int64_t>> smem;
  std::vector<std::vector<bool>> loadable;
  for (const bundle::Step& step : info.steps) {
    std::vector<bool>& l = loadable.emplace_back(step.variants.size());
    for (size_t v = 0; v < l.size(); ++v) l[v] = in.take<uint8_t>() % 8 != 0;
    rules.push_back(launch::step_rule(step, l, dev));
    smem.emplace_back(step.variants.size(), int64_t{in.take<uint8_t>()} * 1024);
  }

  const Status checked = launch::check_arguments(info, enc, ptrs, symbols, strides);
  // The heuristic must survive unchecked values too (Kernel::choose is public).
  for (size_t s = 0; s < info.steps.size(); ++s) {
    const int v = launch::heuristic_for(info, enc, s, rules[s], symbols, dev);
    EXPECT(v == rules[s].chosen || (v >= 0 && static_cast<size_t>(v) < loadable[s].size()));
  }
  if (!checked.ok()) {
    EXPECT(!checked.message().empty() && checked.message().find('\n') == std::string::npos);
    return 0;
  }
  for (int64_t v : symbols) EXPECT(v > 0);
  for (CUdeviceptr p : ptrs) EXPECT(p != 0);
  for (int64_t v : strides) EXPECT(v >= 0);
  EXPECT(strides.empty() || strides.size() == nstrides);
  std::vector<int64_t> effective(nstrides);
  const bool contiguous = launch::effective_strides(info, enc, symbols, strides, effective);
  EXPECT(!strides.empty() || contiguous);

  std::vector<int> variants;
  for (size_t s = 0; s < info.steps.size(); ++s) {
    if (rules[s].chosen < 0) return 0;  // the bundle would not load: no launch
    int v = launch::heuristic_for(info, enc, s, rules[s], symbols, dev);
    if (explicit_choice) {
      const int pick = in.take<uint8_t>() % static_cast<int>(loadable[s].size());
      if (loadable[s][static_cast<size_t>(pick)]) v = pick;
    }
    EXPECT(v >= 0 && loadable[s][static_cast<size_t>(v)]);
    variants.push_back(v);
  }
  if (!contiguous) {
    const Status chosen = launch::choose_strided(info, rules, variants, explicit_choice);
    if (!chosen.ok()) {
      EXPECT(!chosen.message().empty() && chosen.message().find('\n') == std::string::npos);
      return 0;
    }
    for (size_t s = 0; s < info.steps.size(); ++s) {
      EXPECT(!rules[s].reads_strided || variants[s] == rules[s].strided);
    }
  }
  launch::Layout layout;
  const Status laid =
      launch::lay_out(info, enc, rules, smem, ptrs, symbols, variants, fallback, dev, layout);
  if (!laid.ok()) {
    EXPECT(!laid.message().empty() && laid.message().find('\n') == std::string::npos);
    return 0;
  }
  for (size_t s = 0; s < info.steps.size(); ++s) {
    const launch::StepLaunch& l = layout.steps[s];
    EXPECT(l.variant >= 0 && loadable[s][static_cast<size_t>(l.variant)]);
    const bundle::Variant& var = info.steps[s].variants[static_cast<size_t>(l.variant)];
    EXPECT(l.grid >= 1 && l.grid <= bundle::kMaxGridX);
    EXPECT(static_cast<int>(l.block) == var.block_threads);
    EXPECT(l.workspace_bytes >= 0 && l.phases == var.split.phases);
    EXPECT(l.smem_bytes <= smem[s][static_cast<size_t>(l.variant)]);
    // The workspace lies after the buffers, inside the scratch.
    EXPECT(layout.scratch_bytes - layout.workspace_offset >= l.workspace_bytes);
  }
  EXPECT(layout.workspace_offset == layout.buffer_bytes &&
         layout.workspace_offset % bundle::kBufferAlign == 0);
  int64_t end = 0;
  for (size_t i = 0; i < info.buffers.size(); ++i) {
    EXPECT(layout.buffer_offset[i] % bundle::kBufferAlign == 0 && layout.buffer_offset[i] >= end);
    end = layout.buffer_offset[i] + *launch::numel(enc.buffers[i], symbols) *
                                        static_cast<int64_t>(size_of(info.buffers[i].dtype));
    EXPECT(end <= layout.buffer_bytes);
  }
  return 0;
}
