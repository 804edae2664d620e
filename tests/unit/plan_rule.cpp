// One plan, one story: what `kiln explain --shape` says runs is what the runtime's heuristic
// picks. For every kernel of every example, the manifest the compiler writes (the plan's
// manifest_step, through JSON and parse_manifest as the runtime reads it) is evaluated with
// the runtime's own functions (launch::encode, step_rule, heuristic_for) over a sweep of the
// reduced extent and the rows, on two GPUs' facts, and compared with explain's answer.
#include <fmt/format.h>

#include <filesystem>
#include <random>
#include <set>

#include "compiler/compile.h"
#include "compiler/kernel_plan.h"
#include "ir/text.h"
#include "runtime/launch.h"
#include "test_support.h"
#include "tools/explain.h"

using namespace kiln;
using kiln::testing::read_example;

namespace {

std::vector<std::string> example_names() {
  std::vector<std::string> out;
  const std::filesystem::path dir =
      std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "examples";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".kiln") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The manifest of `k` as the runtime reads it: every planned step, through JSON.
bundle::KernelInfo written_manifest(const KernelPlan& plan) {
  bundle::Manifest m;
  bundle::KernelInfo& info = m.kernels.emplace_back();
  const KernelDef& k = *plan.kernel;
  info.name = k.name;
  info.hash = "0123456789abcdef";
  for (const TensorDecl* t : k.params()) {
    info.params.push_back(
        {t->name, t->dtype, t->shape, t->role == TensorRole::output, t->scalar, t->strided});
  }
  for (const TensorDecl& b : plan.schedule.buffers) {
    info.buffers.push_back({b.name, b.dtype, b.shape, false});
  }
  info.symbols = k.symbols();
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    bundle::Step s = manifest_step(plan, si, {"sm_90"});
    for (bundle::Variant& v : s.variants) v.images[0].ptx_hash = "0123456789abcdef";
    info.steps.push_back(std::move(s));
  }
  Result<bundle::Manifest> back = bundle::parse_manifest(bundle::to_json(m), "test");
  INFO(back.message());
  REQUIRE(back.ok());
  return back->kernels[0];
}

// Reduced extents: powers of two and their neighbours, every tier limit and its neighbours,
// and random values.
std::vector<int64_t> reduced_sweep(const launch::StepRule& rule) {
  std::set<int64_t> out;
  for (int64_t p = 1; p <= (int64_t{1} << 26); p *= 2) out.insert({p - 1, p, p + 1});
  for (const auto& [limit, v] : rule.tiers) {
    if (limit < (int64_t{1} << 40)) out.insert({limit - 1, limit, limit + 1});
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40; ++i) out.insert(1 + static_cast<int64_t>(rng() % (int64_t{1} << 24)));
  out.erase(0);
  return {out.begin(), out.end()};
}

}  // namespace

TEST_CASE("explain names the variant the runtime's heuristic runs, for every example",
          "[plan][explain]") {
  // 4, 8 and 16: the fitted outer splits (f32 and bf16 columns).
  const std::vector<int64_t> rows_sweep{1,  2,  3,   4,   7,   8,    16,   31,
                                        64, 65, 131, 132, 133, 1000, 4096, 65537};
  int compared = 0;
  std::set<std::pair<std::string, int>> chosen;  // (step, variant) pairs seen: the sweep bites
  for (const std::string& name : example_names()) {
    Program p = parse_program(read_example(name));
    for (const KernelDef& k : p.kernels) {
      INFO(k.name);
      std::unique_ptr<KernelPlan> plan = plan_kernel(k);
      const bundle::KernelInfo info = written_manifest(*plan);
      const launch::EncodedKernel enc = launch::encode(info);
      const std::vector<std::string> symbols = k.symbols();
      for (const launch::DeviceFacts device : {launch::DeviceFacts{132, true}, {20, true}}) {
        for (size_t si = 0; si < plan->steps.size(); ++si) {
          const StepPlan& step = plan->steps[si];
          const launch::StepRule rule = launch::step_rule(
              info.steps[si], std::vector<bool>(info.steps[si].variants.size(), true), device);
          const std::string reduced_symbol =
              step.reduced.size() == 1 && !step.reduced[0].is_fixed() ? step.reduced[0].name() : "";
          std::vector<int64_t> reduced_values =
              reduced_symbol.empty() ? std::vector<int64_t>{1} : reduced_sweep(rule);
          for (int64_t R : reduced_values) {
            for (int64_t rows : rows_sweep) {
              // Every symbol but the reduced one takes `rows` (a step's rows may be a product
              // of several: then they are rows^n).
              SymbolValues sizes;
              std::vector<int64_t> values;
              for (const std::string& s : symbols) {
                sizes[s] = s == reduced_symbol ? R : rows;
                values.push_back(sizes[s]);
              }
              // A space of more than INT64_MAX elements (a 4-D step at rows = 65537) is no
              // launch: check_arguments refuses it before any variant is chosen.
              int64_t elements = 1;
              bool overflows = false;
              for (const Dim& d : step.space) {
                const int64_t e = d.is_fixed() ? d.value() : sizes.at(d.name());
                overflows = overflows || __builtin_mul_overflow(elements, e, &elements);
              }
              if (overflows) continue;
              const int runtime = launch::heuristic_for(info, enc, si, rule, values, device);
              const ExplainedStep said = explain_step(*plan, si, sizes, device);
              if (said.variant != runtime) {
                FAIL(
                    fmt::format("{} step {} at rows={} R={} on {} SMs: explain says variant {}, "
                                "the runtime runs {}",
                                k.name, si, rows, R, device.sm_count, said.variant, runtime));
              }
              chosen.insert({fmt::format("{}/{}", k.name, si), runtime});
              ++compared;
            }
          }
        }
      }
    }
  }
  INFO(compared << " comparisons");
  CHECK(compared > 10000);
  // The sweep crosses tiers and the split: softmax's step runs at least 8 variants over it.
  int softmax_variants = 0;
  for (const auto& [step, v] : chosen) softmax_variants += step == "softmax/0";
  CHECK(softmax_variants >= 8);
}

