// See harness.h.
#include "autotune/harness.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "compiler/plan.h"
#include "runtime/driver.h"

namespace kiln {
namespace {

void check_cu(const Runtime& rt, CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw HarnessError{fmt::format("{}: {}", what, rt.describe(r))};
}

// Inputs read in a gather's computed positions (index tensors), each with the smallest extent
// of a dimension it indexes: their values are drawn mostly in [0, extent), so that a check
// of an embedding lookup or a cross-entropy compares real rows, not the clamped edges.
std::map<std::string, int64_t> index_ranges(const KernelDef& def, const SymbolValues& shape) {
  std::map<std::string, int64_t> out;
  std::function<void(const Expr&, int64_t)> reads = [&](const Expr& e, int64_t extent) {
    std::string t;
    if (const Load* l = e.as<Load>()) t = l->tensor;
    if (const Gather* g = e.as<Gather>()) t = g->tensor;
    if (const TensorDecl* d = t.empty() ? nullptr : def.find_tensor(t);
        d && d->role == TensorRole::input && is_integer(d->dtype)) {
      auto [it, fresh] = out.emplace(t, extent);
      if (!fresh) it->second = std::min(it->second, extent);
    }
    for_each_child(e, [&](const Expr& c) { reads(c, extent); });
  };
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (const Gather* g = e.as<Gather>()) {
      std::vector<int64_t> extents = resolve_shape(g->shape, shape);
      for (size_t d = 0; d < g->indices.size(); ++d) reads(wrap(g->indices[d]), extents[d]);
    }
    for_each_child(e, walk);
  };
  for (const Stmt& s : def.body) walk(s.value);
  return out;
}

// Values of an index tensor: uniform in [0, range), and one element in 64 out of range (-1,
// range, or far above), which the gather clamps (docs/language.md).
void fill_index(HostTensor& t, int64_t range, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> d(0, std::max<int64_t>(range, 1) - 1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint64_t r = rng() % 64;
    int64_t v = r == 0 ? -1 : r == 1 ? range : r == 2 ? range + 1000 : d(rng);
    if (t.dtype == DType::u32 && v < 0) v = UINT32_MAX;
    if (t.dtype == DType::i32) v = std::min<int64_t>(v, INT32_MAX);
    t.set(i, static_cast<double>(v));
  }
}

void fill_random(HostTensor& t, std::mt19937_64& rng) {
  if (t.dtype == DType::u32) {
    std::uniform_int_distribution<uint32_t> d(1, 2000);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, d(rng));
  } else if (t.dtype == DType::i32 || t.dtype == DType::i64) {
    // [-1000, -1] and [1, 1000], uniformly: a kernel may divide by an input.
    std::uniform_int_distribution<int32_t> d(-1000, 999);
    for (int64_t i = 0; i < t.numel(); ++i) {
      int32_t v = d(rng);
      t.set(i, v >= 0 ? v + 1 : v);
    }
  } else {
    std::uniform_real_distribution<float> d(-2.0f, 2.0f);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, d(rng));
  }
}

}  // namespace

void fill_scalar(HostTensor& t, std::mt19937_64& rng, std::string_view name,
                 std::string_view text) {
  internal_check(t.numel() == 1, "fill_scalar: a scalar holds one element");
  const uint64_t r = rng();  // drawn whether or not used: the other inputs do not move
  if (text.empty()) {
    if (t.dtype == DType::i64) {
      const int64_t v = static_cast<int64_t>(r | 1);
      std::memcpy(t.data(), &v, sizeof v);
    } else if (t.dtype == DType::i32) {
      t.set(0, static_cast<double>(1 + r % 1000));
    } else if (t.dtype == DType::u32) {
      t.set(0, static_cast<double>(1 + r % 2000));
    } else {
      t.set(0, 0.125 + 0.75 * static_cast<double>(r >> 11) * 0x1p-53);
    }
    return;
  }
  const std::string s(text);
  auto bad = [&]() {
    return HarnessError{
        fmt::format("scalar '{}': '{}' is not a value of type {}", name, text, to_string(t.dtype))};
  };
  if (is_float(t.dtype)) {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || s.empty()) throw bad();
    t.set(0, v);
    return;
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) throw bad();
  if ((t.dtype == DType::i32 && (v < INT32_MIN || v > INT32_MAX)) ||
      (t.dtype == DType::u32 && (v < 0 || v > UINT32_MAX))) {
    throw bad();
  }
  if (t.dtype == DType::i64) {
    std::memcpy(t.data(), &v, sizeof v);
  } else {
    t.set(0, static_cast<double>(v));
  }
}

