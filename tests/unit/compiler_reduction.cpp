// The reduction code generator as the manifest sees it: steps, kinds, configuration spaces,
// heuristic tiers and vector layouts (tests/golden/codegen checks the PTX; tests/gpu runs it).
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "bundle/manifest.h"
#include "bundle/rule.h"
#include "compiler/compile.h"
#include "compiler/config.h"
#include "compiler/kernel_plan.h"
#include "compiler/lower_reduction.h"
#include "compiler/reduction_analysis.h"
#include "compiler/schedule.h"
#include "compiler/target.h"
#include "compiler/toolkit.h"
#include "ir/text.h"
#include "tests/unit/test_support.h"

namespace kiln {
namespace {

bundle::Manifest compile_text(const std::string& text) {
  CompileOptions o;
  o.archs = {"sm_90"};
  o.assemble = false;
  return compile_program(parse_program(text), o).manifest;
}

// The row passes of a kernel that schedules as one row reduction.
RowPasses passes_of(const KernelDef& k) {
  Schedule s = schedule_kernel(k);
  REQUIRE(s.kernels.size() == 1);
  return row_passes(k, s.kernels[0]);
}

RowPasses passes_of(const std::string& text) {
  Program p = parse_program(text);
  REQUIRE(p.kernels.size() == 1);
  return passes_of(p.kernels[0]);
}

// Kernel `name` of examples/<file>.kiln.
KernelDef example(const std::string& file, const std::string& name) {
  std::ifstream f(std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "examples" /
                  (file + ".kiln"));
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  for (const KernelDef& k : parse_program(ss.str()).kernels) {
    if (k.name == name) return k;
  }
  FAIL("no kernel " << name << " in " << file);
  return {};
}

int param_index(const bundle::KernelInfo& k, const std::string& name) {
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (k.params[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

TEST_CASE("a softmax is one row reduction step with heuristic tiers", "[compiler][reduction]") {
  bundle::Manifest m = compile_text(R"(kernel softmax(x: bf16[M, N]) -> (y: bf16[M, N]) {
  mx[i] = max(x[i, j], j)
  e[i, j] = exp(x[i, j] - mx[i])
  s[i] = sum(e[i, j], j)
  y[i, j] = e[i, j] / s[i]
})");
  REQUIRE(m.kernels.size() == 1);
  REQUIRE(m.kernels[0].steps.size() == 1);
  const bundle::Step& st = m.kernels[0].steps[0];
  CHECK(st.kind == bundle::StepKind::row_reduction);
  CHECK(st.space == std::vector<Dim>{Dim::symbol("M")});
  CHECK(st.reduced == std::vector<Dim>{Dim::symbol("N")});
  std::set<int64_t> limits;
  int tiers = 0, defaults = 0, scalar = 0;
  for (const bundle::Variant& v : st.variants) {
    defaults += v.is_default;
    CHECK(v.elements_per_block == v.config.at("block") / v.config.at("group"));
    if (v.max_reduced > 0) {
      ++tiers;
      limits.insert(v.max_reduced);
      CHECK(v.max_reduced == v.config.at("group") * v.config.at("vec") * v.config.at("items"));
    }
    if (v.config.at("vec") == 1) {
      ++scalar;
      CHECK(v.align_bytes == 1);
    } else {
      // 8 bf16 per vector: x is read and y written 16 bytes at a time.
      CHECK(v.config.at("vec") == 8);
      CHECK(v.align_bytes == 16);
      CHECK(v.aligned_params == std::vector<int>{0, 1});
    }
  }
  CHECK(defaults == 1);
  CHECK(scalar >= 1);
  CHECK(tiers == static_cast<int>(limits.size()));  // one tier per row length
  CHECK(*limits.begin() == 128);                    // 8 threads x 16 elements
  CHECK(*limits.rbegin() == 16384);                 // 512 threads x 32 elements
}

TEST_CASE("column sums are an outer reduction over the columns", "[compiler][reduction]") {
  bundle::Manifest m = compile_text(R"(kernel colsum(x: f32[M, N]) -> (s: f32[N]) {
  s[j] = sum(x[i, j], i)
})");
  const bundle::Step& st = m.kernels[0].steps[0];
  CHECK(st.kind == bundle::StepKind::outer_reduction);
  CHECK(st.space == std::vector<Dim>{Dim::symbol("N")});
  CHECK(st.reduced == std::vector<Dim>{Dim::symbol("M")});
  // Only the variants the rule runs for short columns carry a limit (bundle/rule.h): two
  // unsplit ones up to kShortOuterMaxReduced, the short split up to kShortSplitMaxReduced.
  int short_unsplit = 0, short_split = 0;
  for (const bundle::Variant& v : st.variants) {
    INFO(v.entry);
    const int64_t x = v.config.at("block") / v.config.at("group");
    CHECK(v.elements_per_block == x * v.config.at("vec"));  // columns per block
    const bool split = v.split.phases > 0;
    bool is_short = false;
    for (const ReductionConfig& c : short_outer_configs(4)) is_short |= v.config == c.as_map();
    CHECK(is_short == (!split && v.max_reduced > 0));
    if (is_short) CHECK(v.max_reduced == bundle::kShortOuterMaxReduced);
    const bool is_short_split = v.config == short_outer_split_config(4).as_map();
    CHECK(is_short_split == (split && v.max_reduced > 0));
    if (is_short_split) CHECK(v.max_reduced == bundle::kShortSplitMaxReduced);
    short_unsplit += is_short;
    short_split += is_short_split;
  }
  CHECK(short_unsplit == 2);
  CHECK(short_split == 1);
}

TEST_CASE("a reduction and an unrelated pointwise output are two steps of one kernel",
          "[compiler][reduction]") {
  bundle::Manifest m = compile_text(R"(kernel k(x: f32[M, N], b: f32[K]) -> (s: f32[M], z: f32[K]) {
  s[i] = sum(x[i, j], j)
  z[k] = b[k] * 2.0
})");
  const bundle::KernelInfo& k = m.kernels[0];
  REQUIRE(k.steps.size() == 2);
  CHECK(k.steps[0].kind == bundle::StepKind::row_reduction);
  CHECK(k.steps[1].kind == bundle::StepKind::pointwise);
  CHECK(k.steps[1].space == std::vector<Dim>{Dim::symbol("K")});
  // Every step takes the whole kernel's parameters: the pointwise step's vector store is
  // z's index among them, not among its own.
  for (const bundle::Variant& v : k.steps[1].variants) {
    if (v.align_bytes > 1) {
      CHECK(v.aligned_params == std::vector<int>{param_index(k, "b"), param_index(k, "z")});
    }
  }
}

TEST_CASE("row reduction tiers cover row lengths without gaps", "[compiler][reduction]") {
  for (int max_vec : {4, 8}) {
    for (bool spread : {false, true}) {
      std::vector<ReductionConfig> space = row_reduction_space(max_vec);
      std::vector<int64_t> limits;
      for (const ReductionConfig& c : space) {
        CHECK(c.block % c.group == 0);
        CHECK(c.block <= 1024);
        const int64_t l = row_heuristic_limit(c, max_vec, LoopedFusion::none, spread);
        if (l == 0) continue;
        limits.push_back(l);
        // Rows of 2048 .. 8192: 64 .. 256 threads with 32 elements each, or spread over twice
        // the threads with 16; the others the same either way.
        const int64_t elements = int64_t{c.vec} * c.items;
        if (l >= 2048 && l <= 8192) {
          CHECK(elements == (spread ? 16 : 32));
        } else {
          CHECK(l == row_heuristic_limit(c, max_vec));
        }
        CHECK(row_shift_twin(c, max_vec, LoopedFusion::none, spread).has_value());
      }
      std::sort(limits.begin(), limits.end());
      REQUIRE(limits.size() == 8);
      CHECK(limits.front() == 128);
      for (size_t i = 1; i < limits.size(); ++i) CHECK(limits[i] == 2 * limits[i - 1]);
    }
    const std::vector<ReductionConfig> space = row_reduction_space(max_vec);
    CHECK(std::count(space.begin(), space.end(), default_row_config(max_vec)) == 1);
  }
}

TEST_CASE("rows that one pass reads and nothing stores per element, of f32, spread their tiers",
          "[compiler][reduction]") {
  auto tiers_of = [](const char* spec) {
    std::unique_ptr<KernelPlan> plan = plan_kernel(parse_program(spec).kernels[0]);
    REQUIRE(plan->steps.size() == 1);
    const StepPlan& step = plan->steps[0];
    std::map<int64_t, int> groups;  // tier limit -> threads a row
    for (const PlannedVariant& v : step.variants) {
      if (v.max_reduced > 0 && v.max_reduced <= 16384) {
        groups[v.max_reduced] = std::get<ReductionConfig>(v.config).group;
      }
    }
    return std::pair{step.spread_tiers(), groups};
  };
  const std::map<int64_t, int> packed{{128, 8},   {256, 16},   {512, 32},   {1024, 64},
                                      {2048, 64}, {4096, 128}, {8192, 256}, {16384, 512}};
  const std::map<int64_t, int> spread{{128, 8},    {256, 16},   {512, 32},   {1024, 64},
                                      {2048, 128}, {4096, 256}, {8192, 512}, {16384, 512}};
  // One pass, row-level stores only: sums, a dot product of two rows, two sums at once.
  for (const char* spec :
       {"kernel k(x: f32[M, N]) -> (s: f32[M]) { s[i] = sum(x[i, j], j) }",
        "kernel k(x: f32[M, N], y: f32[M, N]) -> (s: f32[M]) { s[i] = sum(x[i, j] * y[i, j], j) "
        "}",
        "kernel k(x: i32[M, N]) -> (s: i32[M], t: i32[M]) {\n s[i] = max(x[i, j], j)\n"
        " t[i] = sum(x[i, j], j)\n}"}) {
    INFO(spec);
    CHECK(tiers_of(spec) == std::pair{true, spread});
  }
  // Two passes, an element store, 2-byte elements: packed.
  for (const char* spec :
       {"kernel k(x: f32[M, N]) -> (m: f32[M], v: f32[M]) {\n m[i] = mean(x[i, j], j)\n"
        " v[i] = mean((x[i, j] - m[i]) * (x[i, j] - m[i]), j)\n}",
        "kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n s[i] = sum(x[i, j], j)\n"
        " y[i, j] = x[i, j] / s[i]\n}",
        "kernel k(x: bf16[M, N]) -> (s: f32[M]) { s[i] = sum(x[i, j], j) }"}) {
    INFO(spec);
    CHECK(tiers_of(spec) == std::pair{false, packed});
  }
}

TEST_CASE("fused copies follow the unfused row variants, one is the tier of longer rows",
          "[compiler][reduction]") {
  for (int max_vec : {4, 8}) {
    const std::vector<ReductionConfig> plain = row_reduction_space(max_vec);
    const std::vector<ReductionConfig> space = row_reduction_space(max_vec, true);
    REQUIRE(space.size() > plain.size());
    CHECK(std::equal(plain.begin(), plain.end(), space.begin()));  // ids kept
    size_t fused = 0;
    for (size_t i = plain.size(); i < space.size(); ++i) {
      ReductionConfig c = space[i];
      CHECK(c.fuse);
      CHECK(!c.split);
      CHECK(c.as_map().at("fuse") == 1);
      c.fuse = false;
      CHECK(std::count(plain.begin(), plain.end(), c) == 1);
      ++fused;
    }
    CHECK(fused ==
          static_cast<size_t>(std::count_if(plain.begin(), plain.end(),
                                            [](const ReductionConfig& c) { return !c.split; })));
    for (LoopedFusion looped : {LoopedFusion::none, LoopedFusion::largest, LoopedFusion::many}) {
      std::vector<int64_t> limits;
      for (const ReductionConfig& c : space) {
        const int64_t l = row_heuristic_limit(c, max_vec, looped);
        if (!c.fuse) CHECK(l == row_heuristic_limit(c, max_vec));  // the unfused tiers stay
        // Looped rows: the fused 512-thread tier, and with `many` the fused 128-thread one
        // that replaces it from kManyRowsPerSm rows per SM.
        const int64_t many = row_many_rows_per_sm(c, max_vec, looped);
        if (l > 0 && many == 0) limits.push_back(l);
        if (c.fuse && l > 0) {
          CHECK(looped != LoopedFusion::none);
          CHECK((c.group == 512 || (c.group == 128 && looped == LoopedFusion::many)));
          CHECK(many == (c.group == 128 ? kManyRowsPerSm : 0));
          CHECK(l == std::numeric_limits<int64_t>::max());
        } else {
          CHECK(many == 0);
        }
      }
      std::sort(limits.begin(), limits.end());
      CHECK(std::adjacent_find(limits.begin(), limits.end()) == limits.end());
      CHECK((limits.back() == std::numeric_limits<int64_t>::max()) ==
            (looped != LoopedFusion::none));
    }
  }
}

TEST_CASE("fused variants only for kernels whose looped rows fuse", "[compiler][reduction]") {
  struct Case {
    const char *file, *kernel;
    bool fusable, single_pass;
  };
  for (const Case& c :
       {Case{"mean_var", "mean_var", true, true}, Case{"logsumexp", "logsumexp", true, true},
        Case{"softmax", "softmax", true, false}, Case{"layernorm", "layernorm", true, false},
        Case{"rmsnorm", "rmsnorm", false, false}, Case{"rowsum", "rowsum", false, false}}) {
    INFO(c.kernel);
    CompileOptions o;
    o.archs = {"sm_90"};
    o.assemble = false;
    Program p;
    p.kernels.push_back(example(c.file, c.kernel));
    CompiledBundle b = compile_program(p, o);
    REQUIRE(b.manifest.kernels[0].steps.size() == 1);
    const bundle::Step& st = b.manifest.kernels[0].steps[0];
    const int max_vec = static_cast<int>(st.variants[0].config.at("vec"));
    const size_t plain = row_reduction_space(max_vec).size();
    std::vector<const bundle::Variant*> fused, longer;
    size_t staged = 0;  // appended after the others (every kernel here but rowsum stages)
    size_t shifted = 0, tiers = 0;
    std::set<int> few;  // the variants that replace tiers on few rows, which have twins too
    for (const auto& [limit, variant] : st.few_rows) few.insert(variant);
    for (size_t vi = 0; vi < st.variants.size(); ++vi) {
      const bundle::Variant& v = st.variants[vi];
      staged += v.stage.bytes_per_element > 0;
      // Every tier has a shifting twin: its config and shift=1, not a tier itself.
      shifted += v.config.count("shift");
      tiers += v.max_reduced > 0 || few.count(static_cast<int>(vi));
      CHECK((v.max_reduced > 0 || few.count(static_cast<int>(vi))) == (v.odd_rows >= 0));
      if (v.odd_rows >= 0) {
        std::map<std::string, int64_t> want = v.config;
        want["shift"] = 1;
        CHECK(st.variants[static_cast<size_t>(v.odd_rows)].config == want);
        CHECK(st.variants[static_cast<size_t>(v.odd_rows)].max_reduced == 0);
        CHECK(st.variants[static_cast<size_t>(v.odd_rows)].odd_rows == -1);
      }
      if (v.config.count("shift")) continue;
      if (v.config.count("fuse")) fused.push_back(&v);
      if (v.max_reduced == std::numeric_limits<int64_t>::max()) longer.push_back(&v);
      if (v.config.count("fuse") && v.max_reduced > 0)
        CHECK(v.max_reduced == std::numeric_limits<int64_t>::max());
    }
    CHECK(shifted == tiers);
    CHECK(st.variants.size() - staged - shifted ==
          (c.fusable ? row_reduction_space(max_vec, true).size() : plain));
    CHECK(fused.size() == st.variants.size() - staged - shifted - plain);
    CHECK(staged == (std::string(c.kernel) == "rowsum" ? 0u : 3u));
    CHECK(longer.size() == (c.single_pass ? 2u : 0u));
    for (const bundle::Variant* v : longer) {
      CHECK(v->config.at("fuse") == 1);
      const bool many = v->config.at("group") == 128;
      CHECK((many || v->config.at("group") == 512));
      CHECK(v->min_rows_per_sm == (many ? kManyRowsPerSm : 0));
    }
    if (!c.fusable) continue;
    // The default's fused copy lowers to other code (the looped rows): the knob is not ignored.
    auto twin = std::find_if(st.variants.begin(), st.variants.end(), [&](const bundle::Variant& v) {
      std::map<std::string, int64_t> m = v.config;
      return m.erase("fuse") == 1 &&
             m == std::find_if(st.variants.begin(), st.variants.end(), [](const auto& d) {
                    return d.is_default;
                  })->config;
    });
    REQUIRE(twin != st.variants.end());
    CHECK(!twin->is_default);
    const bundle::Variant& def = *std::find_if(st.variants.begin(), st.variants.end(),
                                               [](const auto& d) { return d.is_default; });
    std::string a = b.files.at(def.images[0].ptx), t = b.files.at(twin->images[0].ptx);
    for (size_t at; (at = t.find(twin->entry)) != std::string::npos;) {
      t.replace(at, twin->entry.size(), def.entry);
    }
    CHECK(a != t);
  }
}

TEST_CASE("few rows: norms replace their tiers of 64+ threads a row with wider blocks",
          "[compiler][reduction]") {
  // f32 (vec 4): rows of 1024 on 256 threads (2 vectors each at most), 2048 to 8192 on 512
  // threads (4 at most); bf16 (vec 8): 1024 on 128, 2048 on 256 (one vector), 4096 and 8192 on
  // 512. The largest tier (512 threads) and the tiers of fewer than 64 threads stay.
  auto few = [](int64_t limit, int max_vec) -> std::optional<ReductionConfig> {
    for (const ReductionConfig& c : row_reduction_space(max_vec)) {
      if (row_heuristic_limit(c, max_vec) == limit) return row_few_rows_config(c, max_vec);
    }
    FAIL("no tier of limit " << limit);
    return std::nullopt;
  };
  struct Want {
    int64_t limit;
    int max_vec, group, items;
  };
  for (const Want& w : {Want{1024, 4, 256, 2}, Want{2048, 4, 512, 4}, Want{4096, 4, 512, 4},
                        Want{8192, 4, 512, 4}, Want{1024, 8, 128, 2}, Want{2048, 8, 256, 1},
                        Want{4096, 8, 512, 2}, Want{8192, 8, 512, 2}}) {
    INFO(w.limit << " vec " << w.max_vec);
    const std::optional<ReductionConfig> c = few(w.limit, w.max_vec);
    REQUIRE(c);
    CHECK(c->group == w.group);
    CHECK(c->block == w.group);
    CHECK(c->items == w.items);
    CHECK(c->vec == w.max_vec);
    CHECK(c->capacity() >= w.limit);
    CHECK((!c->split && !c->fuse && !c->stage && !c->shift && !c->strided));
  }
  for (int max_vec : {4, 8}) {
    for (int64_t limit : {128, 256, 512, 16384}) CHECK_FALSE(few(limit, max_vec));
  }
  // Fused tiers (rows that loop) have none.
  for (ReductionConfig c : row_reduction_space(4, true)) {
    if (c.fuse) CHECK_FALSE(row_few_rows_config(c, 4));
  }

  // The plan gives them to kernels whose stores read a weight, with shifting twins; the rule
  // runs them on rows at most the SMs.
  CompileOptions o;
  o.archs = {"sm_90"};
  o.assemble = false;
  const bundle::DeviceFacts h200{132, true};
  for (const char* file : {"layernorm", "rmsnorm", "softmax", "rowsum"}) {
    INFO(file);
    Program p;
    p.kernels.push_back(example(file, file));
    CompiledBundle b = compile_program(p, o);
    const bundle::Step& st = b.manifest.kernels[0].steps[0];
    const bool weighted = std::string(file) == "layernorm" || std::string(file) == "rmsnorm";
    CHECK(st.few_rows.size() == (weighted ? 4u : 0u));
    const bundle::StepRule rule =
        bundle::step_rule(st, std::vector<bool>(st.variants.size(), true), h200);
    const int vec = static_cast<int>(st.variants[0].config.at("vec"));
    for (int64_t n : {1000, 1001, 1024, 3000, 4095, 4096, 8192, 8193}) {
      INFO(n);
      const int many = bundle::heuristic_variant(st, rule, 4096, n, h200);
      const int one = bundle::heuristic_variant(st, rule, 1, n, h200);
      // Up to the SMs, or half of them for rows of up to 1024 (bundle::kFewRowsShortLimit).
      const int64_t most = n <= 1024 ? 66 : 132;
      CHECK(bundle::heuristic_variant(st, rule, most, n, h200) == one);
      CHECK(bundle::heuristic_variant(st, rule, most + 1, n, h200) == many);
      const bundle::Variant& v = st.variants[static_cast<size_t>(one)];
      if (!weighted || n > 8192) {
        CHECK(one == many);
        continue;
      }
      CHECK(one != many);
      CHECK(v.block_threads == v.config.at("group"));
      CHECK(v.block_threads > st.variants[static_cast<size_t>(many)].config.at("group"));
      CHECK(v.config.count("shift") == (n % vec != 0 ? 1u : 0u));
      CHECK(v.config.at("group") * vec * v.config.at("items") >= n);
    }
  }
}

TEST_CASE("split variants: one launch per reduction pass and one to finish",
          "[compiler][reduction]") {
  // phases, words per (row, block) record, for each kind of row kernel; the passes are
  // those of the looped path (compiler/lower_reduction.cpp).
  struct Case {
    const char* spec;
    int phases, slots;
    bool lead_last;  // the last phase only stores: one block per row
  } cases[] = {
      {"kernel k(x: f32[M, N]) -> (s: f32[M]) { s[i] = sum(x[i, j], j) }", 2, 1, true},
      {R"(kernel k(x: bf16[M, N]) -> (y: bf16[M, N]) {
  mx[i] = max(x[i, j], j)
  e[i, j] = exp(x[i, j] - mx[i])
  s[i] = sum(e[i, j], j)
  y[i, j] = e[i, j] / s[i]
})",
       3, 2, false},
      {R"(kernel k(x: bf16[M, N]) -> (y: f32[M]) {
  mx[i] = max(x[i, j], j)
  y[i] = mx[i] + log(sum(exp(x[i, j] - mx[i]), j))
})",
       3, 2, true},
      // mean is stored when its sum is complete (phase 1), var in phase 2.
      {R"(kernel k(x: bf16[M, N]) -> (mean: f32[M], var: f32[M]) {
  mean[i] = sum(x[i, j], j) / N
  var[i] = sum((x[i, j] - mean[i]) * (x[i, j] - mean[i]), j) / N
})",
       3, 2, true},
      // h is stored in the same phase as the sum of squares is taken.
      {R"(kernel k(x: f32[M, N], r: f32[M, N], w: f32[N]) -> (h: f32[M, N], y: f32[M, N]) {
  h[i, j] = x[i, j] + r[i, j]
  ms[i] = sum(h[i, k] * h[i, k], k) / N
  y[i, j] = h[i, j] * rsqrt(ms[i] + 1e-6) * w[j]
})",
       2, 1, false},
  };
  for (const Case& c : cases) {
    INFO(c.spec);
    bundle::Manifest m = compile_text(c.spec);
    REQUIRE(m.kernels[0].steps.size() == 1);
    const bundle::Step& st = m.kernels[0].steps[0];
    int split = 0;
    for (const bundle::Variant& v : st.variants) {
      if (v.split.phases == 0) {
        CHECK(v.config.count("split") == 0);
        continue;
      }
      ++split;
      CHECK(v.config.at("split") == 1);
      CHECK(v.config.at("group") == v.config.at("block"));
      CHECK(v.elements_per_block == 1);
      CHECK(v.max_reduced == 0);  // never a tier: the runtime picks it for few, long rows
      CHECK(v.split.phases == c.phases);
      CHECK(v.split.slots == c.slots);
      CHECK(v.split.lead_last == c.lead_last);
      CHECK(v.split.chunk == v.config.at("block") * v.config.at("vec") * v.config.at("items"));
    }
    CHECK(split == 3);
  }
  // Outer reductions split the reduced extent of a block's columns: the ten variants before
  // the last two (the prefetching ones), a record word per column of the block, chunks of
  // group x items of the reduced index.
  bundle::Manifest cols =
      compile_text("kernel c(x: f32[M, N]) -> (s: f32[N]) { s[j] = sum(x[i, j], i) }");
  const std::vector<bundle::Variant>& vs = cols.kernels[0].steps[0].variants;
  constexpr size_t kSplits = 10;
  constexpr size_t kFitted = 2;  // the last two: the deep split's blocks, 4 and 2 across
  constexpr size_t kPrefetching = 2;
  REQUIRE(vs.size() > kSplits + kPrefetching);
  const size_t n = vs.size() - kPrefetching;  // the splits end here
  for (size_t i = n; i < vs.size(); ++i) {
    CHECK(vs[i].config == prefetching_outer_configs()[i - n].as_map());
    CHECK(vs[i].split.phases == 0);
    CHECK(vs[i].align_bytes == 1);
  }
  for (size_t i = 0; i < n; ++i) {
    const bundle::Variant& v = vs[i];
    INFO(v.entry);
    CHECK((v.split.phases > 0) == (i + kSplits >= n));
    if (v.split.phases == 0) continue;
    CHECK(!v.is_default);
    CHECK(v.split.phases == 2);
    CHECK(v.split.slots == 1);
    CHECK_FALSE(v.split.lead_last);  // outer splits launch every phase on the full grid
    CHECK(v.elements_per_block == v.config.at("block") / v.config.at("group") * v.config.at("vec"));
    CHECK(v.split.chunk == v.config.at("group") * v.config.at("items"));
    // The fitted ones run from the deep split's reduced extent on, the others at any.
    CHECK(v.split.min_reduced == (i + kFitted >= n ? bundle::kDeepSplitMinReduced : 0));
  }
  // The first two are the rule's: 16-byte loads over 128 columns (f32), then over 32 for
  // fewer columns than that.
  const bundle::Variant& wide = vs[n - kSplits];
  const bundle::Variant& narrow = vs[n - kSplits + 1];
  CHECK(wide.config == default_outer_split_config(4).as_map());
  CHECK(narrow.config == narrow_outer_split_config(4).as_map());
  CHECK(wide.elements_per_block == 128);
  CHECK(narrow.elements_per_block == 32);
  const bundle::Step& step = cols.kernels[0].steps[0];
  const bundle::DeviceFacts h200{132, true};
  const bundle::StepRule rule = bundle::step_rule(step, std::vector<bool>(vs.size(), true), h200);
  CHECK(rule.split == static_cast<int>(n - kSplits));
  CHECK(rule.narrow_split == rule.split + 1);
  // The deep split (after the others: earlier ids stay) is the narrow one with 16 steps in
  // flight; after it, the same blocks with 4 and 2 threads along the rows (16 and 8 f32
  // columns), fewest columns first in fitted_splits.
  const size_t deep_id = n - kFitted - 1;
  const bundle::Variant& deep = vs[deep_id];
  CHECK(rule.deep_split == static_cast<int>(deep_id));
  CHECK(deep.config == deep_outer_split_config(4).as_map());
  CHECK(deep.elements_per_block == narrow.elements_per_block);
  CHECK(deep.split.chunk == 2 * narrow.split.chunk);
  REQUIRE(rule.fitted_splits.size() == kFitted);
  const bundle::Variant& f8 = vs[static_cast<size_t>(rule.fitted_splits[0])];
  const bundle::Variant& f16 = vs[static_cast<size_t>(rule.fitted_splits[1])];
  CHECK(rule.fitted_splits[0] == static_cast<int>(n - 1));
  CHECK(rule.fitted_splits[1] == static_cast<int>(n - 2));
  CHECK(f8.config == fitted_outer_split_configs(4)[1].as_map());
  CHECK(f16.config == fitted_outer_split_configs(4)[0].as_map());
  CHECK(f8.elements_per_block == 8);
  CHECK(f16.elements_per_block == 16);
  CHECK(f8.config.at("items") == deep.config.at("items"));
  CHECK(f8.config.at("block") == deep.config.at("block"));
  // Where the deep split runs, the narrowest tile of twice the columns or more: 8 columns of
  // 16 (f32), 4 of 8; 9 to 16 the deep split's 32; shorter columns as before.
  CHECK(bundle::heuristic_variant(step, rule, 8, 1 << 20, h200) == rule.fitted_splits[1]);
  CHECK(bundle::heuristic_variant(step, rule, 4, 1 << 20, h200) == rule.fitted_splits[0]);
  CHECK(bundle::heuristic_variant(step, rule, 4, 65536, h200) == rule.fitted_splits[0]);
  CHECK(bundle::heuristic_variant(step, rule, 1, 65536, h200) == rule.narrow_scalar_split);
  CHECK(bundle::heuristic_variant(step, rule, 12, 1 << 20, h200) == rule.deep_split);
  CHECK(bundle::heuristic_variant(step, rule, 16, 1 << 20, h200) == rule.deep_split);
  CHECK(bundle::heuristic_variant(step, rule, 8, 65535, h200) == rule.narrow_split);
  CHECK(bundle::heuristic_variant(step, rule, 4, 24576, h200) == rule.short_split);
  // 64 columns run the short split up to 24576 rows, the narrow split up to 65535, the deep
  // one from 65536; 2048 columns the wide one, 32768 the unsplit default.
  REQUIRE(rule.short_split >= 0);
  CHECK(vs[static_cast<size_t>(rule.short_split)].config == short_outer_split_config(4).as_map());
  CHECK(vs[static_cast<size_t>(rule.short_split)].split.chunk == 32);
  CHECK(bundle::heuristic_variant(step, rule, 64, 1 << 20, h200) == rule.deep_split);
  CHECK(bundle::heuristic_variant(step, rule, 64, 65536, h200) == rule.deep_split);
  CHECK(bundle::heuristic_variant(step, rule, 64, 65535, h200) == rule.narrow_split);
  CHECK(bundle::heuristic_variant(step, rule, 64, 24577, h200) == rule.narrow_split);
  CHECK(bundle::heuristic_variant(step, rule, 64, 24576, h200) == rule.short_split);
  CHECK(bundle::heuristic_variant(step, rule, 64, 1024, h200) == rule.short_split);
  // Short columns (128 to 1023 rows): 32 threads along them over 32 columns while those tiles
  // are fewer than the SMs, then 16 over 64 (f32: 2 x 32), then the rule as before.
  REQUIRE(rule.short_outer.size() == 2);
  const bundle::Variant& s32 = vs[static_cast<size_t>(rule.short_outer[0])];
  const bundle::Variant& s16 = vs[static_cast<size_t>(rule.short_outer[1])];
  CHECK(s32.config == short_outer_configs(4)[0].as_map());
  CHECK(s16.config == short_outer_configs(4)[1].as_map());
  CHECK(s32.elements_per_block == 32);
  CHECK(s16.elements_per_block == 64);
  CHECK(bundle::heuristic_variant(step, rule, 64, 1023, h200) == rule.short_outer[0]);
  CHECK(bundle::heuristic_variant(step, rule, 64, 128, h200) == rule.short_outer[0]);
  CHECK(bundle::heuristic_variant(step, rule, 64, 127, h200) == rule.chosen);
  CHECK(bundle::heuristic_variant(step, rule, 131 * 32, 512, h200) == rule.short_outer[0]);
  CHECK(bundle::heuristic_variant(step, rule, 131 * 32 + 4, 512, h200) == rule.short_outer[1]);
  CHECK(bundle::heuristic_variant(step, rule, 131 * 64 + 4, 512, h200) == rule.split);
  CHECK(bundle::heuristic_variant(step, rule, 131 * 64 + 4, 64, h200) == rule.chosen);
  // Columns not a multiple of the pick's vector: its twin of scalar loads (the same config but
  // vec 1; a split without one, the narrow scalar split).
  REQUIRE(rule.scalar_columns.size() == vs.size());
  auto twin = [&](int v) { return rule.scalar_columns[static_cast<size_t>(v)]; };
  for (int v : {rule.chosen, rule.short_outer[1], rule.split}) {
    INFO(v);
    REQUIRE(twin(v) >= 0);
    CHECK(vs[static_cast<size_t>(twin(v))].config.at("vec") == 1);
  }
  CHECK(twin(rule.short_outer[0]) == -1);  // scalar already
  CHECK(twin(rule.split) == rule.narrow_scalar_split);
  auto but_vec = [&](int v) {
    std::map<std::string, int64_t> c = vs[static_cast<size_t>(v)].config;
    c.erase("vec");
    return c;
  };
  // The chosen one's twin: 4 steps in flight as a 16-byte vector holds 4 f32.
  CHECK(but_vec(twin(rule.chosen)) == but_vec(rule.chosen));
  CHECK(vs[static_cast<size_t>(twin(rule.chosen))].config.at("items") == 4);
  CHECK(but_vec(twin(rule.short_outer[1])) == but_vec(rule.short_outer[1]));
  CHECK(bundle::heuristic_variant(step, rule, 131 * 32 + 1, 512, h200) ==
        twin(rule.short_outer[1]));
  CHECK(bundle::heuristic_variant(step, rule, 131 * 32 + 2, 512, h200) ==
        rule.short_outer[1]);  // a multiple of its vec, 2
  // A split's columns not whole vectors: the default's twin where it has a tile for every SM
  // (8385 columns of 32: 263 tiles), else the split's.
  const int64_t twin_cols = vs[static_cast<size_t>(twin(rule.chosen))].elements_per_block;
  CHECK(bundle::heuristic_variant(step, rule, 131 * 64 + 1, 512, h200) == twin(rule.chosen));
  CHECK(bundle::heuristic_variant(step, rule, 132 * twin_cols - 1, 4096, h200) ==
        twin(rule.chosen));
  CHECK(bundle::heuristic_variant(step, rule, 131 * twin_cols - 1, 4096, h200) == twin(rule.split));
  CHECK(bundle::heuristic_variant(step, rule, 131 * 64 + 1, 64, h200) == twin(rule.chosen));
  CHECK(bundle::heuristic_variant(step, rule, 131 * 64 + 2, 64, h200) == rule.chosen);
  CHECK(bundle::heuristic_variant(step, rule, 65536, 512, h200) == rule.chosen);
  // An explicit choice of variant (Kernel::set_choice) clears the short variants with the split.
  const bundle::StepRule chosen_rule = bundle::pinned_rule(rule, rule.chosen);
  CHECK(chosen_rule.short_outer.empty());
  CHECK(chosen_rule.short_split == -1);
  CHECK(bundle::heuristic_variant(step, chosen_rule, 64, 512, h200) == rule.chosen);
  CHECK(bundle::heuristic_variant(step, chosen_rule, 64, 1 << 20, h200) == rule.chosen);
  // Without the short variants loadable, the rule runs what it ran before them.
  std::vector<bool> no_short(vs.size(), true);
  for (int v : rule.short_outer) no_short[static_cast<size_t>(v)] = false;
  no_short[static_cast<size_t>(rule.short_split)] = false;
  const bundle::StepRule plain = bundle::step_rule(step, no_short, h200);
  CHECK(plain.short_outer.empty());
  CHECK(plain.short_split == -1);
  CHECK(bundle::heuristic_variant(step, plain, 64, 1023, h200) == rule.chosen);
  CHECK(bundle::heuristic_variant(step, plain, 64, 1024, h200) == rule.narrow_split);
  CHECK(bundle::heuristic_variant(step, rule, 96, 1 << 20, h200) == rule.deep_split);
  CHECK(bundle::heuristic_variant(step, rule, 128, 1 << 20, h200) == rule.split);
  // Without the deep variant (not loadable), the narrow one runs long columns too, and the
  // fitted ones not at all.
  std::vector<bool> no_deep(vs.size(), true);
  no_deep[deep_id] = false;
  const bundle::StepRule shallow = bundle::step_rule(step, no_deep, h200);
  CHECK(shallow.deep_split == -1);
  CHECK(shallow.fitted_splits.empty());
  CHECK(shallow.narrow_split == rule.narrow_split);
  CHECK(bundle::heuristic_variant(step, shallow, 64, 1 << 20, h200) == rule.narrow_split);
  CHECK(bundle::heuristic_variant(step, shallow, 4, 1 << 20, h200) == rule.narrow_split);
  // Without the fitted ones, the deep split runs few columns as before.
  std::vector<bool> no_fitted(vs.size(), true);
  for (int f : rule.fitted_splits) no_fitted[static_cast<size_t>(f)] = false;
  const bundle::StepRule unfitted = bundle::step_rule(step, no_fitted, h200);
  CHECK(unfitted.fitted_splits.empty());
  CHECK(unfitted.deep_split == rule.deep_split);
  CHECK(bundle::heuristic_variant(step, unfitted, 4, 1 << 20, h200) == rule.deep_split);
  CHECK(bundle::heuristic_variant(step, rule, 2048, 65536, h200) == rule.split);
  CHECK(bundle::heuristic_variant(step, rule, 32768, 4096, h200) == rule.chosen);
  // An outer step splits from 2 blocks a tile (elsewhere 4), where the reduced extent holds 8
  // chunks (of 32 here). Every variant at `registers` a thread: 256 threads hold 2 blocks an SM
  // at 128, 1 at 255; 12800 columns are 100 split tiles.
  auto at_registers = [&](int registers) {
    bundle::Step s = step;
    for (bundle::Variant& v : s.variants) {
      for (bundle::ArchImage& im : v.images) im.registers = registers;
    }
    return s;
  };
  const bundle::Step two = at_registers(128), one = at_registers(255);
  const bundle::StepRule two_rule =
      bundle::step_rule(two, std::vector<bool>(vs.size(), true), h200);
  const bundle::StepRule one_rule =
      bundle::step_rule(one, std::vector<bool>(vs.size(), true), h200);
  const bundle::Variant& split_v = two.variants[static_cast<size_t>(rule.split)];
  REQUIRE(bundle::resident_blocks(split_v, h200) == 2);
  REQUIRE(split_v.split.chunk == 32);
  CHECK(bundle::heuristic_variant(two, two_rule, 12800, 65536, h200) == rule.split);
  CHECK(bundle::heuristic_variant(two, two_rule, 12800, 8 * 32, h200) == rule.split);
  CHECK(bundle::heuristic_variant(two, two_rule, 12800, 8 * 32 - 1, h200) == rule.chosen);
  CHECK(bundle::heuristic_variant(one, one_rule, 12800, 65536, h200) == rule.chosen);
  // bf16: the narrow split is the 16-byte one over 64 columns, not the scalar split variant
  // over 32 (fewer columns, 2-byte loads).
  bundle::Manifest half =
      compile_text("kernel c(x: bf16[M, N]) -> (s: f32[N]) { s[j] = sum(x[i, j], i) }");
  const bundle::Step& hs = half.kernels[0].steps[0];
  const bundle::StepRule hr =
      bundle::step_rule(hs, std::vector<bool>(hs.variants.size(), true), h200);
  REQUIRE(hr.narrow_split >= 0);
  const bundle::Variant& hn = hs.variants[static_cast<size_t>(hr.narrow_split)];
  CHECK(hn.config == narrow_outer_split_config(8).as_map());
  CHECK(hn.elements_per_block == 64);
  CHECK(hs.variants[static_cast<size_t>(hr.split)].config.at("vec") == 8);
  REQUIRE(hr.deep_split >= 0);
  CHECK(hs.variants[static_cast<size_t>(hr.deep_split)].config ==
        deep_outer_split_config(8).as_map());
  CHECK(bundle::heuristic_variant(hs, hr, 64, 1 << 20, h200) == hr.deep_split);
  // bf16's fitted tiles: 16 and 32 columns; 8 columns run the first, 16 the second, 17 and 32
  // the deep split (measured: bench/results/2026-11-30-h200-few-column-tiles).
  REQUIRE(hr.fitted_splits.size() == 2);
  CHECK(hs.variants[static_cast<size_t>(hr.fitted_splits[0])].elements_per_block == 16);
  CHECK(hs.variants[static_cast<size_t>(hr.fitted_splits[1])].elements_per_block == 32);
  CHECK(bundle::heuristic_variant(hs, hr, 8, 8388608, h200) == hr.fitted_splits[0]);
  CHECK(bundle::heuristic_variant(hs, hr, 16, 4194304, h200) == hr.fitted_splits[1]);
  CHECK(bundle::heuristic_variant(hs, hr, 24, 4194304, h200) == hr.deep_split);
  CHECK(bundle::heuristic_variant(hs, hr, 32, 2097152, h200) == hr.deep_split);
  CHECK(bundle::heuristic_variant(hs, hr, 64, 32768, h200) == hr.narrow_split);
  CHECK(bundle::heuristic_variant(hs, hr, 64, 4096, h200) == hr.short_split);
  CHECK(hs.variants[static_cast<size_t>(hr.short_split)].config.at("vec") == 4);
  // Columns that are not whole vectors run the scalar split of the fewest columns.
  REQUIRE(hr.narrow_scalar_split >= 0);
  const bundle::Variant& hsc = hs.variants[static_cast<size_t>(hr.narrow_scalar_split)];
  CHECK(hsc.config.at("vec") == 1);
  CHECK(hsc.split.phases > 0);
  CHECK(bundle::heuristic_variant(hs, hr, 7, 1000003, h200) == hr.narrow_scalar_split);
  // bf16 columns not whole vectors: the default's twin keeps 8 steps in flight (16 bytes a
  // thread), where its own 4 would be 8 bytes; a split pick runs it where it has a tile for
  // every SM (20001 columns of 32: 626 tiles).
  REQUIRE(hr.chosen >= 0);
  const int htwin = hr.scalar_columns.at(static_cast<size_t>(hr.chosen));
  REQUIRE(htwin >= 0);
  const bundle::Variant& ht = hs.variants[static_cast<size_t>(htwin)];
  CHECK(ht.config.at("vec") == 1);
  CHECK(ht.config.at("items") == 8);
  CHECK(hs.variants[static_cast<size_t>(hr.chosen)].config.at("items") == 4);
  CHECK(ht.config.at("block") == hs.variants[static_cast<size_t>(hr.chosen)].config.at("block"));
  CHECK(bundle::heuristic_variant(hs, hr, 20001, 6000, h200) == htwin);
  CHECK(bundle::heuristic_variant(hs, hr, 20000, 6000, h200) == hr.split);
  // Whole vectors: the narrow split while its tiles cover fewer columns than one wide tile
  // (3 x 64 < 256), the wide split from 4 narrow tiles on.
  CHECK(bundle::narrow_split_max_rows(256, 64) == 192);
  CHECK(bundle::narrow_split_max_rows(128, 32) == 96);
  CHECK(bundle::narrow_split_max_rows(100, 64) == 64);
  CHECK(bundle::narrow_split_max_rows(64, 64) == 0);
  CHECK(bundle::narrow_split_max_rows(256, 0) == 0);
  CHECK(bundle::heuristic_variant(hs, hr, 192, 262144, h200) == hr.deep_split);
  CHECK(bundle::heuristic_variant(hs, hr, 192, 32768, h200) == hr.narrow_split);
  CHECK(bundle::heuristic_variant(hs, hr, 200, 262144, h200) == hr.split);
  CHECK(bundle::heuristic_variant(hs, hr, 248, 262144, h200) == hr.split);
  CHECK(bundle::heuristic_variant(hs, hr, 201, 262144, h200) == hr.narrow_scalar_split);
  CHECK(bundle::heuristic_variant(step, rule, 96, 262144, h200) == rule.deep_split);
  CHECK(bundle::heuristic_variant(step, rule, 96, 32768, h200) == rule.narrow_split);
  CHECK(bundle::heuristic_variant(step, rule, 100, 262144, h200) == rule.split);
  // A manifest's config is only numbers: a vec of 0 or -1 must not divide (a hostile bundle).
  for (int64_t bad : {0, -1}) {
    bundle::Step hostile = hs;
    for (bundle::Variant& v : hostile.variants) v.config["vec"] = bad;
    const bundle::StepRule r =
        bundle::step_rule(hostile, std::vector<bool>(hostile.variants.size(), true), h200);
    for (int64_t rows : {1, 7, 64, 200})
      (void)bundle::heuristic_variant(hostile, r, rows, 1 << 20, h200);
  }
}

