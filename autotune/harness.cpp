// See harness.h.
#include "autotune/harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "runtime/driver.h"

namespace kiln {
namespace {

void check_cu(const Runtime& rt, CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw HarnessError{fmt::format("{}: {}", what, rt.describe(r))};
}

void fill_random(HostTensor& t, std::mt19937_64& rng) {
  if (t.dtype == DType::i32) {
    std::uniform_int_distribution<int32_t> d(-1000, 1000);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, d(rng));
  } else {
    std::uniform_real_distribution<float> d(-2.0f, 2.0f);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, d(rng));
  }
}

// Elements whose bytes still hold the poison in both runs were never written.
int64_t count_poisoned(const HostTensor& a, const HostTensor& b, uint8_t pa, uint8_t pb) {
  const size_t w = size_of(a.dtype);
  int64_t n = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const auto* x = reinterpret_cast<const uint8_t*>(a.data()) + i * w;
    const auto* y = reinterpret_cast<const uint8_t*>(b.data()) + i * w;
    n += std::all_of(x, x + w, [&](uint8_t v) { return v == pa; }) &&
         std::all_of(y, y + w, [&](uint8_t v) { return v == pb; });
  }
  return n;
}

constexpr size_t kFlushBytes = size_t{256} << 20;

}  // namespace

DeviceBuffer::DeviceBuffer(const Runtime& rt, size_t bytes) : rt_(rt) {
  check_cu(rt, rt.driver().cuMemAlloc(&ptr_, std::max<size_t>(bytes, 16)), "cuMemAlloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) rt_.driver().cuMemFree(ptr_);
}

double default_rtol(DType t) {
  switch (t) {
    case DType::f32:
      return 1e-5;
    case DType::f16:
      return 2e-3;
    case DType::bf16:
      return 1e-2;
    default:
      return 0;
  }
}

Comparison compare(const HostTensor& out, const HostTensor& ref) {
  Comparison c;
  double diff2 = 0, ref2 = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double o = out.get(i), r = ref.get(i);
    if (std::isfinite(r) && std::isfinite(o)) {
      diff2 += (o - r) * (o - r);
      ref2 += r * r;
    } else if (!(std::isnan(o) && std::isnan(r)) && o != r) {
      ++c.mismatched_specials;
      if (c.first_bad < 0) c.first_bad = i;
    }
  }
  c.rel_err = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return c;
}