CUdeviceptr scalar_slot(const HostTensor& t) {
  CUdeviceptr slot = 0;  // little-endian: the value's bytes are the slot's low bytes
  std::memcpy(&slot, t.data(), std::min(t.bytes.size(), sizeof slot));
  return slot;
}

namespace {

// NaN and infinities in a float input, placed from `rng`. A tensor of rank >= 2 is taken as
// rows of its last (contiguous) dimension: half the rows stay finite, the others get one NaN,
// one +inf, one -inf, or a +inf and a -inf (which sum to NaN), each kind in an eighth of the
// rows, at random places. Rank 0 and 1 tensors (a weight shared by every row) get each
// special with probability 1/1536 per element.
void fill_specials(HostTensor& t, std::mt19937_64& rng) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int64_t n = t.numel();
  if (n == 0) return;
  if (t.shape.size() < 2) {
    for (int64_t i = 0; i < n; ++i) {
      uint64_t r = rng() % 1536;
      if (r < 3) t.set(i, r == 0 ? nan : r == 1 ? kInf : -kInf);
    }
    return;
  }
  const int64_t len = t.shape.back();
  if (len == 0) return;
  for (int64_t row = 0; row < n / len; ++row) {
    const uint64_t kind = rng() % 8;
    const int64_t at = row * len + static_cast<int64_t>(rng() % len);
    const int64_t other = row * len + static_cast<int64_t>(rng() % len);
    if (kind == 4) t.set(at, nan);
    if (kind == 5 || kind == 7) t.set(at, kInf);
    if (kind == 6) t.set(at, -kInf);
    if (kind == 7 && other != at) t.set(other, -kInf);
  }
}

// About one row in four of a rank >= 2 tensor entirely -inf (a masked-out row).
void fill_neginf_rows(HostTensor& t, std::mt19937_64& rng) {
  if (t.shape.size() < 2 || t.shape.back() == 0) return;
  const int64_t len = t.shape.back();
  for (int64_t row = 0; row < t.numel() / len; ++row) {
    if (rng() % 4 != 0) continue;
    for (int64_t j = 0; j < len; ++j)
      t.set(row * len + j, -std::numeric_limits<double>::infinity());
  }
}

bool is_half(DType t) {
  return t == DType::f16 || t == DType::bf16;
}

// Runs fn(begin, end, chunk) over [0, n) in contiguous chunks, in parallel on up to 16 threads
// when n is large (checking a candidate's outputs is host work that grows with the shape, and
// the tuner checks every candidate); chunk k covers the k-th range, in order, so a caller that
// merges per-chunk results in chunk order gets the serial loop's result.
template <class F>
void for_chunks(int64_t n, size_t chunks, F fn) {
  if (chunks <= 1) {
    fn(int64_t{0}, n, size_t{0});
    return;
  }
  std::vector<std::thread> pool;
  const int64_t per = (n + static_cast<int64_t>(chunks) - 1) / static_cast<int64_t>(chunks);
  for (size_t k = 0; k < chunks; ++k) {
    const int64_t b = std::min(n, per * static_cast<int64_t>(k)), e = std::min(n, b + per);
    pool.emplace_back([=] { fn(b, e, k); });
  }
  for (std::thread& t : pool) t.join();
}

size_t chunk_count(int64_t n) {
  constexpr int64_t kPerChunk = int64_t{1} << 18;  // below this a thread costs more than it saves
  const size_t cores = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  return static_cast<size_t>(std::clamp<int64_t>(n / kPerChunk, 1, static_cast<int64_t>(cores)));
}

// Elements whose bytes still hold the poison in both runs were never written.
int64_t count_poisoned(const HostTensor& a, const HostTensor& b, uint8_t pa, uint8_t pb) {
  const size_t w = size_of(a.dtype);
  const size_t chunks = chunk_count(a.numel());
  std::vector<int64_t> counts(chunks, 0);
  for_chunks(a.numel(), chunks, [&](int64_t begin, int64_t end, size_t k) {
    int64_t n = 0;
    for (int64_t i = begin; i < end; ++i) {
      const auto* x = reinterpret_cast<const uint8_t*>(a.data()) + i * w;
      const auto* y = reinterpret_cast<const uint8_t*>(b.data()) + i * w;
      n += std::all_of(x, x + w, [&](uint8_t v) { return v == pa; }) &&
           std::all_of(y, y + w, [&](uint8_t v) { return v == pb; });
    }
    counts[k] = n;
  });
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  return n;
}