TEST_CASE("rows split from 256 KiB walked by the looping tier, whatever their element size",
          "[compiler][reduction]") {
  const bundle::DeviceFacts h200{132, true};
  // Bytes read at an element of the row (each input read along it once; w is read at j, not at
  // an element of the row), and the passes over it of the tier that loops (fused: fewer).
  struct Case {
    const char* spec;
    int64_t bytes;
    int passes;
    int64_t min_reduced;
  } cases[] = {
      {"kernel k(x: bf16[M, N]) -> (s: f32[M]) { s[i] = sum(x[i, j], j) }", 2, 1, 131072},
      {"kernel k(x: f16[M, N]) -> (s: f16[M]) { s[i] = max(x[i, j], j) }", 2, 1, 131072},
      {"kernel k(x: f32[M, N]) -> (s: f32[M]) { s[i] = sum(x[i, j], j) }", 4, 1, 65536},
      {"kernel k(x: bf16[M, N], y: bf16[M, N]) -> (s: f32[M]) { s[i] = sum(x[i, j] * y[i, j], j) "
       "}",
       4, 1, 65536},
      {"kernel k(x: f32[M, N], r: bf16[M, N]) -> (s: f32[M]) { s[i] = sum(x[i, j] * r[i, j], j) "
       "}",
       6, 1, 43691},
      // The max and the sum fuse into one pass (online max+sum).
      {R"(kernel k(x: bf16[M, N]) -> (y: f32[M]) {
  mx[i] = max(x[i, j], j)
  y[i] = mx[i] + log(sum(exp(x[i, j] - mx[i]), j))
})",
       2, 1, 131072},
      // Three passes, none fused: the max, the sum, the stores.
      {R"(kernel k(x: bf16[M, N], w: f32[N]) -> (y: bf16[M, N]) {
  mx[i] = max(x[i, j], j)
  e[i, j] = exp(x[i, j] - mx[i]) * w[j]
  s[i] = sum(e[i, j], j)
  y[i, j] = e[i, j] / s[i]
})",
       2, 3, 43691},
      {R"(kernel k(x: bf16[M, N], w: bf16[N]) -> (y: bf16[M, N]) {
  ms[i] = sum(x[i, k] * x[i, k], k) / N
  y[i, j] = x[i, j] * rsqrt(ms[i] + 1e-6) * w[j]
})",
       2, 2, 65536},
  };
  for (const Case& c : cases) {
    INFO(c.spec);
    const Program p = parse_program(c.spec);
    const std::unique_ptr<KernelPlan> plan = plan_kernel(p.kernels[0]);
    REQUIRE(plan->steps.size() == 1);
    CHECK(plan->steps[0].row_bytes_per_element == c.bytes);
    CHECK(plan->steps[0].looping_passes() == c.passes);
    CHECK(bundle::split_min_reduced(c.bytes * c.passes) == c.min_reduced);
    bundle::Manifest m = compile_text(c.spec);
    const bundle::Step& st = m.kernels[0].steps[0];
    for (const bundle::Variant& v : st.variants) {
      if (v.split.phases > 0) CHECK(v.split.min_reduced == c.min_reduced);
    }
    // 8 rows: the split from min_reduced on, the largest tier below it.
    const bundle::StepRule rule =
        bundle::step_rule(st, std::vector<bool>(st.variants.size(), true), h200);
    REQUIRE(rule.split >= 0);
    REQUIRE(!rule.tiers.empty());
    const int longest = rule.tiers.back().second;
    // What the split's chunks need (every split launch): 4+ blocks of 2+ chunks each.
    const int64_t chunks = int64_t{bundle::kSplitMinBlocks} * bundle::kSplitMinChunks *
                           st.variants[static_cast<size_t>(rule.split)].split.chunk;
    CHECK(chunks == 65536);
    CHECK(bundle::heuristic_variant(st, rule, 8, std::max(c.min_reduced, chunks), h200) ==
          rule.split);
    CHECK(bundle::heuristic_variant(st, rule, 8, 1 << 22, h200) == rule.split);
    if (c.min_reduced > chunks) {  // else the split's chunks are the limit, as before
      CHECK(bundle::heuristic_variant(st, rule, 8, c.min_reduced - 1, h200) ==
            bundle::odd_rows_variant(st, rule, longest, c.min_reduced - 1));
      CHECK(bundle::heuristic_variant(st, rule, 8, chunks, h200) == longest);
    }
    // A bundle written before the limit (no min_reduced) splits by chunks alone.
    bundle::Step old = st;
    for (bundle::Variant& v : old.variants) v.split.min_reduced = 0;
    CHECK(bundle::heuristic_variant(old, rule, 8, chunks, h200) == rule.split);
    // The manifest keeps it.
    Result<bundle::Manifest> back = bundle::parse_manifest(bundle::to_json(m), "m.json");
    REQUIRE(back.ok());
    CHECK(*back == m);
  }
  CHECK(bundle::split_min_reduced(0) == 0);
  CHECK(bundle::split_min_reduced(1) == 262144);
}

