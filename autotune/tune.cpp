// `kiln tune`, for each kernel, shape and step:
//  1. Key: kernel hash, step, this GPU, driver and Kiln versions, the exact shape. A key the
//     cache already holds is skipped (no benchmarking) unless --force.
//  2. Reference, once per shape for all its steps: the interpreter's outputs on random
//     inputs (kept on the device for every candidate), and the default variants' outputs,
//     themselves checked against the interpreter first.
//  3. Search (autotune/search.h): every precompiled variant of the step, then coordinate
//     descent over block and unroll. A configuration outside the bundle is compiled on the
//     fly, added to the bundle (under its lock, manifest rewritten atomically; other tuners
//     may share the bundle) and loaded. A candidate is
//     rejected when it cannot load, spills registers, asks for more registers than an SM has,
//     or gives a wrong result (an element outside its tolerance of the interpreter's value,
//     docs/testing.md; in deterministic mode, any bit different from the default's); each
//     rejection is recorded with its reason.
//  4. Timing: the whole kernel launch with CUDA events, L2 flushed before each repetition,
//     median and spread (autotune/harness.h).
//  5. The winner, runner-up and default go into the cache under its lock (bundle/cache.h),
//     after every kernel, so an interrupted tune keeps what it finished: one entry for the
//     exact shape and one for its bucket (the newest tuned shape of a bucket serves it).
#include "autotune/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>

#include "autotune/gpu_check.h"
#include "autotune/harness.h"
#include "autotune/open_gpu.h"
#include "autotune/search.h"
#include "bundle/cache.h"
#include "compiler/compile.h"
#include "compiler/kernel_plan.h"
#include "compiler/target.h"
#include "ir/text.h"
#include "runtime/driver.h"
#include "runtime/runtime.h"

namespace kiln {
namespace {

// Wall time per timed candidate (KernelHarness::time): 10 ms is 250 repetitions of a kernel of
// a few microseconds (each after its L2 flush, a write of twice the L2 then, about 30 us on an
// H200; a read of as much now, autotune/l2_flush.h) and 10 of
// one of 1 ms. It was 60 ms of kernel time, which for a 5 us kernel meant 2000 flushes, then
// 20 ms with a 256 MB flush (bench/results/2026-11-24-h200-tune/README.md).
constexpr double kTuneBudgetMs = 10;
// ... and fewer when the median has settled within 1% (KernelHarness::settled): a stable
// kernel is timed in 10 to 20 repetitions, about 1 ms for one of a few microseconds.
constexpr double kTuneSettle = 0.01;

struct TuneFailure {
  std::string message;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Where a tune's time went (the summary line): each phase's wall time, added up.
struct Spent {
  double reference = 0;  // the interpreter's outputs and the default's check, once per shape
  double checks = 0;     // the candidates' checks
  double timing = 0;     // candidates and defaults timed
  double compiling = 0;  // waiting for configurations compiled on the fly (and reloading)
  double loading = 0;    // loading a candidate's module
};

// Adds the scope's wall time to `into`.
class Stopwatch {
 public:
  explicit Stopwatch(double& into) : into_(into) {}
  ~Stopwatch() { into_ += seconds_since(t0_); }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

 private:
  double& into_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

std::string shape_text(const SymbolValues& s) {
  std::string out;
  for (const auto& [k, v] : s) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
  return out;
}

class Tuner {
 public:
  explicit Tuner(const TuneOptions& o) : o_(o) {}