// The largest finite |exact| of an output (Tolerance's scale).
double scale_of(const HostTensor& stored, const HostTensor& wide) {
  double scale = 0;
  if (!is_float(stored.dtype)) return 0;
  for (int64_t i = 0; i < stored.numel(); ++i) {
    double w = wide.get(i);
    if (std::isfinite(w) && std::isfinite(stored.get(i))) scale = std::max(scale, std::abs(w));
  }
  return scale;
}

// The two poisons of a checked candidate's two runs (check, check_fast, check_bitwise): no
// element a kernel never writes can hold both.
constexpr uint8_t kPoison[2] = {0xFF, 0x7F};

}  // namespace

DeviceBuffer::DeviceBuffer(const Runtime& rt, size_t bytes) : rt_(rt) {
  check_cu(rt, rt.driver().cuMemAlloc(&ptr_, std::max<size_t>(bytes, 16)), "cuMemAlloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) rt_.driver().cuMemFree(ptr_);
}

std::optional<InputMode> parse_input_mode(std::string_view name) {
  if (name == "random") return InputMode::random;
  if (name == "specials") return InputMode::specials;
  if (name == "neginf_rows") return InputMode::neginf_rows;
  return std::nullopt;
}

Tolerance Tolerance::of(DType t, int64_t reduced_extent, double rtol_override,
                        double approx_error) {
  if (!is_float(t)) return {};
  constexpr double kU32 = 0x1p-24;
  const double levels = reduced_extent > 1 ? std::ceil(std::log2(double(reduced_extent))) : 0;
  Tolerance tol;
  tol.gamma = 16 * kU32 * (1 + levels) + approx_error;
  const double u_out = narrow_roundoff(t);
  tol.rel = rtol_override >= 0 ? rtol_override : u_out + tol.gamma;
  tol.u_out = rtol_override >= 0 ? 0 : u_out;
  return tol;
}

Comparison compare(const HostTensor& out, const HostTensor& stored, const HostTensor& wide,
                   const Tolerance& tol) {
  return compare(out, stored, wide, tol, scale_of(stored, wide));
}

namespace {

// compare() over the elements [begin, end).
Comparison compare_range(const HostTensor& out, const HostTensor& stored, const HostTensor& wide,
                         const Tolerance& tol, double scale, int64_t begin, int64_t end) {
  Comparison c;
  const bool exact = !is_float(stored.dtype);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (int64_t i = begin; i < end; ++i) {
    const double o = out.get(i), s = stored.get(i), w = exact ? s : wide.get(i);
    double ratio = 0;
    if (exact || !std::isfinite(s) || !std::isfinite(o)) {
      // Integers bit for bit (an i64 past 2^53 is not exact as a double); NaN where the
      // reference is NaN, an infinity of the same sign.
      const size_t size = size_of(stored.dtype);
      bool same = exact ? std::memcmp(out.bytes.data() + i * size, stored.bytes.data() + i * size,
                                      size) == 0
                  : std::isnan(s) ? std::isnan(o)
                                  : o == s || (tol.nan_for_inf && std::isinf(s) && std::isnan(o));
      ratio = same ? 0 : kInf;
    } else {
      const double err = std::abs(o - w);
      if (std::abs(w) + scale > 0) {
        c.max_scaled_err = std::max(c.max_scaled_err, err / (std::abs(w) + scale));
      }
      // w == s: already rounded to the output type by the spec (Tolerance).
      const double rel = w == s ? tol.rel + tol.u_out : tol.rel;
      const double allowed = rel * std::abs(w) + tol.gamma * scale;
      // The interpreter's own rounded value is always right.
      if (o != s) ratio = allowed > 0 ? err / allowed : (err > 0 ? kInf : 0);
    }
    if (ratio > 1) ++c.bad;
    if (c.worst < 0 || ratio > c.worst_ratio) {
      c.worst = i;
      c.worst_ratio = ratio;
      c.worst_got = o;
      c.worst_want = w;
    }
  }
  return c;
}

}  // namespace

Comparison compare(const HostTensor& out, const HostTensor& stored, const HostTensor& wide,
                   const Tolerance& tol, double scale) {
  const int64_t n = stored.numel();
  const size_t chunks = chunk_count(n);
  std::vector<Comparison> parts(chunks);
  for_chunks(n, chunks, [&](int64_t begin, int64_t end, size_t k) {
    parts[k] = compare_range(out, stored, wide, tol, scale, begin, end);
  });
  // In chunk order, as the serial loop: the worst is the first element of the largest ratio.
  Comparison c;
  for (const Comparison& p : parts) {
    c.bad += p.bad;
    c.max_scaled_err = std::max(c.max_scaled_err, p.max_scaled_err);
    if (p.worst >= 0 && (c.worst < 0 || p.worst_ratio > c.worst_ratio)) {
      c.worst = p.worst;
      c.worst_ratio = p.worst_ratio;
      c.worst_got = p.worst_got;
      c.worst_want = p.worst_want;
    }
  }
  return c;
}

std::string describe_worst(const Comparison& c, const std::vector<int64_t>& shape) {
  std::vector<int64_t> at(shape.size());
  int64_t rest = c.worst;
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t extent = std::max<int64_t>(shape[d], 1);
    at[d] = rest % extent;
    rest /= extent;
  }
  return fmt::format("element {} [{}]: got {:.9g}, expected {:.9g}", c.worst, fmt::join(at, ", "),
                     c.worst_got, c.worst_want);
}