TEST_CASE("two-pass rows loop fused where it was measured faster: f32 softmax",
          "[compiler][reduction]") {
  auto looped_tiers = [](const std::string& dtype, bool layernorm) {
    const std::string spec = layernorm ? "kernel k(x: " + dtype + "[M, N]) -> (y: " + dtype +
                                             "[M, N]) {\n"
                                             "  mean[i] = sum(x[i, j], j) / N\n"
                                             "  d[i, j] = x[i, j] - mean[i]\n"
                                             "  var[i] = sum(d[i, j] * d[i, j], j) / N\n"
                                             "  y[i, j] = d[i, j] * rsqrt(var[i] + 1e-5)\n"
                                             "}\n"
                                       : "kernel k(x: " + dtype + "[M, N]) -> (y: " + dtype +
                                             "[M, N]) {\n"
                                             "  mx[i] = max(x[i, j], j)\n"
                                             "  e[i, j] = exp(x[i, j] - mx[i])\n"
                                             "  s[i] = sum(e[i, j], j)\n"
                                             "  y[i, j] = e[i, j] / s[i]\n"
                                             "}\n";
    std::unique_ptr<KernelPlan> plan = plan_kernel(parse_program(spec).kernels[0]);
    const StepPlan& st = plan->steps[0];
    CHECK(st.passes.looped == 2);
    std::vector<int> groups;  // the fused tiers' threads per row
    for (const PlannedVariant& v : st.variants) {
      const auto& c = std::get<ReductionConfig>(v.config);
      if (v.max_reduced == std::numeric_limits<int64_t>::max()) {
        CHECK(c.fuse);
        CHECK(v.min_rows_per_sm == 0);
        CHECK(v.odd_rows >= 0);
        groups.push_back(c.group);
      }
    }
    return groups;
  };
  CHECK(looped_tiers("f32", false) == std::vector<int>{512});
  CHECK(looped_tiers("bf16", false).empty());
  CHECK(looped_tiers("f32", true).empty());
  CHECK(looped_tiers("bf16", true).empty());
}