KernelHarness::KernelHarness(const Runtime& rt, const KernelDef& def,
                             const bundle::KernelInfo& info, const SymbolValues& shape,
                             uint64_t seed)
    : rt_(rt), def_(def), shape_(shape) {
  const DriverApi& api = rt.driver();
  check_cu(rt, api.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  std::mt19937_64 rng(seed);
  for (const TensorDecl* t : def.params()) {
    host_.emplace_back(t->dtype, resolve_shape(t->shape, shape));
    HostTensor& h = host_.back();
    bytes_moved_ += static_cast<double>(h.bytes.size());
    dev_.push_back(std::make_unique<DeviceBuffer>(rt, h.bytes.size()));
    ptrs_.push_back(dev_.back()->get());
    if (t->role == TensorRole::input) {
      fill_random(h, rng);
      check_cu(rt, api.cuMemcpyHtoD(ptrs_.back(), h.data(), h.bytes.size()), "cuMemcpyHtoD");
    }
  }
  for (const std::string& s : info.symbols) syms_.push_back(shape.at(s));
  // A copy from pageable memory may return before its DMA lands (the driver stages it), and
  // kernels on stream_ (non-blocking) do not wait for the default stream it is queued on:
  // without this a kernel could read inputs half uploaded. Seen on an H200 under load as
  // rare "relative error 1" mismatches of small shapes (rowmean_bf16, logsumexp M=1000,N=33).
  check_cu(rt, api.cuCtxSynchronize(), "uploading the inputs");
}

KernelHarness::~KernelHarness() {
  dev_.clear();
  flush_.reset();
  if (stream_) rt_.driver().cuStreamDestroy(stream_);
}

std::vector<HostTensor> KernelHarness::reference() const {
  std::vector<HostTensor> ref = host_;
  std::map<std::string, HostTensor*, std::less<>> named;
  std::vector<const TensorDecl*> params = def_.params();
  for (size_t i = 0; i < params.size(); ++i) named[params[i]->name] = &ref[i];
  interpret(def_, shape_, named);
  return ref;
}

std::vector<HostTensor> KernelHarness::run_poisoned(const std::function<void()>& launch,
                                                    uint8_t poison) {
  const DriverApi& api = rt_.driver();
  std::vector<const TensorDecl*> params = def_.params();
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->role != TensorRole::output) continue;
    check_cu(rt_, api.cuMemsetD8Async(ptrs_[i], poison, host_[i].bytes.size(), stream_),
             "cuMemsetD8Async");
  }
  launch();
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
                                              const std::vector<HostTensor>& ref, bool bitwise,
                                              double rtol, double* max_err) {
  std::vector<HostTensor> a = run_poisoned(launch, 0xFF);
  std::vector<HostTensor> b = run_poisoned(launch, 0x7F);
  std::vector<const TensorDecl*> params = def_.params();
  std::vector<std::string> problems;
  double worst = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->role != TensorRole::output) continue;
    const std::string& name = params[i]->name;
    if (int64_t n = count_poisoned(a[i], b[i], 0xFF, 0x7F)) {
      problems.push_back(fmt::format("{}: {} elements never written", name, n));
    }
    if (bitwise) {
      if (a[i].bytes != ref[i].bytes || b[i].bytes != ref[i].bytes) {
        problems.push_back(fmt::format("{}: not bitwise identical to the reference", name));
      }
      continue;
    }
    Comparison ca = compare(a[i], ref[i]), cb = compare(b[i], ref[i]);
    double err = std::max(ca.rel_err, cb.rel_err);
    worst = std::max(worst, err);
    double tol = rtol >= 0 ? rtol : default_rtol(params[i]->dtype);
    if (ca.mismatched_specials + cb.mismatched_specials) {
      problems.push_back(fmt::format("{}: NaN/inf differs from the reference at element {}", name,
                                     std::max(ca.first_bad, cb.first_bad)));
    }
    if (err > tol) {
      problems.push_back(fmt::format("{}: relative error {:.3g} > {:.3g}", name, err, tol));
    }
  }
  if (max_err) *max_err = worst;
  return problems;
}

Measurement KernelHarness::time(const std::function<void()>& fn, int reps, bool flush_l2,
                                double budget_ms) {
  const DriverApi& api = rt_.driver();
  if (flush_l2 && !flush_) flush_ = std::make_unique<DeviceBuffer>(rt_, kFlushBytes);
  CUevent e0, e1;
  check_cu(rt_, api.cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate");
  check_cu(rt_, api.cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate");
  auto once = [&](int i) {
    if (flush_l2) {
      check_cu(rt_,
               api.cuMemsetD8Async(flush_->get(), static_cast<uint8_t>(i), kFlushBytes, stream_),
               "cuMemsetD8Async");
    }
    api.cuEventRecord(e0, stream_);
    fn();
    api.cuEventRecord(e1, stream_);
    check_cu(rt_, api.cuEventSynchronize(e1), "timed launch");
    float ms = 0;
    api.cuEventElapsedTime(&ms, e0, e1);
    return ms * 1000.0;
  };
  // Warm up for 20 ms of kernel time, in at most 50 launches: a tiny kernel would otherwise
  // need thousands, each with its own L2 flush and synchronization.
  double warm = 0;
  for (int i = 0; i < 3 || (warm < 20000 && i < 50); ++i) warm += once(i);
  double est = once(0);
  if (reps <= 0) {
    reps = static_cast<int>(std::clamp(budget_ms * 1000.0 / std::max(est, 1.0), 10.0, 2000.0));
  }
  std::vector<double> t(reps);
  for (int i = 0; i < reps; ++i) t[i] = once(i);
  api.cuEventDestroy(e0);
  api.cuEventDestroy(e1);
  std::sort(t.begin(), t.end());
  auto at = [&](double q) { return t[static_cast<size_t>(q * (t.size() - 1))]; };
  Measurement m;
  m.median_us = at(0.5);
  m.spread = (at(0.9) - at(0.1)) / m.median_us;
  return m;
}

}  // namespace kiln