namespace {

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& extents) {
  std::vector<int64_t> s(extents.size(), 1);
  for (size_t d = extents.size(); d-- > 1;) s[d - 1] = s[d] * extents[d];
  return s;
}

}  // namespace

std::vector<int64_t> default_view_strides(const std::vector<int64_t>& extents, int nth) {
  if (nth % 2 == 1) {
    std::vector<int64_t> s = row_major_strides(extents);
    s[0] = 0;
    return s;
  }
  if (extents.size() == 1) return {2};
  std::vector<int64_t> s(extents.size(), 1);
  for (size_t d = 1; d < extents.size(); ++d) {
    s[d] = d == 1 ? extents[0] + 1 : s[d - 1] * extents[d - 1];
  }
  return s;
}

int64_t view_footprint(const std::vector<int64_t>& extents, const std::vector<int64_t>& strides) {
  int64_t last = 0;
  for (size_t d = 0; d < extents.size(); ++d) last += (extents[d] - 1) * strides[d];
  return last + 1;
}

KernelHarness::KernelHarness(Runtime& rt, const KernelDef& def, const bundle::KernelInfo& info,
                             const SymbolValues& shape, uint64_t seed, InputMode mode,
                             const ScalarValues& scalars, const StrideValues& strides,
                             bool contiguous_views)
    : rt_(rt), def_(def), shape_(shape), float_products_(folds_float_products(def)) {
  const DriverApi& api = rt.driver();
  std::mt19937_64 rng(seed);
  const std::map<std::string, int64_t> ranges = index_ranges(def, shape);
  int nth_strided = 0;
  for (const TensorDecl* t : def.params()) {
    host_.emplace_back(t->dtype, resolve_shape(t->shape, shape));
    HostTensor& h = host_.back();
    if (t->scalar) {  // passed by value: no device memory
      auto given = scalars.find(t->name);
      fill_scalar(h, rng, t->name, given == scalars.end() ? "" : given->second);
      dev_.push_back(nullptr);
      ptrs_.push_back(scalar_slot(h));
      continue;
    }
    bytes_moved_ += static_cast<double>(h.bytes.size());
    // A strided input: its view's strides and the buffer its footprint needs.
    std::vector<int64_t> view;
    if (t->strided) {
      auto given = strides.find(t->name);
      view = given != strides.end() && !given->second.empty() ? given->second
             : contiguous_views || given != strides.end()
                 ? row_major_strides(h.shape)
                 : default_view_strides(h.shape, nth_strided);
      if (view.size() != h.shape.size()) {
        throw HarnessError{fmt::format("--strides: {} has rank {}, got {} strides", t->name,
                                       h.shape.size(), view.size())};
      }
      if (std::any_of(view.begin(), view.end(), [](int64_t v) { return v < 0; })) {
        throw HarnessError{
            fmt::format("--strides: {}: negative strides are not supported", t->name)};
      }
      ++nth_strided;
      contiguous_views_ = contiguous_views_ && bundle::contiguous_strides(h.shape, view);
      strides_.insert(strides_.end(), view.begin(), view.end());
    }
    const size_t elem = size_of(h.dtype);
    const size_t device_bytes =
        t->strided ? static_cast<size_t>(view_footprint(h.shape, view)) * elem : h.bytes.size();
    dev_.push_back(std::make_unique<DeviceBuffer>(rt, device_bytes));
    ptrs_.push_back(dev_.back()->get());
    if (t->role == TensorRole::input) {
      if (auto r = ranges.find(t->name); r != ranges.end()) {
        fill_index(h, r->second, rng);
      } else {
        fill_random(h, rng);
      }
      if (mode == InputMode::specials && is_float(h.dtype)) fill_specials(h, rng);
      if (mode == InputMode::neginf_rows && is_float(h.dtype)) fill_neginf_rows(h, rng);
      if (!t->strided) {
        check_cu(rt, api.cuMemcpyHtoD(ptrs_.back(), h.data(), h.bytes.size()), "cuMemcpyHtoD");
        continue;
      }
      // The logical elements scattered to their places in the view; the rest NaN bytes.
      // Elements a 0 stride maps to one place get the last one's value: the interpreter's
      // copy is then made to agree (a broadcast view holds one value).
      std::vector<std::byte> staged(device_bytes, std::byte{0xFF});
      std::vector<int64_t> index(h.shape.size(), 0);
      for (int64_t e = 0; e < h.numel(); ++e) {
        int64_t off = 0;
        for (size_t d = 0; d < index.size(); ++d) off += index[d] * view[d];
        std::memcpy(&staged[static_cast<size_t>(off) * elem], &h.bytes[e * elem], elem);
        for (size_t d = index.size(); d-- > 0;) {
          if (++index[d] < h.shape[d]) break;
          index[d] = 0;
        }
      }
      std::fill(index.begin(), index.end(), 0);
      for (int64_t e = 0; e < h.numel(); ++e) {  // read back: what the kernel will see
        int64_t off = 0;
        for (size_t d = 0; d < index.size(); ++d) off += index[d] * view[d];
        std::memcpy(&h.bytes[e * elem], &staged[static_cast<size_t>(off) * elem], elem);
        for (size_t d = index.size(); d-- > 0;) {
          if (++index[d] < h.shape[d]) break;
          index[d] = 0;
        }
      }
      check_cu(rt, api.cuMemcpyHtoD(ptrs_.back(), staged.data(), staged.size()), "cuMemcpyHtoD");
    }
  }
  for (const std::string& s : info.symbols) syms_.push_back(shape.at(s));
  for (const bundle::Step& step : info.steps) {
    // A reduction over several indices folds the product of their extents.
    int64_t r = 1;
    for (int64_t e : resolve_shape(step.reduced, shape)) r *= e;
    if (!step.reduced.empty()) reduced_extent_ = std::max(reduced_extent_, r);
    approx_error_ = std::max(approx_error_, step.approx_error);
  }
  // A copy from pageable memory may return before its DMA lands (the driver stages it), and
  // kernels on stream_ (non-blocking) do not wait for the default stream it is queued on:
  // without this a kernel could read inputs half uploaded. Seen on an H200 under load as
  // rare "relative error 1" mismatches of small shapes (rowmean_bf16, logsumexp M=1000,N=33).
  check_cu(rt, api.cuCtxSynchronize(), "uploading the inputs");
  // Created last: a constructor that throws (bad strides, a failed upload) runs no destructor,
  // and a stream made before the throw would leak.
  check_cu(rt, api.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

KernelHarness::~KernelHarness() {
  dev_.clear();
  flush_.reset();
  if (stream_) rt_.driver().cuStreamDestroy(stream_);
}

bool folds_float_products(const KernelDef& def) {
  return any_node(statement_values(def), [](const Expr& e) {
    const Reduce* r = e.as<Reduce>();
    const Scan* s = e.as<Scan>();
    return ((r && r->op == ReduceOp::prod) || (s && s->op == ReduceOp::prod)) && is_float(e.type());
  });
}

Reference reference_outputs(const KernelDef& def, const SymbolValues& shape,
                            const std::vector<HostTensor>& params_in) {
  std::vector<const TensorDecl*> params = def.params();
  auto run = [&](const KernelDef& k, std::vector<HostTensor>& tensors) {
    std::map<std::string, HostTensor*, std::less<>> named;
    for (size_t i = 0; i < params.size(); ++i) named[params[i]->name] = &tensors[i];
    interpret(k, shape, named);
  };
  Reference ref;
  ref.stored = params_in;
  run(def, ref.stored);
  ref.wide = ref.stored;
  // The same kernel with its f16 and bf16 outputs declared f32: their values before the last
  // rounding (the interpreter computes in f64 and rounds only when it stores).
  // An output that the kernel also reads (add_rmsnorm's h = x + r, read by y) keeps its
  // type: later statements read its stored value, so widening it would change theirs; its
  // exact value is then its stored one.
  KernelDef wide = def;
  std::set<std::string> widened;
  for (TensorDecl& o : wide.outputs) {
    if (!is_half(o.dtype)) continue;
    if (loads_tensor(def, o.name)) continue;
    o.dtype = DType::f32;
    widened.insert(o.name);
  }
  if (!widened.empty()) {
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->role == TensorRole::output && widened.count(params[i]->name)) {
        ref.wide[i] = HostTensor(DType::f32, params_in[i].shape);
      }
    }
    run(wide, ref.wide);
  }
  ref.scale.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->role == TensorRole::output) ref.scale[i] = scale_of(ref.stored[i], ref.wide[i]);
  }
  return ref;
}