TEST_CASE("rows that are not whole vectors run their tier's shifting twin",
          "[compiler][reduction]") {
  const std::string spec =
      "kernel softmax(x: bf16[M, N]) -> (y: bf16[M, N]) {\n"
      "  mx[i] = max(x[i, j], j)\n"
      "  e[i, j] = exp(x[i, j] - mx[i])\n"
      "  s[i] = sum(e[i, j], j)\n"
      "  y[i, j] = e[i, j] / s[i]\n"
      "}\n";
  bundle::Manifest m = compile_text(spec);
  const bundle::Step& st = m.kernels[0].steps[0];
  const bundle::DeviceFacts h200{132, true};
  std::vector<bool> all(st.variants.size(), true);
  const bundle::StepRule rule = bundle::step_rule(st, all, h200);
  for (int64_t R :
       {1, 7, 8, 9, 15, 16, 17, 127, 129, 1000, 1001, 4095, 4096, 16383, 16384, 16385, 20001}) {
    INFO("R = " << R);
    const int v = bundle::heuristic_variant(st, rule, 4096, R, h200);
    // The tier of the next multiple of 8 (every tier's limit is one).
    const int tier = bundle::heuristic_variant(st, rule, 4096, (R + 7) / 8 * 8, h200);
    CHECK(st.variants[static_cast<size_t>(tier)].max_reduced > 0);
    CHECK(v == (R % 8 == 0 ? tier : st.variants[static_cast<size_t>(tier)].odd_rows));
  }
  // A twin that did not load leaves its tier to run odd rows (on scalars).
  const int tier = bundle::heuristic_variant(st, rule, 4096, 1000, h200);
  const int twin = st.variants[static_cast<size_t>(tier)].odd_rows;
  REQUIRE(twin >= 0);
  all[static_cast<size_t>(twin)] = false;
  CHECK(bundle::heuristic_variant(st, bundle::step_rule(st, all, h200), 4096, 1001, h200) == tier);
  // --default-only keeps the default's twin, compiled from the twin's config: its code is not
  // the default's.
  CompileOptions lean;
  lean.archs = {"sm_90"};
  lean.assemble = false;
  lean.all_variants = false;
  CompiledBundle lb = compile_program(parse_program(spec), lean);
  const bundle::Step& ls = lb.manifest.kernels[0].steps[0];
  REQUIRE(ls.variants.size() == 2);
  REQUIRE(ls.variants[0].odd_rows == 1);
  CHECK(ls.variants[1].config.at("shift") == 1);
  std::string def_ptx = lb.files.at(ls.variants[0].images[0].ptx);
  std::string twin_ptx = lb.files.at(ls.variants[1].images[0].ptx);
  for (size_t at; (at = twin_ptx.find(ls.variants[1].entry)) != std::string::npos;) {
    twin_ptx.replace(at, ls.variants[1].entry.size(), ls.variants[0].entry);
  }
  CHECK(def_ptx != twin_ptx);
  // The manifest refuses a twin that is not a shifting variant of the step.
  std::string json = bundle::to_json(m);
  REQUIRE(bundle::parse_manifest(json, "m.json").ok());
  const std::string field = fmt::format("\"odd_rows\": {}", twin);
  REQUIRE(json.find(field) != std::string::npos);
  json.replace(json.find(field), field.size(), fmt::format("\"odd_rows\": {}", tier));
  const Result<bundle::Manifest> parsed = bundle::parse_manifest(json, "m.json");
  REQUIRE_FALSE(parsed.ok());
  CHECK_THAT(parsed.message(), Catch::Contains("odd_rows: expected another variant of a row "
                                               "reduction step with config shift 1"));
}

