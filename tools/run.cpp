// `kiln run`, step by step:
//  1. Open the driver (no driver or device: exit 77, which the test suite reports as a skip),
//     load the bundle, find the kernel and parse its IR from the manifest.
//  2. Random inputs (uniform in [-2, 2) for floats, [-1000, 1000] for i32; never zeros) and the
//     CPU interpreter's reference outputs.
//  3. For each variant under test: poison the outputs with 0xFF bytes, launch, compare; again
//     with 0x7F bytes. An element that still holds the poison both times was never written.
//     Outputs are compared by relative error in the 2-norm; NaN and infinity must match.
//  4. Time with CUDA events: warm-up, then the median of many launches; bytes moved = each
//     input read once + each output written once. Optionally time a device-to-device copy of
//     the same traffic in the same run, the bandwidth a memory-bound kernel is judged against.
#include "tools/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "ir/half.h"
#include "ir/interpreter.h"
#include "ir/text.h"
#include "runtime/driver.h"
#include "runtime/runtime.h"

namespace kiln {
namespace {

struct Failure {
  std::string message;
};

// Throws Failure with the driver's description when r is not CUDA_SUCCESS.
void check_cu(const Runtime& rt, CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw Failure{fmt::format("{}: {}", what, rt.describe(r))};
}

class DeviceBuffer {
 public:
  DeviceBuffer(const Runtime& rt, size_t bytes) : rt_(rt) {
    check_cu(rt, rt.driver().cuMemAlloc(&ptr_, std::max<size_t>(bytes, 16)), "cuMemAlloc");
  }
  ~DeviceBuffer() {
    if (ptr_) rt_.driver().cuMemFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr get() const { return ptr_; }

 private:
  const Runtime& rt_;
  CUdeviceptr ptr_ = 0;
};

void fill_random(HostTensor& t, std::mt19937_64& rng) {
  if (t.dtype == DType::i32) {
    std::uniform_int_distribution<int32_t> d(-1000, 1000);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, d(rng));
  } else {
    std::uniform_real_distribution<float> d(-2.0f, 2.0f);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, d(rng));
  }
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

struct Comparison {
  double rel_err = 0;
  int64_t mismatched_specials = 0;  // NaN/inf where the reference has none, or vice versa
  int64_t unwritten = 0;
  int64_t first_bad = -1;
};

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

int64_t count_poisoned(const HostTensor& a, const HostTensor& b, uint8_t pa, uint8_t pb) {
  const size_t w = size_of(a.dtype);
  int64_t n = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const auto* x = reinterpret_cast<const uint8_t*>(a.data()) + i * w;
    const auto* y = reinterpret_cast<const uint8_t*>(b.data()) + i * w;
    bool pa_all = std::all_of(x, x + w, [&](uint8_t v) { return v == pa; });
    bool pb_all = std::all_of(y, y + w, [&](uint8_t v) { return v == pb; });
    n += pa_all && pb_all;
  }
  return n;
}

std::string config_text(const bundle::Variant& v) {
  std::string s;
  for (const auto& [k, val] : v.config) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, val);
  return s;
}

struct VariantResult {
  std::vector<int> variants;  // per step
  std::string label, config;
  bool checked = false, ok = true;
  std::string check_text = "-";
  double rel_err = 0;
  double median_us = 0, min_us = 0, max_us = 0;
  double gbps = 0;
};

class Runner {
 public:
  Runner(const RunOptions& o, Runtime& rt, Kernel& kernel, const KernelDef& def)
      : o_(o), rt_(rt), api_(rt.driver()), kernel_(kernel), def_(def) {}