TEST_CASE("explain's text says what runs, and how, at given sizes", "[plan][explain]") {
  Program p = parse_program(read_example("softmax"));
  const KernelDef& k = p.kernels[0];
  std::unique_ptr<KernelPlan> plan = plan_kernel(k);
  const launch::DeviceFacts h200{132, true};
  struct Case {
    int64_t M, N;
    const char* how;
  };
  for (const Case& c :
       {Case{4096, 1024, "the row on chip"}, Case{4096, 16384, "the row on chip"},
        Case{4096, 16385, "loops over the row"}, Case{4, 1 << 20, "split: 4 tile(s)"},
        Case{4096, 1001, "shifted rows: N is not a multiple of 8"},
        Case{4096, 1000, "the row on chip, 3 pass(es) over it, 2048 block(s)\n"},
        Case{4096, 9, "scalar loads: N is not a multiple of 8"},
        Case{4096, 20001,
             "loops over the row in chunks of 16384, 3 pass(es), 4096 block(s) "
             "(shifted rows"}}) {
    INFO(c.M << " x " << c.N);
    const SymbolValues sizes{{"M", c.M}, {"N", c.N}};
    const std::string text = explain_kernel(k, sizes, h200);
    INFO(text);
    const ExplainedStep e = explain_step(*plan, 0, sizes, h200);
    CHECK_THAT(text, Catch::Contains(fmt::format("runs: variant {} (", e.variant)));
    CHECK_THAT(text, Catch::Contains(c.how));
  }
  // Without sizes, the rule alone: tiers up to 16384 held, longer rows loop.
  const std::string rule = explain_kernel(k, {}, h200);
  CHECK_THAT(rule, Catch::Contains("N <= 16384 held, longer loops"));
  CHECK_THAT(rule, !Catch::Contains("runs:"));
}

TEST_CASE("explain says a row whose trailing runs are not whole vectors loops in scalars",
          "[plan][explain]") {
  // Batchnorm's sums over n, h, w of x[n, c, h, w]: the row's vectors stay inside each run of
  // H x W elements (reduction::vector_runs), so a run of 49 takes the looped scalar path, in
  // chunks of the group's threads x kSteppedItems, even where the row fits on chip (rows of
  // 3136 and 5184 on the spread tiers of 256 and 512 threads).
  Program p = parse_program(read_example("spatial_mean"));
  const KernelDef* k = nullptr;
  for (const KernelDef& d : p.kernels) k = d.name == "channel_sums" ? &d : k;
  REQUIRE(k != nullptr);
  const launch::DeviceFacts h200{132, true};
  auto how = [&](int64_t H, int64_t W) {
    return explain_kernel(*k, {{"N", 64}, {"C", 512}, {"H", H}, {"W", W}}, h200);
  };
  CHECK_THAT(how(7, 7), Catch::Contains("loops over the row in chunks of 2048, 1 pass(es), 512 "
                                        "block(s) (scalar loads: each row's runs of H*W elements "
                                        "are not a multiple of 4)"));
  CHECK_THAT(how(9, 9), Catch::Contains("loops over the row in chunks of 4096"));
  CHECK_THAT(how(8, 8), Catch::Contains("the row on chip, 1 pass(es) over it, 512 block(s)\n"));
}

TEST_CASE("looped single-pass rows run 128 threads per row from 8 rows per SM", "[plan][explain]") {
  Program p = parse_program(read_example("logsumexp"));
  const KernelDef& k = p.kernels[0];
  std::unique_ptr<KernelPlan> plan = plan_kernel(k);
  const launch::DeviceFacts h200{132, true};
  auto group_at = [&](int64_t M, int64_t N) {
    const ExplainedStep e = explain_step(*plan, 0, {{"M", M}, {"N", N}}, h200);
    const auto& c = std::get<ReductionConfig>(plan->steps[0].variants[e.variant].config);
    CHECK(c.fuse);
    return c.group;
  };
  CHECK(group_at(132 * 8, 32768) == 128);
  CHECK(group_at(4096, 1 << 20) == 128);
  CHECK(group_at(132 * 8 - 1, 32768) == 512);
  CHECK(group_at(500, 65536) == 512);
  // Held rows keep their unfused tiers whatever the rows.
  const ExplainedStep held = explain_step(*plan, 0, {{"M", 65536}, {"N", 16384}}, h200);
  CHECK_FALSE(std::get<ReductionConfig>(plan->steps[0].variants[held.variant].config).fuse);
  const std::string rule = explain_kernel(k, {}, h200);
  CHECK_THAT(rule, Catch::Contains("N > 16384 and rows >= 8 x the GPU's SMs"));
}