TEST_CASE("reduced indices every input reads as one run step as one coordinate",
          "[compiler][reduction]") {
  auto stepped = [](const std::string& body, const std::string& params,
                    const std::string& outs = "s: f32[C]") {
    Program p =
        parse_program(fmt::format("kernel k({}) -> ({}) {{\n  {}\n}}\n", params, outs, body));
    REQUIRE(p.kernels.size() == 1);
    Schedule s = schedule_kernel(p.kernels[0]);
    REQUIRE(s.kernels.size() == 1);
    return stepped_axes_text(p.kernels[0], s.kernels[0]);
  };
  const std::string x = "x: f32[N, C, H, W]";
  // Batchnorm's statistics: (n, h * w), one wrap a point.
  CHECK(stepped("s[c] = sum(x[n, c, h, w], n, h, w)", x).starts_with("N, H*W (H and W as one"));
  // A weight over the run, its indices adjacent and in order, reads it as one run too.
  CHECK(stepped("s[c] = sum(x[n, c, h, w] * g[h, w], n, h, w)", x + ", g: f32[H, W]")
            .starts_with("N, H*W (H and W as one"));
  CHECK(stepped("s[c] = sum(x[n, c, h, w, d], n, h, w, d)", "x: f32[N, C, H, W, D]")
            .starts_with("N, H*W*D (H, W and D as one"));
  // Not joined: a tensor reads w again elsewhere (its offset wraps at w), a weight reads h
  // alone, the run is read transposed, an index is a value, or elements are stored at the
  // reduced indices (their offsets come from each index's coordinate).
  CHECK(stepped("s[c] = sum(x[n, c, h, w] * t[w, c, h, w], n, h, w)", x + ", t: f32[W, C, H, W]")
            .empty());
  CHECK(stepped("s[c] = sum(x[n, c, h, w] * g[h], n, h, w)", x + ", g: f32[H]").empty());
  CHECK(stepped("s[c] = sum(x[n, c, h, w] * g[w, h], n, h, w)", x + ", g: f32[W, H]").empty());
  CHECK(stepped("s[c] = sum(x[n, c, h, w] * f32(h), n, h, w)", x).empty());
  CHECK(stepped("m[c] = mean(x[n, c, h, w], n, h, w)\n  y[n, c, h, w] = x[n, c, h, w] - m[c]", x,
                "y: f32[N, C, H, W]")
            .empty());
  // Indices that are not neighbours in the tensor, and one reduced index over a run: nothing
  // to join.
  CHECK(stepped("s[c, h] = sum(x[n, c, h, w], n, w)", x, "s: f32[C, H]").empty());
  CHECK(stepped("s[n, c] = sum(x[n, c, h, w], h, w)", x, "s: f32[N, C]").empty());
}

