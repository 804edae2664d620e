// `kiln run`, step by step:
//  1. Open the driver (only when its library cannot be loaded at all: exit 77, which the test
//     suite reports as a skip, or 1 under KILN_REQUIRE_GPU=1; any other failure is an error),
//     load the bundle, find the kernel and parse its IR from the manifest.
//  2. Inputs (autotune/harness.h InputMode: uniform in [-2, 2) for floats, optionally with NaN
//     and infinities or rows of -inf; [-1000, 1000] without 0 for i32) and the CPU
//     interpreter's reference outputs.
//  3. For each variant under test: poison the outputs, the kernel's buffers and its split
//     workspaces with 0xFF bytes, launch, compare; again with 0x7F bytes. An element that
//     still holds the poison both times was never written. Every element must be within its
//     tolerance (autotune/harness.h Tolerance, docs/testing.md), NaN and infinities exactly
//     where the reference has them; the worst element is named.
//  4. Time with CUDA events (autotune/harness.h): warm-up, the L2 flushed before each timed
//     launch, the median and spread of many launches; bytes moved = each
//     input read once + each output written once. Optionally time a device-to-device copy of
//     the same traffic in the same run, the bandwidth a memory-bound kernel is judged against.
#include "tools/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "autotune/harness.h"
#include "autotune/open_gpu.h"
#include "bundle/atomic_file.h"
#include "ir/text.h"
#include "runtime/driver.h"
#include "runtime/runtime.h"

namespace kiln {
namespace {

struct Failure {
  std::string message;
};

InputMode input_mode(const RunOptions& o) {
  std::string name = o.inputs;
  if (name.empty()) {
    const char* env = std::getenv("KILN_RUN_INPUTS");
    name = env && *env ? env : "random";
  }
  std::optional<InputMode> m = parse_input_mode(name);
  if (!m) {
    throw Failure{fmt::format("inputs: expected random, specials or neginf_rows, got '{}'", name)};
  }
  return *m;
}

struct VariantResult {
  std::vector<int> variants;  // per step
  std::string label, config;
  bool checked = false, ok = true;
  std::string check_text = "-";
  double max_err = 0;  // largest |got - exact| / (|exact| + the output's scale)
  double median_us = 0, spread = 0;
  double gbps = 0;
};

class Runner {
 public:
  Runner(const RunOptions& o, Runtime& rt, Kernel& kernel, const KernelDef& def)
      : o_(o),
        rt_(rt),
        kernel_(kernel),
        harness_(rt, def, kernel.info(), o.shape, o.seed, input_mode(o), o.scalars, o.strides) {}

  int run() {
    if (o_.check) ref_ = harness_.reference();
    std::vector<VariantResult> results;
    for (const std::vector<int>& choice : choices()) results.push_back(run_variant(choice));
    double copy_gbps = o_.copy_baseline ? time_copy() : 0;
    report(results, copy_gbps);
    bool ok = std::all_of(results.begin(), results.end(), [](auto& r) { return r.ok; });
    return ok ? kExitOk : kExitMismatch;
  }

 private:
  std::vector<std::vector<int>> choices() {
    const auto& steps = kernel_.info().steps;
    std::vector<int> chosen(steps.size());
    std::string why;
    kernel_.choose(harness_.symbols(), chosen, &why, harness_.strides());
    default_ = chosen;
    if (o_.variant == "default") {
      if (!o_.cache_path.empty()) fmt::print("{}\n", why);
      return {chosen};
    }
    if (o_.variant == "all") {
      // Each step's variants in turn, the other steps at their default. Views that are not
      // contiguous run only the strided variants of a step that reads them.
      std::vector<std::vector<int>> all;
      for (size_t s = 0; s < steps.size(); ++s) {
        const bool strided_only = !harness_.contiguous_views() &&
                                  std::any_of(steps[s].variants.begin(), steps[s].variants.end(),
                                              [](const bundle::Variant& v) { return v.strided; });
        for (int v = 0; v < static_cast<int>(steps[s].variants.size()); ++v) {
          if (strided_only && !steps[s].variants[static_cast<size_t>(v)].strided) continue;
          std::vector<int> c = chosen;
          c[s] = v;
          if (s == 0 || v != chosen[s]) all.push_back(c);
        }
      }
      return all;
    }
    if (steps.size() != 1) {
      throw Failure{fmt::format("--variant {} needs a kernel of one step; {} has {}", o_.variant,
                                kernel_.name(), steps.size())};
    }
    int n = static_cast<int>(steps[0].variants.size());
    char* end = nullptr;
    long v = std::strtol(o_.variant.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v >= n) {
      throw Failure{
          fmt::format("--variant: expected default, all or 0..{}, got '{}'", n - 1, o_.variant)};
    }
    return {{static_cast<int>(v)}};
  }