  int run() {
    // As `kiln run` does: a skip (77) only without a driver library (autotune/open_gpu.h).
    if (int rc = open_gpu("kiln tune", rt_); rc >= 0) return rc;
    rt_->driver().cuDriverGetVersion(&driver_version_);
    comparator_ = std::make_unique<GpuComparator>(*rt_);
    Result<cache::Cache> c = cache::load(o_.cache_path);
    if (!c.ok()) throw TuneFailure{c.message()};
    cache_ = std::move(c.value());
    // The manifests say which keys a job has: a job the cache already holds is skipped
    // without loading its bundle (a warm re-tune loads nothing).
    internal_check(o_.manifests.size() == o_.bundles.size(), "tune: one manifest per bundle");
    for (const TuneJob& job : o_.jobs) {
      if (o_.manifests.at(job.bundle).find(job.kernel) == nullptr) {
        throw TuneFailure{
            fmt::format("bundle {} has no kernel '{}'", o_.bundles[job.bundle], job.kernel)};
      }
    }
    // The job names are copies: tuning may add variants, which reloads the bundle.
    start_ = std::chrono::steady_clock::now();
    for (size_t i = 0; i < o_.jobs.size(); ++i) {
      job_ = i;
      tune_kernel(o_.jobs[i].bundle, o_.jobs[i].kernel, o_.jobs[i].shape);
    }
    progress("");
    const double total = seconds_since(start_);
    fmt::print(
        "{} (kernel, shape) pairs, {} steps tuned in {:.1f} s: references and defaults' checks "
        "{:.1f} s, candidates' checks {:.1f} s, timing {:.1f} s, compiling (waited for) {:.1f} "
        "s, loading {:.1f} s, the rest {:.1f} s\n",
        o_.jobs.size(), steps_tuned_, total, spent_.reference, spent_.checks, spent_.timing,
        spent_.compiling, spent_.loading,
        total - spent_.reference - spent_.checks - spent_.timing - spent_.compiling -
            spent_.loading);
    return 0;
  }

 private:
  const std::string& dir() const { return o_.bundles.at(current_); }

  // Loads bundle `index` unless it is the one loaded.
  void use_bundle(int index) {
    if (index == current_ && bundle_) return;
    current_ = index;
    Stopwatch sw(spent_.loading);
    reload();
  }

  void reload() {
    bundle_.reset();
    auto b = Bundle::load(*rt_, dir());
    if (!b.ok()) throw TuneFailure{b.message()};
    bundle_ = std::move(b.value());
  }

  Kernel& kernel(const std::string& name) { return *bundle_->find(name); }

  cache::Key key_for(const bundle::KernelInfo& info, int step, const SymbolValues& shape) const {
    const DeviceInfo& d = rt_->device();
    cache::Key k;
    k.kernel_hash = info.hash;
    k.step = step;
    k.gpu = {d.name, d.cc_major, d.cc_minor, d.sm_count};
    k.driver_version = driver_version_;
    k.kiln_version = KILN_VERSION;
    k.shape = std::map<std::string, int64_t>(shape.begin(), shape.end());
    return k;
  }

  // A bar over the jobs, the time left estimated from the jobs done (each job's steps split
  // it evenly), and what is being timed; "" clears the line.
  void progress(const std::string& text, double job_fraction = 0) const {
    if (!o_.progress) return;
    if (text.empty()) {
      fmt::print(stderr, "\r\033[K");
      return;
    }
    const double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const std::string line = progress_line(job_, o_.jobs.size(), job_fraction, spent, text);
    fmt::print(stderr, "\r\033[K{}", line);
  }

  void tune_kernel(int bundle_index, const std::string& name,
                   const SymbolValues& all) {  // name outlives reloads
    const bundle::KernelInfo* listed = o_.manifests.at(bundle_index).find(name);
    bool all_cached = !o_.force;
    for (size_t step = 0; step < listed->steps.size() && all_cached; ++step) {
      all_cached = cache::find(cache_, key_for(*listed, static_cast<int>(step), all)) != nullptr;
    }
    if (!all_cached) use_bundle(bundle_index);
    // A copy: reloads replace the bundle's. Without a bundle loaded, the manifest's.
    const bundle::KernelInfo info = all_cached ? *listed : kernel(name).info();
    SymbolValues shape;
    for (const std::string& s : info.symbols) {
      auto it = all.find(s);
      if (it == all.end()) throw TuneFailure{fmt::format("{}: no value for {}", name, s)};
      shape[s] = it->second;
    }
    Program p = parse_program(info.ir);
    const KernelDef& def = p.kernels.at(0);
    std::vector<cache::Entry> entries;
    std::unique_ptr<ShapeRun> run;  // made when the first step needs tuning
    for (size_t step = 0; step < info.steps.size(); ++step) {
      cache::Key key = key_for(info, static_cast<int>(step), shape);
      if (!o_.force && cache::find(cache_, key)) {
        fmt::print("{} {} step {}: cached, not benchmarked\n", name, shape_text(shape), step);
        continue;
      }
      auto t0 = std::chrono::steady_clock::now();
      step_fraction_ = {static_cast<double>(step) / info.steps.size(), 1.0 / info.steps.size()};
      if (!run) {
        progress(
            fmt::format("{} {}: the reference and the default's check", name, shape_text(shape)));
        Stopwatch sw(spent_.reference);
        run = start_shape(def, name, shape);
      }
      ++steps_tuned_;
      cache::Entry e = tune_step(*run, def, name, static_cast<int>(step), shape);
      e.key = key;
      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      progress("");
      fmt::print("{} {} step {}: default {} {:.2f} us -> {} {:.2f} us ({:.2f}x), {}, {:.1f} s\n",
                 name, shape_text(shape), step, config_text(e.default_config.config),
                 e.default_config.median_us, config_text(e.winner.config), e.winner.median_us,
                 e.default_config.median_us / e.winner.median_us, e.how, wall);
      // The same winner also serves the shape's bucket (bundle/cache.h) until another shape
      // of that bucket is tuned: the newest entry wins.
      cache::Entry b = e;
      b.key.bucket = true;
      b.key.shape = cache::bucket_of(e.key.shape);
      b.how += fmt::format("; bucket entry from {}", shape_text(shape));
      entries.push_back(std::move(e));
      entries.push_back(std::move(b));
    }
    if (entries.empty()) return;
    Result<cache::Cache> stored = cache::store(o_.cache_path, entries);
    if (!stored.ok()) throw TuneFailure{stored.message()};
    cache_ = std::move(stored.value());
  }