TEST_CASE("a split grid is one wave of the blocks an SM holds", "[compiler][reduction]") {
  bundle::Variant v;
  v.block_threads = 256;
  v.images = {bundle::ArchImage{"sm_90", "a.ptx", "", 78, 0, 9216}};
  const bundle::DeviceFacts h200{132, true, 2048, 65536, 233472};
  // 78 registers: 80 per thread, 20480 per block: 3 blocks of 256 threads per SM.
  CHECK(bundle::resident_blocks(v, h200) == 3);
  // 16 tiles share 3 x 132 blocks: 24 each (396 - 12 idle), not 4 x 132 / 16 rounded up (33,
  // 528 blocks: a second wave a third full).
  CHECK(bundle::split_blocks(16, 1 << 20, 32, 132, 3) == 24);
  CHECK(bundle::split_blocks(16, 1 << 20, 32, 132, 0) == 33);  // residency unknown
  v.images[0].registers = 56;  // 4 blocks by registers; 64 threads per block: 32 by threads
  CHECK(bundle::resident_blocks(v, h200) == 4);
  v.block_threads = 64;
  CHECK(bundle::resident_blocks(v, h200) == 18);  // 65536 / (56 x 64)
  v.images[0].registers = 16;
  CHECK(bundle::resident_blocks(v, h200) == 22);  // shared memory: 233472 / (9216 + 1024)
  v.images[0].shared_bytes = 0;
  CHECK(bundle::resident_blocks(v, h200) == 32);  // the most blocks an SM holds
  v.images[0].shared_bytes = 100000;
  CHECK(bundle::resident_blocks(v, h200) == 2);  // shared memory: 233472 / 101024
  v.images[0].registers = 0;
  CHECK(bundle::resident_blocks(v, h200) == 0);  // unknown
  // Never fewer than one block per tile, never past the reduced extent's chunks.
  CHECK(bundle::split_blocks(1000, 1 << 20, 32, 132, 1) == 1);
  CHECK(bundle::split_blocks(1, 256, 32, 132, 4) == 4);
}

TEST_CASE("staging variants: rows too long for registers, kept in shared memory",
          "[compiler][reduction]") {
  for (int max_vec : {4, 8}) {
    std::vector<ReductionConfig> staged = staged_row_configs(max_vec);
    REQUIRE(staged.size() == 3);
    CHECK(staged[0].group == 1024);  // the heuristic's choice comes first
    std::vector<ReductionConfig> space = row_reduction_space(max_vec);
    for (const ReductionConfig& c : staged) {
      CHECK(c.stage);
      CHECK_FALSE(c.split);
      CHECK(c.vec == max_vec);                      // 16-byte vectors
      CHECK(c.block == c.group);                    // one row per block
      CHECK(row_heuristic_limit(c, max_vec) == 0);  // never a tier
      CHECK(c.as_map().at("stage") == 1);
      CHECK(std::count(space.begin(), space.end(), c) == 0);  // the compiler appends them
    }
    CHECK(default_row_config(max_vec).as_map().count("stage") == 0);
  }
  // Per spec: bytes of shared memory per row element (the inputs read by two passes or
  // more), or 0 when no input is read twice and the compiler makes no staging variant.
  struct Case {
    const char* spec;
    int64_t bytes;
  } cases[] = {
      {"kernel k(x: f32[M, N]) -> (s: f32[M]) { s[i] = sum(x[i, j], j) }", 0},
      {R"(kernel k(x: bf16[M, N]) -> (y: bf16[M, N]) {
  mx[i] = max(x[i, j], j)
  e[i, j] = exp(x[i, j] - mx[i])
  s[i] = sum(e[i, j], j)
  y[i, j] = e[i, j] / s[i]
})",
       2},
      // The weight and bias are the same for every row: not staged.
      {R"(kernel k(x: bf16[M, N], w: bf16[N], b: bf16[N]) -> (y: bf16[M, N]) {
  mean[i] = sum(x[i, j], j) / N
  d[i, j] = x[i, j] - mean[i]
  var[i] = sum(d[i, j] * d[i, j], j) / N
  y[i, j] = d[i, j] * rsqrt(var[i] + 1e-5) * w[j] + b[j]
})",
       2},
      // Both summands of the residual, f32 and bf16.
      {R"(kernel k(x: f32[M, N], r: bf16[M, N], w: f32[N]) -> (h: f32[M, N], y: f32[M, N]) {
  h[i, j] = x[i, j] + r[i, j]
  ms[i] = sum(h[i, k] * h[i, k], k) / N
  y[i, j] = h[i, j] * rsqrt(ms[i] + 1e-6) * w[j]
})",
       6},
  };
  for (const Case& c : cases) {
    INFO(c.spec);
    bundle::Manifest m = compile_text(c.spec);
    REQUIRE(m.kernels[0].steps.size() == 1);
    int staged = 0, split = 0;
    for (const bundle::Variant& v : m.kernels[0].steps[0].variants) {
      split += v.split.phases > 0;
      if (v.stage.bytes_per_element == 0) {
        CHECK(v.config.count("stage") == 0);
        continue;
      }
      ++staged;
      CHECK(v.config.at("stage") == 1);
      CHECK(v.stage.bytes_per_element == c.bytes);
      CHECK(v.stage.rows_per_block == 1);
      CHECK(v.stage.vec == v.config.at("vec"));
      CHECK(v.max_reduced == 0);
      CHECK_FALSE(v.is_default);
    }
    CHECK(staged == (c.bytes > 0 ? 3 : 0));
    CHECK(split == 3);
    // Staging variants come after the others but the few-rows variants' twins (config.h
    // row_few_rows_config, last): the ids of the others do not change.
    const auto& vs = m.kernels[0].steps[0].variants;
    std::set<int> few;
    for (const auto& [limit, variant] : m.kernels[0].steps[0].few_rows) few.insert(variant);
    size_t twins = 0;
    for (int f : few) twins += vs[static_cast<size_t>(f)].odd_rows >= 0;
    for (size_t i = 0; i < vs.size() && c.bytes > 0; ++i) {
      const bool last = i + twins >= vs.size(), staging = !last && i + twins + 3 >= vs.size();
      CHECK((vs[i].stage.vec > 0) == staging);
      if (last) CHECK(few.count(vs[i].odd_rows) == 0);  // a twin links nothing
    }
  }
  // Outer reductions do not stage.
  bundle::Manifest cols =
      compile_text("kernel c(x: f32[M, N]) -> (s: f32[N]) { s[j] = sum(x[i, j], i) }");
  for (const bundle::Variant& v : cols.kernels[0].steps[0].variants) {
    CHECK(v.stage.bytes_per_element == 0);
  }
}

// The number of .param lines of entry `entry` in PTX text.
int entry_params(const std::string& ptx, const std::string& entry) {
  size_t at = ptx.find(".entry " + entry + "(");
  REQUIRE(at != std::string::npos);
  size_t end = ptx.find(')', at);
  int n = 0;
  for (size_t p = ptx.find(".param .u64", at); p < end; p = ptx.find(".param .u64", p + 1)) ++n;
  return n;
}

TEST_CASE("buffers between steps: declared in the manifest, taken by every step's entry",
          "[compiler][reduction]") {
  CompileOptions o;
  o.archs = {"sm_90"};
  o.assemble = false;
  Program p;
  p.kernels = {example("global_max_norm", "global_max_norm"),
               example("rowsum_colsum", "rowsum_colsum")};
  CompiledBundle b = compile_program(p, o);
  const Dim M = Dim::symbol("M");

  const bundle::KernelInfo& g = b.manifest.kernels[0];
  // Row maxima [M], their max [], the division: both maxima pass through memory, in f32.
  REQUIRE(g.buffers.size() == 2);
  CHECK(g.buffers[0] == bundle::ParamInfo{"_r0", DType::f32, {M}, false});
  CHECK(g.buffers[1] == bundle::ParamInfo{"g", DType::f32, {}, false});
  REQUIRE(g.steps.size() == 3);
  CHECK(g.steps[0].kind == bundle::StepKind::row_reduction);
  CHECK(g.steps[1].kind == bundle::StepKind::row_reduction);
  CHECK(g.steps[1].space.empty());
  CHECK(g.steps[2].kind == bundle::StepKind::pointwise);
  // The max of the rows is one row of M: it has a split variant for very long ones.
  CHECK(std::any_of(g.steps[1].variants.begin(), g.steps[1].variants.end(),
                    [](const bundle::Variant& v) { return v.split.phases > 0; }));

  const bundle::KernelInfo& rc = b.manifest.kernels[1];
  REQUIRE(rc.buffers.size() == 1);
  CHECK(rc.buffers[0] == bundle::ParamInfo{"r", DType::f32, {M}, false});
  REQUIRE(rc.steps.size() == 2);
  CHECK(rc.steps[1].kind == bundle::StepKind::outer_reduction);

  // Every entry takes the parameters, the buffers and the symbols (M, N), and a split one its
  // workspace and phase; aligned_params may name buffers (indices past the parameters).
  for (const bundle::KernelInfo* k : {&g, &rc}) {
    const size_t args = k->params.size() + k->buffers.size() + k->symbols.size();
    for (const bundle::Step& st : k->steps) {
      for (const bundle::Variant& v : st.variants) {
        INFO(v.entry);
        const std::string& ptx = b.files.at(v.images[0].ptx);
        CHECK(entry_params(ptx, v.entry) == static_cast<int>(args + (v.split.phases ? 2 : 0)));
        for (int ap : v.aligned_params) {
          CHECK(ap < static_cast<int>(k->params.size() + k->buffers.size()));
        }
      }
    }
  }
  // The max of the row maxima reads _r0 (argument 2) with vectors in its vectorised variants.
  bool r0_aligned = false;
  for (const bundle::Variant& v : g.steps[1].variants) {
    bool names_r0 =
        std::find(v.aligned_params.begin(), v.aligned_params.end(), 2) != v.aligned_params.end();
    CHECK(names_r0 == (v.align_bytes > 1));
    r0_aligned |= names_r0;
  }
  CHECK(r0_aligned);
}