Reference KernelHarness::reference() const {
  return reference_outputs(def_, shape_, host_);
}

void KernelHarness::launch_poisoned(const std::function<void()>& launch, uint8_t poison) {
  const DriverApi& api = rt_.driver();
  std::vector<const TensorDecl*> params = def_.params();
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->role != TensorRole::output) continue;
    check_cu(rt_, api.cuMemsetD8Async(ptrs_[i], poison, host_[i].bytes.size(), stream_),
             "cuMemsetD8Async");
  }
  // The kernel's buffers and split workspaces get the same bytes (filled when the launch is
  // enqueued); off again on every path out.
  struct ScratchPoison {
    Runtime& rt;
    ~ScratchPoison() { rt.set_scratch_poison(-1); }
  } scratch{rt_};
  rt_.set_scratch_poison(poison);
  launch();
}

std::vector<HostTensor> KernelHarness::run_poisoned(const std::function<void()>& launch,
                                                    uint8_t poison) {
  const DriverApi& api = rt_.driver();
  std::vector<const TensorDecl*> params = def_.params();
  launch_poisoned(launch, poison);
  check_cu(rt_, api.cuStreamSynchronize(stream_), "kernel execution");
  std::vector<HostTensor> outs(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->role != TensorRole::output) continue;
    outs[i] = host_[i];
    check_cu(rt_, api.cuMemcpyDtoH(outs[i].data(), ptrs_[i], outs[i].bytes.size()), "cuMemcpyDtoH");
  }
  return outs;
}