  // The variant of `step` with exactly `config`, compiling and adding it when absent. Other
  // tuners may be adding variants to the same bundle: add_variant numbers the new one from
  // the manifest on disk, under the bundle's lock, and reuses theirs when they added it.
  // A configuration being compiled in the background uses it: compiling is overlapped with
  // timing (SearchOptions::upcoming, prefetch below).
  using Compiling = std::map<Config, std::future<Result<int>>>;

  int variant_for(const KernelDef& def, const std::string& name, int step, const Config& config,
                  Compiling& compiling) {
    for (const bundle::Variant& v : kernel(name).info().steps[step].variants) {
      if (v.config == config) return v.id;
    }
    Result<int> id = Status::error("");
    if (auto it = compiling.find(config); it != compiling.end()) {
      id = it->second.get();  // rethrows what compile_variant threw
      compiling.erase(it);
    } else {
      id = add_variant(dir(), def, step, pointwise_config(config));
    }
    if (!id.ok()) throw TuneFailure{id.message()};
    reload();
    return *id;
  }

  static PointwiseConfig pointwise_config(const Config& c) {
    return {static_cast<int>(c.at("block")), static_cast<int>(c.at("vec")),
            static_cast<int>(c.at("unroll"))};
  }

  // Starts compiling, each on a thread of its own, the configurations the descent will time
  // next that the bundle lacks. add_variant is safe with several threads adding at once (it
  // takes the bundle's lock); `def` must outlive `compiling`, whose futures wait for their
  // threads when destroyed. A neighbour compiled ahead that the descent then does not time
  // stays in the bundle, as every variant compiled on the fly does.
  void prefetch(Compiling& compiling, const KernelDef& def, const std::string& name, int step,
                const std::vector<Config>& configs) {
    for (const Config& c : configs) {
      if (compiling.count(c) || !c.count("block") || !c.count("vec") || !c.count("unroll")) {
        continue;
      }
      bool present = false;
      for (const bundle::Variant& v : kernel(name).info().steps[step].variants) {
        present = present || v.config == c;
      }
      if (present) continue;
      compiling.emplace(
          c, std::async(std::launch::async, [dir = dir(), &def, step, cfg = pointwise_config(c)] {
            return add_variant(dir, def, step, cfg);
          }));
    }
  }

  // What the steps of one shape share, made once per shape: the inputs on the device (the
  // same for every candidate), the interpreter's outputs (the costliest part of a check), the
  // variants a plain launch runs (a reduction step's heuristic tier), and the default's
  // outputs, themselves checked against the interpreter.
  struct ShapeRun {
    ShapeRun(Runtime& rt, const KernelDef& def, const bundle::KernelInfo& info,
             const SymbolValues& shape)
        : h(rt, def, info, shape, /*seed=*/1, InputMode::random, {}, {},
            /*contiguous_views=*/true),
          defaults(info.steps.size()) {}
    KernelHarness h;
    std::vector<int> defaults;
    Reference exact;
    std::vector<HostTensor> ref;
  };