  void launch(const std::vector<int>& choice) {
    Status s = kernel_.launch_variants(harness_.stream(), harness_.ptrs(), harness_.symbols(),
                                       choice, harness_.strides());
    if (!s.ok()) throw Failure{s.message()};
  }

  VariantResult run_variant(const std::vector<int>& choice) {
    VariantResult r;
    r.variants = choice;
    const auto& steps = kernel_.info().steps;
    for (size_t s = 0; s < steps.size(); ++s) {
      const bundle::Variant& v = steps[s].variants[choice[s]];
      r.label += fmt::format("{}v{}{}", s ? "+" : "", v.id, v.id == default_[s] ? "*" : "");
      if (steps.size() == 1) r.config = config_text(v.config);
    }
    auto fn = [&] { launch(choice); };
    if (o_.check) {
      std::vector<std::string> problems = harness_.check(fn, ref_, o_.rtol, &r.max_err);
      r.checked = true;
      r.ok = problems.empty();
      r.check_text = r.ok ? "ok" : "MISMATCH";
      for (const std::string& p : problems) {
        fmt::print(stderr, "kiln run: {} {}: {}\n", kernel_.name(), r.label, p);
      }
    }
    Measurement m = harness_.time(fn, o_.reps, /*flush_l2=*/true);
    r.median_us = m.median_us;
    r.spread = m.spread;
    r.gbps = harness_.bytes_moved() / (m.median_us * 1e-6) / 1e9;
    return r;
  }

  double time_copy() {
    // The peak copy bandwidth: at least 1 GiB copied (read, and as much written), or the kernel's
    // own traffic if that is larger. A copy of only a small kernel's bytes runs below the peak,
    // which would make kernels look better than the hardware allows.
    constexpr size_t kMinCopy = size_t{1} << 30;
    size_t half = std::max(kMinCopy, static_cast<size_t>(harness_.bytes_moved() / 2));
    DeviceBuffer src(rt_, half), dst(rt_, half);
    const DriverApi& api = rt_.driver();
    if (api.cuMemsetD8(src.get(), 0x3C, half) != CUDA_SUCCESS) throw Failure{"cuMemsetD8 failed"};
    Measurement m = harness_.time(
        [&] {
          CUresult r = api.cuMemcpyDtoDAsync(dst.get(), src.get(), half, harness_.stream());
          if (r != CUDA_SUCCESS) throw Failure{"cuMemcpyDtoDAsync: " + rt_.describe(r)};
        },
        o_.reps, /*flush_l2=*/true);
    copy_us_ = m.median_us;
    copy_mib_ = half / double(1 << 20);
    return 2.0 * half / (m.median_us * 1e-6) / 1e9;
  }