std::vector<std::string> KernelHarness::check(const std::function<void()>& launch,
                                              const Reference& ref, double rtol, double* max_err) {
  std::vector<HostTensor> runs[2] = {run_poisoned(launch, kPoison[0]),
                                     run_poisoned(launch, kPoison[1])};
  std::vector<const TensorDecl*> params = def_.params();
  std::vector<std::string> problems;
  double worst = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->role != TensorRole::output) continue;
    const std::string& name = params[i]->name;
    // Two runs with the same bytes (the usual case: kernels are deterministic run to run)
    // have the same verdict, and no element can hold both poisons: one comparison is the
    // whole check. Runs that differ are each compared in full.
    const bool same = runs[0][i].bytes == runs[1][i].bytes;
    if (int64_t n = same ? 0 : count_poisoned(runs[0][i], runs[1][i], kPoison[0], kPoison[1])) {
      problems.push_back(fmt::format("{}: {} elements never written", name, n));
    }
    Tolerance tol = Tolerance::of(params[i]->dtype, reduced_extent_, rtol, approx_error_);
    tol.nan_for_inf = float_products_;
    for (int r = 0; r < (same ? 1 : 2); ++r) {
      Comparison c = compare(runs[r][i], ref.stored[i], ref.wide[i], tol, ref.scale[i]);
      worst = std::max(worst, c.max_scaled_err);
      if (c.bad == 0) continue;
      problems.push_back(fmt::format(
          "{}: {} of {} elements out of tolerance (outputs and scratch poisoned with {:#04x}); "
          "worst {} (allowed |error| <= {:.3g} * |expected| + {:.3g} * {:.6g}, the output's "
          "largest |expected|)",
          name, c.bad, ref.stored[i].numel(), kPoison[r], describe_worst(c, ref.stored[i].shape),
          tol.rel, tol.gamma, ref.scale[i]));
      break;  // the other run's verdict adds nothing
    }
  }
  if (max_err) *max_err = worst;
  return problems;
}