  void launch(const std::string& name, ShapeRun& run, const std::vector<int>& choice) {
    Status s = kernel(name).launch_variants(run.h.stream(), run.h.ptrs(), run.h.symbols(), choice,
                                            run.h.strides());
    if (!s.ok()) throw TuneFailure{s.message()};
  }

  std::unique_ptr<ShapeRun> start_shape(const KernelDef& def, const std::string& name,
                                        const SymbolValues& shape) {
    auto run = std::make_unique<ShapeRun>(*rt_, def, kernel(name).info(), shape);
    kernel(name).choose(run->h.symbols(), run->defaults);
    // The default variant is checked against the interpreter; every candidate must match
    // the interpreter within the outputs' tolerances too, or in deterministic mode the
    // default's outputs bitwise. Checked launches poison outputs, buffers and workspaces.
    double err = 0;
    run->exact = run->h.reference();
    std::vector<std::string> bad =
        run->h.check([&] { launch(name, *run, run->defaults); }, run->exact, -1, &err);
    if (!bad.empty()) {
      throw TuneFailure{fmt::format("{}: the default variant is wrong: {}", name, bad[0])};
    }
    run->ref = run->h.run_poisoned([&] { launch(name, *run, run->defaults); }, 0xFF);
    return run;
  }

  cache::Entry tune_step(ShapeRun& run, const KernelDef& def, const std::string& name, int step,
                         const SymbolValues& shape) {
    KernelHarness& h = run.h;
    const std::vector<int>& defaults = run.defaults;
    const Reference& exact = run.exact;
    const std::vector<HostTensor>& ref = run.ref;
    auto launch = [&](const std::vector<int>& choice) { this->launch(name, run, choice); };

    const std::string arch = rt_->device().arch();
    std::vector<Config> grid;
    // A strided variant runs only for views that are not contiguous, which the harness's
    // contiguous inputs are not: the tuned winners serve contiguous launches, so it is no
    // candidate (Kernel::launch runs it for every other view, tuned or not).
    for (const bundle::Variant& v : kernel(name).info().steps[step].variants) {
      if (!v.strided) grid.push_back(v.config);
    }
    int timed = 0;
    double best_us = 0;   // the best median so far (pruning)
    Compiling compiling;  // before `trial`, which uses it; waits for its threads last
    auto trial = [&](const Config& c) -> Trial {
      ++timed;
      progress(fmt::format("{} {} step {}: {} ({}/{}+)", name, shape_text(shape), step,
                           config_text(c), timed, grid.size()),
               step_fraction_.first +
                   step_fraction_.second * std::min(0.9, double(timed) / (grid.size() + 1)));
      int v = 0;
      {
        Stopwatch sw(spent_.compiling);
        v = variant_for(def, name, step, c, compiling);
      }
      Kernel& k = kernel(name);
      const bundle::Variant& var = k.info().steps[step].variants[v];
      for (const bundle::ArchImage& im : var.images) {
        if (im.arch != arch) continue;
        if (im.spill_bytes > 0)
          return {std::nullopt, fmt::format("{} bytes of register spills", im.spill_bytes)};
        const int sm_registers = target_facts(arch).registers_per_sm;
        if (int64_t{im.registers} * var.block_threads > sm_registers) {
          return {std::nullopt, fmt::format("{} registers x {} threads exceed an SM's {}",
                                            im.registers, var.block_threads, sm_registers)};
        }
      }
      std::vector<int> choice = defaults;
      choice[step] = v;
      Status loadable = Status::ok_status();
      {
        Stopwatch sw(spent_.loading);
        loadable = k.check_variant(step, v);
      }
      if (!loadable.ok()) return {std::nullopt, loadable.message()};
      auto fn = [&] { launch(choice); };
      std::vector<std::string> problems;
      {
        Stopwatch sw(spent_.checks);
        problems =
            o_.deterministic ? h.check_bitwise(fn, ref) : h.check_fast(*comparator_, fn, exact);
      }
      if (!problems.empty()) return {std::nullopt, "wrong result: " + problems[0], ""};
      // Checked in full, then timed until its median settles; a candidate clearly slower
      // than the best so far stops after a few repetitions (harness.h), and the entry says so.
      Stopwatch sw(spent_.timing);
      Measurement m = h.time(fn, 0, /*flush_l2=*/true, kTuneBudgetMs, best_us, kTuneSettle);
      if (m.pruned) {
        return {m, "",
                fmt::format("pruned after {} repetitions: its fastest, {:.2f} us, > {} x the "
                            "best so far, {:.2f} us",
                            m.reps, m.fastest_us, KernelHarness::kPruneFactor, best_us)};
      }
      if (best_us <= 0 || m.median_us < best_us) best_us = m.median_us;
      return {m, "", ""};
    };
    // Beyond the grid, the knobs the plan lets the tuner move (pointwise steps: their
    // variants compile on the fly); a reduction step's variants are the precompiled ones.
    std::vector<ParamRange> params_range;
    std::unique_ptr<KernelPlan> plan = plan_kernel(def);
    if (static_cast<size_t>(step) < plan->steps.size()) {
      for (const TuneRange& r : plan->steps[step].tune_ranges) {
        params_range.push_back({r.name, r.min, r.max});
      }
    }
    SearchOptions so;
    so.descent = o_.descent;
    so.upcoming = [&](const std::vector<Config>& next) {
      prefetch(compiling, def, name, step, next);
    };
    SearchResult r = search(grid, params_range, trial, so);
    if (!r.best) throw TuneFailure{fmt::format("{} step {}: no usable variant", name, step)};

    cache::Entry e;
    e.kernel = name;
    const bundle::Variant& dv = kernel(name).info().steps[step].variants[defaults[step]];
    Measurement dm;
    {
      Stopwatch sw(spent_.timing);
      dm = h.time([&] { launch(defaults); }, 0, true, kTuneBudgetMs, 0, kTuneSettle);
    }
    e.default_config = {dv.config, dm.median_us, dm.spread};
    // Never a winner slower than the default timed just now (autotune/search.h).
    std::string kept = keep_default_unless_faster(r, dv.config, dm);
    e.winner = {*r.best, r.best_time.median_us, r.best_time.spread};
    if (r.runner_up) {
      e.runner_up =
          cache::Timing{*r.runner_up, r.runner_up_time.median_us, r.runner_up_time.spread};
    }
    e.how = kept.empty() ? r.how : r.how + "; " + kept;
    e.deterministic = o_.deterministic;
    e.candidates = r.timed;
    e.rejected = r.rejected;
    e.pruned = r.pruned;
    e.tuned_at = cache::utc_now();
    return e;
  }