  int run() {
    check_cu(rt_, api_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    prepare();
    std::vector<VariantResult> results;
    for (const std::vector<int>& choice : choices()) results.push_back(run_variant(choice));
    double copy_gbps = o_.copy_baseline ? time_copy() : 0;
    report(results, copy_gbps);
    api_.cuStreamDestroy(stream_);
    bool ok = std::all_of(results.begin(), results.end(), [](auto& r) { return r.ok; });
    return ok ? kExitOk : kExitMismatch;
  }

 private:
  void prepare() {
    std::mt19937_64 rng(o_.seed);
    for (const TensorDecl* t : def_.params()) {
      host_.emplace_back(t->dtype, resolve_shape(t->shape, o_.shape));
      HostTensor& h = host_.back();
      bytes_moved_ += static_cast<double>(h.bytes.size());
      dev_.push_back(std::make_unique<DeviceBuffer>(rt_, h.bytes.size()));
      ptrs_.push_back(dev_.back()->get());
      if (t->role == TensorRole::input) {
        fill_random(h, rng);
        check_cu(rt_, api_.cuMemcpyHtoD(ptrs_.back(), h.data(), h.bytes.size()), "cuMemcpyHtoD");
      }
    }
    for (const std::string& s : kernel_.info().symbols) syms_.push_back(o_.shape.at(s));
    if (!o_.check) return;
    ref_ = host_;
    std::map<std::string, HostTensor*, std::less<>> named;
    std::vector<const TensorDecl*> params = def_.params();
    for (size_t i = 0; i < params.size(); ++i) named[params[i]->name] = &ref_[i];
    interpret(def_, o_.shape, named);
  }

  std::vector<std::vector<int>> choices() const {
    const auto& steps = kernel_.info().steps;
    std::vector<int> chosen;
    for (size_t s = 0; s < steps.size(); ++s) chosen.push_back(kernel_.chosen_variant(s));
    if (o_.variant == "default") return {chosen};
    if (steps.size() != 1) {
      throw Failure{fmt::format("--variant {} needs a kernel of one step; {} has {}", o_.variant,
                                kernel_.name(), steps.size())};
    }
    int n = static_cast<int>(steps[0].variants.size());
    if (o_.variant == "all") {
      std::vector<std::vector<int>> all;
      for (int v = 0; v < n; ++v) all.push_back({v});
      return all;
    }
    char* end = nullptr;
    long v = std::strtol(o_.variant.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v >= n) {
      throw Failure{
          fmt::format("--variant: expected default, all or 0..{}, got '{}'", n - 1, o_.variant)};
    }
    return {{static_cast<int>(v)}};
  }

  void launch(const std::vector<int>& choice) {
    Status s = kernel_.launch_variants(stream_, ptrs_, syms_, choice);
    if (!s.ok()) throw Failure{s.message()};
  }

  void sync() { check_cu(rt_, api_.cuStreamSynchronize(stream_), "kernel execution"); }

  // Launches with outputs poisoned to `poison` and copies the outputs back.
  std::vector<HostTensor> run_poisoned(const std::vector<int>& choice, uint8_t poison) {
    std::vector<const TensorDecl*> params = def_.params();
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->role != TensorRole::output) continue;
      check_cu(rt_, api_.cuMemsetD8Async(ptrs_[i], poison, host_[i].bytes.size(), stream_),
               "cuMemsetD8Async");
    }
    launch(choice);
    sync();
    std::vector<HostTensor> outs;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->role != TensorRole::output) continue;
      outs.push_back(host_[i]);
      check_cu(rt_, api_.cuMemcpyDtoH(outs.back().data(), ptrs_[i], outs.back().bytes.size()),
               "cuMemcpyDtoH");
    }
    return outs;
  }

  void check_variant(const std::vector<int>& choice, VariantResult& r) {
    std::vector<HostTensor> a = run_poisoned(choice, 0xFF);
    std::vector<HostTensor> b = run_poisoned(choice, 0x7F);
    std::vector<const TensorDecl*> params = def_.params();
    size_t oi = 0;
    std::vector<std::string> problems;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->role != TensorRole::output) continue;
      Comparison c = compare(a[oi], ref_[i]);
      Comparison c2 = compare(b[oi], ref_[i]);
      int64_t unwritten = count_poisoned(a[oi], b[oi], 0xFF, 0x7F);
      double tol = o_.rtol >= 0 ? o_.rtol : default_rtol(params[i]->dtype);
      r.rel_err = std::max({r.rel_err, c.rel_err, c2.rel_err});
      if (unwritten)
        problems.push_back(
            fmt::format("{}: {} elements never written", params[i]->name, unwritten));
      if (c.mismatched_specials + c2.mismatched_specials) {
        problems.push_back(fmt::format("{}: NaN/inf differs from the reference at element {}",
                                       params[i]->name, std::max(c.first_bad, c2.first_bad)));
      }
      if (std::max(c.rel_err, c2.rel_err) > tol) {
        problems.push_back(fmt::format("{}: relative error {:.3g} > {:.3g}", params[i]->name,
                                       std::max(c.rel_err, c2.rel_err), tol));
      }
      ++oi;
    }
    r.checked = true;
    r.ok = problems.empty();
    r.check_text = r.ok ? "ok" : "MISMATCH";
    for (const std::string& p : problems)
      fmt::print(stderr, "kiln run: {} {}: {}\n", kernel_.name(), r.label, p);
  }

  // Median, min and max microseconds of `fn` (which enqueues work on stream_).
  template <class F>
  std::array<double, 3> time(F&& fn) {
    CUevent e0, e1;
    check_cu(rt_, api_.cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate");
    check_cu(rt_, api_.cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate");
    auto once = [&] {
      api_.cuEventRecord(e0, stream_);
      fn();
      api_.cuEventRecord(e1, stream_);
      check_cu(rt_, api_.cuEventSynchronize(e1), "timed launch");
      float ms = 0;
      api_.cuEventElapsedTime(&ms, e0, e1);
      return ms * 1000.0;
    };
    double warm = 0;
    for (int i = 0; i < 3 || warm < 20000; ++i) warm += once();  // >= 3 launches, >= 20 ms
    double est = once();
    int reps = o_.reps > 0
                   ? o_.reps
                   : static_cast<int>(std::clamp(200000.0 / std::max(est, 1.0), 20.0, 2000.0));
    std::vector<double> t(reps);
    for (double& x : t) x = once();
    std::sort(t.begin(), t.end());
    api_.cuEventDestroy(e0);
    api_.cuEventDestroy(e1);
    return {t[t.size() / 2], t.front(), t.back()};
  }

  VariantResult run_variant(const std::vector<int>& choice) {
    VariantResult r;
    r.variants = choice;
    const auto& steps = kernel_.info().steps;
    for (size_t s = 0; s < steps.size(); ++s) {
      const bundle::Variant& v = steps[s].variants[choice[s]];
      r.label += fmt::format("{}v{}{}", s ? "+" : "", v.id, v.is_default ? "*" : "");
      if (steps.size() == 1) r.config = config_text(v);
    }
    if (o_.check) check_variant(choice, r);
    auto [med, lo, hi] = time([&] { launch(choice); });
    r.median_us = med;
    r.min_us = lo;
    r.max_us = hi;
    r.gbps = bytes_moved_ / (med * 1e-6) / 1e9;
    return r;
  }

  double time_copy() {
    size_t half = static_cast<size_t>(bytes_moved_ / 2);
    DeviceBuffer src(rt_, half), dst(rt_, half);
    check_cu(rt_, api_.cuMemsetD8Async(src.get(), 0x3C, half, stream_), "cuMemsetD8Async");
    auto [med, lo, hi] = time([&] {
      check_cu(rt_, api_.cuMemcpyDtoDAsync(dst.get(), src.get(), half, stream_),
               "cuMemcpyDtoDAsync");
    });
    copy_us_ = med;
    return 2.0 * half / (med * 1e-6) / 1e9;
  }

  void report(const std::vector<VariantResult>& results, double copy_gbps) {
    const DeviceInfo& d = rt_.device();
    std::string shape;
    for (const auto& [k, v] : o_.shape) shape += fmt::format(" {}={}", k, v);
    fmt::print("kernel {} on {} ({}, {} SMs),{}; {:.1f} MB moved per launch\n", kernel_.name(),
               d.name, d.arch(), d.sm_count, shape, bytes_moved_ / 1e6);
    fmt::print("  {:<10} {:<26} {:<9} {:>9} {:>11} {:>9}{}\n", "variant", "config", "check",
               "rel.err", "median us", "GB/s", copy_gbps > 0 ? "   % copy" : "");
    for (const VariantResult& r : results) {
      std::string err = r.checked ? fmt::format("{:.2e}", r.rel_err) : "-";
      std::string pct = copy_gbps > 0 ? fmt::format(" {:>8.1f}", 100 * r.gbps / copy_gbps) : "";
      fmt::print("  {:<10} {:<26} {:<9} {:>9} {:>11.2f} {:>9.1f}{}\n", r.label, r.config,
                 r.check_text, err, r.median_us, r.gbps, pct);
    }
    if (copy_gbps > 0) {
      fmt::print("  copy baseline (device-to-device, same bytes): {:.2f} us, {:.1f} GB/s\n",
                 copy_us_, copy_gbps);
    }
    if (o_.json_out.empty()) return;
    nlohmann::json j;
    j["kernel"] = kernel_.name();
    j["device"] = {{"name", d.name}, {"arch", d.arch()}, {"sm_count", d.sm_count}};
    j["shape"] = o_.shape;
    j["bytes_moved"] = bytes_moved_;
    j["copy_gbps"] = copy_gbps;
    for (const VariantResult& r : results) {
      j["variants"].push_back({{"variants", r.variants},
                               {"label", r.label},
                               {"config", r.config},
                               {"checked", r.checked},
                               {"ok", r.ok},
                               {"rel_err", r.rel_err},
                               {"median_us", r.median_us},
                               {"min_us", r.min_us},
                               {"max_us", r.max_us},
                               {"gbps", r.gbps}});
    }
    std::ofstream f(o_.json_out);
    f << j.dump(2) << "\n";
    if (!f) throw Failure{fmt::format("cannot write {}", o_.json_out)};
  }

  const RunOptions& o_;
  Runtime& rt_;
  const DriverApi& api_;
  Kernel& kernel_;
  const KernelDef& def_;
  CUstream stream_ = nullptr;
  std::vector<HostTensor> host_, ref_;
  std::vector<std::unique_ptr<DeviceBuffer>> dev_;
  std::vector<CUdeviceptr> ptrs_;
  std::vector<int64_t> syms_;
  double bytes_moved_ = 0, copy_us_ = 0;
};

}  // namespace