std::vector<std::string> KernelHarness::check_fast(const GpuComparator& cmp,
                                                   const std::function<void()>& launch,
                                                   const Reference& ref) {
  const DriverApi& api = rt_.driver();
  std::vector<const TensorDecl*> params = def_.params();
  auto kind_of = [](DType t) -> std::optional<GpuCheckKind> {
    switch (t) {
      case DType::f32:
        return GpuCheckKind::f32;
      case DType::f16:
        return GpuCheckKind::f16;
      case DType::bf16:
        return GpuCheckKind::bf16;
      case DType::i32:
      case DType::u32:
        return GpuCheckKind::int4;
      case DType::i64:
        return GpuCheckKind::int8;
      default:
        return std::nullopt;
    }
  };
  bool usable = cmp.ok();
  for (size_t i = 0; i < params.size() && usable; ++i) {
    usable = params[i]->role != TensorRole::output || kind_of(params[i]->dtype).has_value();
  }
  if (!usable) return check(launch, ref, -1, nullptr);
  if (dref_of_ != &ref) {  // the reference, uploaded once
    dref_.clear();
    dref_.resize(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->role != TensorRole::output) continue;
      const HostTensor& stored = ref.stored[i];
      DeviceReference& d = dref_[i];
      d.stored = std::make_unique<DeviceBuffer>(rt_, stored.bytes.size());
      d.run1 = std::make_unique<DeviceBuffer>(rt_, stored.bytes.size());
      check_cu(rt_, api.cuMemcpyHtoD(d.stored->get(), stored.data(), stored.bytes.size()),
               "cuMemcpyHtoD");
      if (is_float(stored.dtype)) {
        std::vector<float> wide(static_cast<size_t>(stored.numel()));
        for (size_t e = 0; e < wide.size(); ++e) {
          wide[e] = static_cast<float>(ref.wide[i].get(static_cast<int64_t>(e)));  // exact
        }
        d.wide = std::make_unique<DeviceBuffer>(rt_, wide.size() * sizeof(float));
        check_cu(rt_, api.cuMemcpyHtoD(d.wide->get(), wide.data(), wide.size() * sizeof(float)),
                 "cuMemcpyHtoD");
      }
    }
    counters_ = std::make_unique<DeviceBuffer>(rt_, 3 * sizeof(uint64_t) * params.size());
    dref_of_ = &ref;
  }
  // The two runs, as check() makes them; the first's outputs are kept on the device.
  launch_poisoned(launch, kPoison[0]);
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->role != TensorRole::output) continue;
    check_cu(rt_,
             api.cuMemcpyDtoDAsync(dref_[i].run1->get(), ptrs_[i], host_[i].bytes.size(), stream_),
             "cuMemcpyDtoDAsync");
  }
  launch_poisoned(launch, kPoison[1]);
  check_cu(rt_,
           api.cuMemsetD8Async(counters_->get(), 0, 3 * sizeof(uint64_t) * params.size(), stream_),
           "cuMemsetD8Async");
  bool enqueued = true;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->role != TensorRole::output) continue;
    const HostTensor& stored = ref.stored[i];
    const Tolerance tol = Tolerance::of(params[i]->dtype, reduced_extent_, -1, approx_error_);
    // As compare_range computes them, but for nan_for_inf: the GPU counts NaN for an infinity
    // as wrong, and check() (which passes it in a kernel that folds a product of floats, at
    // the cost of two more runs) decides.
    const GpuRule rule{tol.rel + tol.u_out, tol.rel, tol.gamma * ref.scale[i]};
    const CUdeviceptr wide = dref_[i].wide ? dref_[i].wide->get() : dref_[i].stored->get();
    enqueued =
        enqueued && cmp.enqueue(stream_, *kind_of(stored.dtype), dref_[i].run1->get(), ptrs_[i],
                                dref_[i].stored->get(), wide, static_cast<uint64_t>(stored.numel()),
                                rule, counters_->get() + 3 * sizeof(uint64_t) * i);
  }
  check_cu(rt_, api.cuStreamSynchronize(stream_), "kernel execution");
  std::vector<uint64_t> counts(3 * params.size());
  check_cu(rt_, api.cuMemcpyDtoH(counts.data(), counters_->get(), counts.size() * sizeof(uint64_t)),
           "cuMemcpyDtoH");
  bool passed = enqueued;
  for (size_t i = 0; i < params.size() && passed; ++i) {
    if (params[i]->role != TensorRole::output) continue;
    const GpuCounts c{counts[3 * i], counts[3 * i + 1], counts[3 * i + 2]};
    passed =
        c.bad == 0 && c.differ == 0 && c.visited == static_cast<uint64_t>(ref.stored[i].numel());
  }
  if (!passed) return check(launch, ref, -1, nullptr);
  ++fast_verdicts_;
  return {};
}

std::vector<std::string> KernelHarness::check_bitwise(const std::function<void()>& launch,
                                                      const std::vector<HostTensor>& want) {
  std::vector<HostTensor> a = run_poisoned(launch, kPoison[0]);
  std::vector<HostTensor> b = run_poisoned(launch, kPoison[1]);
  std::vector<const TensorDecl*> params = def_.params();
  std::vector<std::string> problems;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->role != TensorRole::output) continue;
    const std::string& name = params[i]->name;
    if (int64_t n = count_poisoned(a[i], b[i], kPoison[0], kPoison[1])) {
      problems.push_back(fmt::format("{}: {} elements never written", name, n));
    }
    if (a[i].bytes != want[i].bytes || b[i].bytes != want[i].bytes) {
      problems.push_back(fmt::format("{}: not bitwise identical to the reference", name));
    }
  }
  return problems;
}