TEST_CASE("looped rows fuse the sum of a softmax or logsumexp into the max's pass",
          "[compiler][reduction]") {
  struct Case {
    const char *file, *kernel;
    int held, looped;
    const char* fused;
  };
  for (const Case& c :
       {Case{"softmax", "softmax", 3, 2, "s: online max+sum with mx"},
        Case{"reduction_suite", "softmax_f32", 3, 2, "s: online max+sum with mx"},
        Case{"logsumexp", "logsumexp", 2, 1, "s: online max+sum with mx"},
        Case{"reduction_suite", "logsumexp_bf16", 2, 1, "_r0: online max+sum with mx"}}) {
    INFO(c.kernel);
    RowPasses p = passes_of(example(c.file, c.kernel));
    CHECK(p.held == c.held);
    CHECK(p.looped == c.looped);
    CHECK(p.fused == std::vector<std::string>{c.fused});
  }
}

TEST_CASE("looped rows fuse a variance into its mean's pass (Welford)", "[compiler][reduction]") {
  struct Case {
    const char *file, *kernel;
    int held, looped;
  };
  for (const Case& c :
       {Case{"layernorm", "layernorm", 3, 2}, Case{"reduction_suite", "layernorm_f32", 3, 2},
        Case{"mean_var", "mean_var", 2, 1}, Case{"reduction_suite", "mean_var_bf16", 2, 1}}) {
    INFO(c.kernel);
    RowPasses p = passes_of(example(c.file, c.kernel));
    CHECK(p.held == c.held);
    CHECK(p.looped == c.looped);
    CHECK(p.fused == std::vector<std::string>{"_r1: welford with _r0"});
  }
}

TEST_CASE("kernels without these patterns keep their passes", "[compiler][reduction]") {
  for (auto [file, kernel] :
       {std::pair{"rmsnorm", "rmsnorm"}, std::pair{"reduction_suite", "rmsnorm_f32"},
        std::pair{"reduction_suite", "add_rmsnorm_f32"}, std::pair{"reduction_suite", "rowmean"}}) {
    INFO(kernel);
    RowPasses p = passes_of(example(file, kernel));
    CHECK(p.looped == p.held);
    CHECK(p.fused.empty());
  }
}

TEST_CASE("the online sum takes any factors that do not read the max", "[compiler][reduction]") {
  RowPasses p = passes_of(R"(kernel k(x: f32[M, N], w: f32[N]) -> (s: f32[M], t: f32[M]) {
  mx[i] = max(x[i, j], j)
  s[i] = sum(w[j] * exp(x[i, j] - mx[i]) / (x[i, j] * x[i, j] + 1.0), j)
  t[i] = mean(exp(x[i, j] - mx[i]), j)
})");
  CHECK(p.held == 2);
  CHECK(p.looped == 1);
  CHECK(p.fused ==
        std::vector<std::string>{"s: online max+sum with mx", "t: online max+sum with mx"});
}

TEST_CASE("a variance of a mean reduction, or of a sum over a fixed extent, is fused",
          "[compiler][reduction]") {
  CHECK(passes_of(R"(kernel k(x: f32[M, N]) -> (v: f32[M]) {
  mu[i] = mean(x[i, j], j)
  v[i] = mean((x[i, j] - mu[i]) * (x[i, j] - mu[i]), j)
})")
            .fused == std::vector<std::string>{"v: welford with mu"});
  CHECK(passes_of(R"(kernel k(x: f32[M, 4096]) -> (v: f32[M]) {
  mu[i] = sum(x[i, j] * 2.0, j) / 4096
  d[i, j] = x[i, j] * 2.0 - mu[i]
  v[i] = sum(d[i, j] * d[i, j], j)
})")
            .fused == std::vector<std::string>{"v: welford with _r0"});
}

TEST_CASE("near misses of the fusion patterns keep their passes", "[compiler][reduction]") {
  const char* misses[] = {
      // The exponent is not the max's body.
      R"(kernel k(x: f32[M, N], z: f32[M, N]) -> (s: f32[M]) {
  mx[i] = max(z[i, j], j)
  s[i] = sum(exp(x[i, j] - mx[i]), j)
})",
      R"(kernel k(x: f32[M, N]) -> (s: f32[M]) {
  mx[i] = max(x[i, j], j)
  s[i] = sum(exp(x[i, j] * 2.0 - mx[i]), j)
})",
      // exp(M - A), a min, a sum of terms that do not all scale with exp(-M).
      R"(kernel k(x: f32[M, N]) -> (s: f32[M]) {
  mx[i] = max(x[i, j], j)
  s[i] = sum(exp(mx[i] - x[i, j]), j)
})",
      R"(kernel k(x: f32[M, N]) -> (s: f32[M]) {
  mn[i] = min(x[i, j], j)
  s[i] = sum(exp(x[i, j] - mn[i]), j)
})",
      R"(kernel k(x: f32[M, N]) -> (s: f32[M]) {
  mx[i] = max(x[i, j], j)
  s[i] = sum(exp(x[i, j] - mx[i]) + 1.0, j)
})",
      R"(kernel k(x: f32[M, N]) -> (s: f32[M]) {
  mx[i] = max(x[i, j], j)
  s[i] = sum(exp(x[i, j] - mx[i]) * exp(x[i, j] - mx[i]), j)
})",
      R"(kernel k(x: f32[M, N]) -> (s: f32[M]) {
  mx[i] = max(x[i, j], j)
  s[i] = sum(exp(x[i, j] - mx[i]) * mx[i], j)
})",
      // Another factor needs a reduction of the max's own pass.
      R"(kernel k(x: f32[M, N]) -> (s: f32[M]) {
  mx[i] = max(x[i, j], j)
  t[i] = sum(x[i, j], j)
  s[i] = sum(exp(x[i, j] - mx[i]) * t[i], j)
})",
      // The max is an output in bf16: the sum reads it rounded.
      R"(kernel k(x: f32[M, N]) -> (mx: bf16[M], s: f32[M]) {
  mx[i] = max(x[i, j], j)
  s[i] = sum(exp(x[i, j] - mx[i]), j)
})",
      // The variance of a different X, a mean over another extent, differing deviations.
      R"(kernel k(x: f32[M, N], z: f32[M, N]) -> (v: f32[M]) {
  mu[i] = sum(x[i, j], j) / N
  v[i] = sum((z[i, j] - mu[i]) * (z[i, j] - mu[i]), j)
})",
      R"(kernel k(x: f32[M, N]) -> (v: f32[M]) {
  mu[i] = sum(x[i, j], j) / M
  v[i] = sum((x[i, j] - mu[i]) * (x[i, j] - mu[i]), j)
})",
      R"(kernel k(x: f32[M, 4096]) -> (v: f32[M]) {
  mu[i] = sum(x[i, j], j) / 4095
  v[i] = sum((x[i, j] - mu[i]) * (x[i, j] - mu[i]), j)
})",
      R"(kernel k(x: f32[M, N]) -> (v: f32[M]) {
  mu[i] = sum(x[i, j], j)
  v[i] = sum((x[i, j] - mu[i]) * (x[i, j] - mu[i]), j)
})",
      R"(kernel k(x: f32[M, N]) -> (v: f32[M]) {
  mu[i] = sum(x[i, j], j) / N
  v[i] = sum((x[i, j] - mu[i]) * (x[i, j] + mu[i]), j)
})",
      R"(kernel k(x: f32[M, N]) -> (v: f32[M]) {
  mu[i] = max(x[i, j], j) / N
  v[i] = sum((x[i, j] - mu[i]) * (x[i, j] - mu[i]), j)
})",
      // The mean is an output in bf16: the variance reads it rounded.
      R"(kernel k(x: f32[M, N]) -> (mu: bf16[M], v: f32[M]) {
  mu[i] = sum(x[i, j], j) / N
  v[i] = sum((x[i, j] - mu[i]) * (x[i, j] - mu[i]), j)
})",
  };
  for (const char* text : misses) {
    INFO(text);
    RowPasses p = passes_of(text);
    CHECK(p.looped == p.held);
    CHECK(p.fused.empty());
  }
}

// nvJitLink answers from the CUDA compute cache without running ptxas on a machine with a
// driver, and its log then lacks ptxas's report (compiler/toolkit.cpp): the registers and local
// frame an image records must then come from the cubin, and say what the report says.
TEST_CASE("a cubin's own records give its registers and local frame, as ptxas reports them",
          "[compiler][reduction]") {
  Program p = parse_program(
      "kernel total(x: f32[M, N]) -> (s: f32[M]) { s[i] = sum(x[i, j], j) }\n"
      "kernel colsum(x: bf16[M, N]) -> (s: f32[N]) { s[j] = sum(x[i, j], i) }\n");
  const std::optional<CompiledBundle> compiled = testing::compile_with_cubins(p, {"sm_90"});
  if (!compiled) return;
  const CompiledBundle& b = *compiled;
  int checked = 0;
  for (const bundle::KernelInfo& k : b.manifest.kernels) {
    for (const bundle::Variant& v : k.steps.at(0).variants) {
      const bundle::ArchImage& im = v.images.at(0);
      INFO(v.entry);
      const CubinFacts f = cubin_facts(b.files.at(im.cubin), v.entry);
      REQUIRE(f.found);
      CHECK(im.registers > 0);
      CHECK(f.registers == im.registers);
      CHECK((f.frame_bytes > 0) == (im.spill_bytes > 0));
      CHECK_FALSE(cubin_facts(b.files.at(im.cubin), v.entry + "_not").found);
      ++checked;
    }
  }
  CHECK(checked > 40);
  // An image ptxas spills (the variant that takes the most registers, allowed 24): a frame.
  const std::vector<bundle::Variant>& vs = b.manifest.kernels.at(0).steps.at(0).variants;
  const bundle::Variant& v =
      *std::max_element(vs.begin(), vs.end(), [](const auto& x, const auto& y) {
        return x.images.at(0).registers < y.images.at(0).registers;
      });
  REQUIRE(v.images.at(0).registers > 32);
  std::string ptx = b.files.at(v.images.at(0).ptx);
  const size_t at = ptx.find(".maxntid");
  REQUIRE(at != std::string::npos);
  ptx.insert(at, ".maxnreg 24\n");
  Result<Cubin> tight = assemble_cubin(ptx, "sm_90", v.entry);
  REQUIRE(tight.ok());
  INFO(tight->info_log);
  REQUIRE(tight->spill_bytes > 0);
  const CubinFacts f = cubin_facts(tight->bytes, v.entry);
  CHECK(f.registers == tight->registers);
  CHECK(f.frame_bytes > 0);
  CHECK_FALSE(cubin_facts("not an ELF file", v.entry).found);
}