int run_kernel(const RunOptions& o) {
  Result<std::unique_ptr<Runtime>> rt = Runtime::open();
  if (!rt.ok()) {
    fmt::print(stderr, "kiln run: skipped: {}\n", rt.message());
    return kExitSkip;
  }
  Result<std::unique_ptr<Bundle>> b = Bundle::load(**rt, o.bundle);
  if (!b.ok()) {
    fmt::print(stderr, "kiln run: {}\n", b.message());
    return kExitError;
  }
  Kernel* kernel = (*b)->find(o.kernel);
  if (!kernel) {
    std::string names;
    for (const auto& k : (*b)->manifest().kernels) names += (names.empty() ? "" : ", ") + k.name;
    fmt::print(stderr, "kiln run: bundle {} has no kernel '{}' (it has: {})\n", o.bundle, o.kernel,
               names);
    return kExitError;
  }
  try {
    Program p = parse_program(kernel->info().ir);
    if (p.kernels.size() != 1) throw Failure{"the manifest's IR must hold exactly one kernel"};
    for (const std::string& s : kernel->info().symbols) {
      auto it = o.shape.find(s);
      if (it == o.shape.end()) throw Failure{fmt::format("--shape: missing a value for {}", s)};
      if (it->second <= 0) throw Failure{fmt::format("--shape: {} must be > 0", s)};
    }
    for (const auto& [s, v] : o.shape) {
      const auto& syms = kernel->info().symbols;
      if (std::find(syms.begin(), syms.end(), s) == syms.end()) {
        throw Failure{fmt::format("--shape: kernel {} has no symbol {}", o.kernel, s)};
      }
    }
    return Runner(o, **rt, *kernel, p.kernels[0]).run();
  } catch (const Failure& f) {
    fmt::print(stderr, "kiln run: {}\n", f.message);
  } catch (const UserError& e) {
    fmt::print(stderr, "kiln run: {}\n", e.what());
  }
  return kExitError;
}

}  // namespace kiln