bool KernelHarness::clearly_slower(std::span<const double> reps_us, double best_us) {
  return best_us > 0 && reps_us.size() == static_cast<size_t>(kPruneReps) &&
         *std::min_element(reps_us.begin(), reps_us.end()) > kPruneFactor * best_us;
}

bool KernelHarness::settled(std::span<const double> sorted_us, double settle) {
  const size_t n = sorted_us.size();
  if (settle <= 0 || n < static_cast<size_t>(kSettleMinReps)) return false;
  // The ranks n/2 -+ 1.96 sqrt(n)/2 bound a ~95% confidence interval of the median
  // (the binomial order-statistic interval, normal approximation).
  const double half = 0.98 * std::sqrt(static_cast<double>(n));
  const auto lo = static_cast<size_t>(std::max(0.0, std::floor(n / 2.0 - half)));
  const auto hi = std::min(n - 1, static_cast<size_t>(std::ceil(n / 2.0 + half)));
  const double median = sorted_us[(n - 1) / 2];
  return median > 0 && (sorted_us[hi] - sorted_us[lo]) <= settle * median;
}

Measurement KernelHarness::time(const std::function<void()>& fn, int reps, bool flush_l2,
                                double budget_ms, double prune_above_us, double settle) {
  const DriverApi& api = rt_.driver();
  if (flush_l2 && !flush_) flush_ = std::make_unique<L2Flush>(rt_, stream_);
  // Repetitions are enqueued in batches, each between its own pair of events, and the host
  // waits once per batch: a synchronization per repetition costs more than a small kernel.
  constexpr int kBatch = 16;
  std::vector<CUevent> ev(2 * kBatch);
  for (CUevent& e : ev) check_cu(rt_, api.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  struct Destroy {
    const DriverApi& api;
    std::vector<CUevent>& ev;
    ~Destroy() {
      for (CUevent e : ev) api.cuEventDestroy(e);
    }
  } destroy{api, ev};
  // Enqueues `count` (<= kBatch) repetitions, waits for them, appends their times.
  auto batch = [&](int count, std::vector<double>& out) {
    for (int i = 0; i < count; ++i) {
      if (flush_l2) check_cu(rt_, flush_->enqueue(stream_), "the L2 flush's launch");
      api.cuEventRecord(ev[2 * i], stream_);
      fn();
      api.cuEventRecord(ev[2 * i + 1], stream_);
    }
    check_cu(rt_, api.cuEventSynchronize(ev[2 * count - 1]), "timed launch");
    for (int i = 0; i < count; ++i) {
      float ms = 0;
      api.cuEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]);
      out.push_back(ms * 1000.0);
    }
  };
  // Warm-up: module loading and the first launch's costs stay out of the numbers. 3 launches,
  // then more until 2 ms of kernel time (at most 16): the GPU is already busy with the
  // candidates before this one, so a long warm-up measures nothing new.
  std::vector<double> warm;
  const auto w0 = std::chrono::steady_clock::now();
  batch(3, warm);
  double warm_us = warm[0] + warm[1] + warm[2];
  if (warm_us < 2000) {
    const int more = static_cast<int>(std::clamp(2000 / std::max(warm_us / 3, 1.0), 1.0, 13.0));
    batch(more, warm);
  }
  // What one repetition costs in wall time (the flush, the launch, the wait: for a kernel of
  // a few microseconds mostly the flush) sizes the budget, not the kernel's time.
  const double per_rep_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - w0).count() /
      static_cast<double>(warm.size());
  if (reps <= 0) {
    reps =
        static_cast<int>(std::clamp(budget_ms * 1000.0 / std::max(per_rep_us, 1.0), 10.0, 2000.0));
  }
  std::vector<double> t, sorted;
  bool pruned = false;
  // The first batch is kPruneReps long, so that a clearly slower candidate stops there.
  while (static_cast<int>(t.size()) < reps && !pruned) {
    const int left = reps - static_cast<int>(t.size());
    batch(std::min(t.empty() && reps > kPruneReps ? kPruneReps : kBatch, left), t);
    pruned = reps > kPruneReps && t.size() == static_cast<size_t>(kPruneReps) &&
             clearly_slower(t, prune_above_us);
    sorted = t;
    std::sort(sorted.begin(), sorted.end());
    if (settled(sorted, settle)) break;
  }
  auto at = [&](double q) { return sorted[static_cast<size_t>(q * (sorted.size() - 1))]; };
  Measurement m;
  m.median_us = at(0.5);
  m.spread = (at(0.9) - at(0.1)) / m.median_us;
  m.reps = static_cast<int>(sorted.size());
  m.pruned = pruned;
  m.fastest_us = sorted.front();
  return m;
}

}  // namespace kiln