TEST_CASE("means over a middle axis whose innermost extent is not whole vectors run prefetching",
          "[compiler][reduction]") {
  bundle::Manifest m = compile_text(
      "kernel m(x: f32[B, M, N]) -> (y: f32[B, N]) { y[b, j] = sum(x[b, i, j], i) / M }");
  const bundle::Step& step = m.kernels[0].steps[0];
  const bundle::DeviceFacts h200{132, true};
  const bundle::StepRule rule =
      bundle::step_rule(step, std::vector<bool>(step.variants.size(), true), h200);
  REQUIRE(rule.prefetching >= 0);
  const bundle::Variant& p = step.variants[static_cast<size_t>(rule.prefetching)];
  CHECK(p.config == prefetching_outer_configs()[0].as_map());
  CHECK(p.elements_per_block == 32);
  auto pick = [&](const bundle::StepRule& r, std::vector<int64_t> space, int64_t reduced) {
    const int64_t red[] = {reduced};
    return bundle::rule_variant(step, r, space, red, h200);
  };
  auto vec_of = [&](int v) { return step.variants[static_cast<size_t>(v)].config.at("vec"); };
  // 64 x 513 columns: a multiple of every vector, the innermost extent of none.
  CHECK(pick(rule, {64, 513}, 1024) == rule.prefetching);
  CHECK(pick(rule, {16, 1001}, 4096) == rule.prefetching);
  // Whole vectors in the innermost extent: the rule as before.
  const int aligned = pick(rule, {64, 512}, 1024);
  CHECK(aligned != rule.prefetching);
  CHECK(vec_of(aligned) > 1);
  // Columns not a multiple of the vector: the pick's scalar twin, as before.
  const int odd = pick(rule, {63, 513}, 1024);
  CHECK(odd != rule.prefetching);
  CHECK(vec_of(odd) == 1);
  // Fewer of its tiles than SMs (4 x 1025 columns: 129 tiles of 32): the rule's split.
  const int few = pick(rule, {4, 1025}, 8192);
  CHECK(few != rule.prefetching);
  CHECK(step.variants[static_cast<size_t>(few)].split.phases > 0);
  // Short columns (up to kShortOuterMaxReduced): the rule as before (not measured there).
  CHECK(pick(rule, {64, 513}, bundle::kShortOuterMaxReduced) != rule.prefetching);
  CHECK(pick(rule, {64, 513}, bundle::kShortOuterMaxReduced + 1) == rule.prefetching);
  // One row dimension: the innermost extent is the columns' product (the twin's case).
  CHECK(pick(rule, {20001}, 6000) != rule.prefetching);
  // A variant chosen explicitly stays chosen; without the variant, the rule as before.
  CHECK(pick(bundle::pinned_rule(rule, rule.chosen), {64, 513}, 1024) == rule.chosen);
  std::vector<bool> without(step.variants.size(), true);
  without[static_cast<size_t>(rule.prefetching)] = false;
  const bundle::StepRule plain = bundle::step_rule(step, without, h200);
  CHECK(plain.prefetching == rule.prefetching + 1);  // the one of 128 threads
  without[static_cast<size_t>(plain.prefetching)] = false;
  const bundle::StepRule none = bundle::step_rule(step, without, h200);
  CHECK(none.prefetching == -1);
  CHECK(vec_of(pick(none, {64, 513}, 1024)) > 1);
}

// Where the pick's scalar stand-in (its twin, or the prefetching variant) has fewer tiles than
// twice the SMs over a long reduction, the rule runs the deep split's scalar twin (bundle/rule.h
// few_tiles_variant).
TEST_CASE("scalar outer picks over fewer tiles than twice the SMs run the deep split's twin",
          "[compiler][reduction]") {
  bundle::Manifest m = compile_text(
      "kernel m(x: f32[B, M, N]) -> (y: f32[B, N]) { y[b, j] = sum(x[b, i, j], i) / M }");
  const bundle::Step& step = m.kernels[0].steps[0];
  const bundle::DeviceFacts h200{132, true};
  const bundle::StepRule rule =
      bundle::step_rule(step, std::vector<bool>(step.variants.size(), true), h200);
  REQUIRE(rule.deep_split >= 0);
  REQUIRE(rule.prefetching >= 0);
  // The deep split's twin: the same split, scalar loads.
  const int twin = rule.scalar_columns.at(static_cast<size_t>(rule.deep_split));
  REQUIRE(twin >= 0);
  const bundle::Variant& tv = step.variants[static_cast<size_t>(twin)];
  CHECK(tv.split.phases > 0);
  CHECK(tv.config.at("vec") == 1);
  auto pick = [&](const bundle::StepRule& r, std::vector<int64_t> space, int64_t reduced) {
    const int64_t red[] = {reduced};
    return bundle::rule_variant(step, r, space, red, h200);
  };
  // The prefetching variant's case (whole vectors of columns, an odd innermost extent): 4 x 1057
  // columns are 133 tiles of 32, 8 x 999 250; 8 x 1057, 265, keep it.
  CHECK(pick(rule, {4, 1057}, 4096) == twin);
  CHECK(pick(rule, {8, 999}, 8192) == twin);
  CHECK(pick(rule, {8, 1057}, 8192) == rule.prefetching);
  // The scalar twin's case (6 x 705 columns, not whole vectors): 133 tiles.
  CHECK(pick(rule, {6, 705}, 8192) == twin);
  CHECK(pick(rule, {6, 70500}, 8192) != twin);
  // Short columns (up to kShortOuterMaxReduced) and whole vectors: the rule as before.
  CHECK(pick(rule, {4, 1057}, bundle::kShortOuterMaxReduced) != twin);
  CHECK(pick(rule, {4, 1056}, 8192) != twin);
  CHECK(pick(rule, {4, 1056}, 8192) != rule.deep_split);
  // A variant chosen explicitly stays chosen.
  CHECK(pick(bundle::pinned_rule(rule, rule.chosen), {4, 1057}, 4096) == rule.chosen);
}

// build_image assembles a prefetching outer config as a whole program too and keeps that image
// where it fits twice the blocks per SM (compiler/compile.cpp whole_program_fits_more): over
// reduced indices apart, ptxas as nvJitLink runs it (relocatable code) took 108-120 registers
// where the whole program took 64 (toolkit 13.0, sm_90). With 32-bit indices in the variant's
// own entry (has_index32_entry) it took 40 either way, so no image of sum_bh's needs the whole
// program now; every prefetching image fits at least the blocks its PTX fits assembled
// relocatable, spills nothing, and the whole program is kept only where it fits twice those.
namespace {

// Blocks of `threads` an sm_90 SM holds at `registers` a thread.
int sm90_blocks(int registers, int threads) {
  const TargetFacts& t = target_facts("sm_90");
  const int per_warp =
      (registers * 32 + t.register_granule - 1) / t.register_granule * t.register_granule;
  return t.registers_per_sm / (per_warp * (threads / 32));
}

// A variant's shipped sm_90 image and its PTX assembled both ways (compiler/compile.cpp
// build_image keeps one of them).
struct Assemblies {
  const bundle::ArchImage& shipped;
  Cubin separate, whole;
};
Assemblies assemble_both(const CompiledBundle& b, const bundle::Variant& v) {
  const bundle::ArchImage& im = v.images.at(0);
  const std::string& ptx = b.files.at(im.ptx);
  Result<Cubin> separate = assemble_cubin(ptx, "sm_90", v.entry, Assembly::separate);
  Result<Cubin> program = assemble_cubin(ptx, "sm_90", v.entry, Assembly::whole_program);
  REQUIRE(separate.ok());
  REQUIRE(program.ok());
  return {im, *separate, *program};
}

}  // namespace

TEST_CASE(
    "reduction: prefetching outer images keep a whole program only where it fits twice the blocks",
    "[reduction]") {
  Program p = parse_program(
      "kernel sum_bh(x: f32[B, C, H, W]) -> (y: f32[C, W]) {\n"
      "  y[c, w] = sum(x[b, c, h, w], b, h)\n}\n");
  const std::optional<CompiledBundle> compiled = testing::compile_with_cubins(p, {"sm_90"});
  if (!compiled) return;
  int prefetching = 0;
  for (const bundle::Variant& v : compiled->manifest.kernels.at(0).steps.at(0).variants) {
    if (!v.config.count("prefetch")) continue;
    ++prefetching;
    const Assemblies a = assemble_both(*compiled, v);
    INFO(v.entry << ": shipped " << a.shipped.registers << ", relocatable " << a.separate.registers
                 << ", whole " << a.whole.registers);
    CHECK(a.shipped.spill_bytes == 0);
    CHECK(sm90_blocks(a.shipped.registers, v.block_threads) >=
          sm90_blocks(a.separate.registers, v.block_threads));
    if (a.shipped.registers == a.whole.registers && a.shipped.registers < a.separate.registers) {
      CHECK(sm90_blocks(a.shipped.registers, v.block_threads) >=
            2 * sm90_blocks(a.separate.registers, v.block_threads));
    }
  }
  CHECK(prefetching == 2);
}

TEST_CASE(
    "reduction: row images below the occupancy target keep a whole program that fits "
    "twice the blocks",
    "[reduction]") {
  // Batchnorm's statistics, two passes over each channel (one-pass f32 rows are spread, and
  // their tiers of 16 elements a thread fit their blocks either way).
  Program p = parse_program(
      "kernel channel_var(x: f32[N, C, H, W]) -> (m: f32[C], v: f32[C]) {\n"
      "  m[c] = mean(x[n, c, h, w], n, h, w)\n"
      "  v[c] = mean((x[n, c, h, w] - m[c]) * (x[n, c, h, w] - m[c]), n, h, w)\n}\n");
  const std::optional<CompiledBundle> compiled = testing::compile_with_cubins(p, {"sm_90"});
  if (!compiled) return;
  int whole = 0;
  for (const bundle::Variant& v : compiled->manifest.kernels.at(0).steps.at(0).variants) {
    const Assemblies a = assemble_both(*compiled, v);
    const int shipped = sm90_blocks(a.shipped.registers, v.block_threads);
    const int separate = sm90_blocks(a.separate.registers, v.block_threads);
    INFO(v.entry << ": shipped " << a.shipped.registers << ", relocatable " << a.separate.registers
                 << ", whole " << a.whole.registers);
    // 1024 threads hold 64 registers at most (the register file): the split variant of that
    // block (the tuner's) spills 72 bytes there, nvJitLink's image as much.
    if (v.block_threads < 1024) CHECK(a.shipped.spill_bytes == 0);
    // One row a block (block == group): the image fits as many blocks as nvJitLink's or more.
    if (v.config.at("block") == v.config.at("group") && !v.config.count("stage")) {
      CHECK(shipped >= separate);
    }
    whole += a.shipped.registers == a.whole.registers && shipped >= 2 * separate;
  }
  CHECK(whole >= 1);
}

}  // namespace kiln