  void report(const std::vector<VariantResult>& results, double copy_gbps) {
    const DeviceInfo& d = rt_.device();
    std::string shape;
    for (const auto& [k, v] : o_.shape) shape += fmt::format(" {}={}", k, v);
    fmt::print("kernel {} on {} ({}, {} SMs),{}; {:.1f} MB moved per launch\n", kernel_.name(),
               d.name, d.arch(), d.sm_count, shape, harness_.bytes_moved() / 1e6);
    fmt::print("  {:<10} {:<26} {:<9} {:>9} {:>11} {:>7} {:>9}{}\n", "variant", "config", "check",
               "max.err", "median us", "spread", "GB/s", copy_gbps > 0 ? "   % copy" : "");
    for (const VariantResult& r : results) {
      std::string err = r.checked ? fmt::format("{:.2e}", r.max_err) : "-";
      std::string pct = copy_gbps > 0 ? fmt::format(" {:>8.1f}", 100 * r.gbps / copy_gbps) : "";
      fmt::print("  {:<10} {:<26} {:<9} {:>9} {:>11.2f} {:>6.1f}% {:>9.1f}{}\n", r.label, r.config,
                 r.check_text, err, r.median_us, 100 * r.spread, r.gbps, pct);
    }
    if (copy_gbps > 0) {
      fmt::print(
          "  copy baseline (device-to-device, {:.0f} MiB each way): {:.2f} us, {:.1f} GB/s\n",
          copy_mib_, copy_us_, copy_gbps);
    }
    if (o_.json_out.empty()) return;
    nlohmann::json j;
    j["kernel"] = kernel_.name();
    j["device"] = {{"name", d.name}, {"arch", d.arch()}, {"sm_count", d.sm_count}};
    j["shape"] = o_.shape;
    if (!o_.strides.empty()) j["strides"] = o_.strides;
    j["bytes_moved"] = harness_.bytes_moved();
    j["copy_gbps"] = copy_gbps;
    for (const VariantResult& r : results) {
      j["variants"].push_back({{"variants", r.variants},
                               {"label", r.label},
                               {"config", r.config},
                               {"checked", r.checked},
                               {"ok", r.ok},
                               {"max_err", r.max_err},
                               {"median_us", r.median_us},
                               {"spread", r.spread},
                               {"gbps", r.gbps}});
    }
    if (Status s = files::write_atomically(o_.json_out, j.dump(2) + "\n"); !s.ok()) {
      throw Failure{fmt::format("--json: {}", s.message())};
    }
  }

  const RunOptions& o_;
  Runtime& rt_;
  Kernel& kernel_;
  std::vector<int> default_;  // what a plain launch runs for this shape (marked * in reports)
  KernelHarness harness_;
  Reference ref_;
  double copy_us_ = 0;
  double copy_mib_ = 0;
};

}  // namespace

int run_kernel(const RunOptions& o) {
  std::unique_ptr<Runtime> rt;
  if (int rc = open_gpu("kiln run", rt); rc >= 0) return rc;
  Result<std::unique_ptr<Bundle>> b = Bundle::load(*rt, o.bundle);
  if (!b.ok()) {
    fmt::print(stderr, "kiln run: {}\n", b.message());
    return kExitError;
  }
  if (!o.cache_path.empty()) {
    Result<cache::Cache> c = cache::load(o.cache_path);
    if (!c.ok()) {
      fmt::print(stderr, "kiln run: {}\n", c.message());
      return kExitError;
    }
    for (const std::string& why : (*b)->use_cache(*c))
      fmt::print(stderr, "kiln run: cache entry ignored: {}\n", why);
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
    for (const auto& [name, value] : o.scalars) {
      const TensorDecl* t = p.kernels[0].find_tensor(name);
      if (!t || !t->scalar) {
        throw Failure{
            fmt::format("--scalar: kernel {} has no scalar parameter {}", o.kernel, name)};
      }
    }
    for (const auto& [name, value] : o.strides) {
      const TensorDecl* t = p.kernels[0].find_tensor(name);
      if (!t || !t->strided) {
        throw Failure{
            fmt::format("--strides: kernel {} has no strided parameter {}", o.kernel, name)};
      }
    }
    return Runner(o, *rt, *kernel, p.kernels[0]).run();
  } catch (const Failure& f) {
    fmt::print(stderr, "kiln run: {}\n", f.message);
  } catch (const HarnessError& f) {
    fmt::print(stderr, "kiln run: {}\n", f.message);
  } catch (const UserError& e) {
    fmt::print(stderr, "kiln run: {}\n", e.what());
  }
  return kExitError;
}

}  // namespace kiln