  const TuneOptions& o_;
  std::unique_ptr<Runtime> rt_;
  std::unique_ptr<Bundle> bundle_;
  std::unique_ptr<GpuComparator> comparator_;  // the candidates' checks (harness.h check_fast)
  int current_ = -1;                           // the index of the loaded bundle
  cache::Cache cache_;
  int driver_version_ = 0;
  size_t job_ = 0;                                 // the job being tuned (progress)
  std::pair<double, double> step_fraction_{0, 1};  // its step's start and share of the job
  std::chrono::steady_clock::time_point start_;
  Spent spent_;
  int steps_tuned_ = 0;
};

}  // namespace

std::string progress_line(size_t job, size_t jobs, double job_fraction, double elapsed_s,
                          std::string_view text) {
  const double done = jobs == 0 ? 1 : (static_cast<double>(job) + job_fraction) / jobs;
  std::string left = "--";
  if (done > 0.01 && elapsed_s > 1) {
    const int s = static_cast<int>(elapsed_s * (1 - done) / done);
    left = s >= 60 ? fmt::format("{}m{:02}s", s / 60, s % 60) : fmt::format("{}s", s);
  }
  constexpr int kWidth = 20;
  const int filled = std::clamp(static_cast<int>(done * kWidth), 0, kWidth);
  std::string line = fmt::format("[{}{}] {}/{} {} left  {}", std::string(filled, '#'),
                                 std::string(kWidth - filled, '.'), job, jobs, left, text);
  if (line.size() > 99) line.resize(99);  // one line of a 100-column terminal
  return line;
}

int tune(const TuneOptions& opts) {
  try {
    return Tuner(opts).run();
  } catch (const TuneFailure& f) {
    fmt::print(stderr, "kiln tune: {}\n", f.message);
  } catch (const HarnessError& f) {
    fmt::print(stderr, "kiln tune: {}\n", f.message);
  } catch (const std::exception& e) {
    fmt::print(stderr, "kiln tune: {}\n", e.what());
  }
  return 1;
}

}  // namespace kiln
