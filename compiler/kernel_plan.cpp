// See kernel_plan.h.
#include "compiler/kernel_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "bundle/rule.h"
#include "compiler/codegen.h"
#include "compiler/lower_contraction.h"
#include "compiler/reduction_analysis.h"
#include "ir/text.h"

namespace kiln {
namespace {

std::vector<DType> stored_types(const KernelDef& k) {
  std::vector<DType> types;
  for (const TensorDecl& o : k.outputs) types.push_back(o.dtype);
  return types;
}

// `kiln explain`'s line on a step's approximate functions (StepPlan::fast_functions).
std::string fast_functions_line(const StepPlan& step) {
  std::vector<Expr> values;
  if (step.kind == bundle::StepKind::pointwise) {
    for (const StepStore& st : step.pointwise.stores) values.push_back(st.value);
  } else if (step.sk) {
    values = statement_values(step.sk->def);
  }
  const std::string fns = approximated_functions(values);
  const char* tanh = "tanh runs on tanh.approx.f32";
  const char* erf = "erf runs as tanh.approx.f32 of an odd polynomial";
  return fmt::format(
      "every output is f16 or bf16: {} (error at most 2^-10 absolute: docs/language.md)",
      fns == "tanh"  ? tanh
      : fns == "erf" ? erf
                     : fmt::format("{}, {}", tanh, erf));
}

bool declares(const std::vector<TensorDecl>& ds, const std::string& name) {
  return std::any_of(ds.begin(), ds.end(), [&](const TensorDecl& d) { return d.name == name; });
}

// Whether step `sub` reads an output of the spec kernel `k` that an earlier step wrote.
bool reads_kernel_output(const KernelDef& k, const KernelDef& sub) {
  return std::any_of(k.outputs.begin(), k.outputs.end(), [&](const TensorDecl& o) {
    return declares(sub.inputs, o.name) && !declares(sub.outputs, o.name);
  });
}

// The parameters of a step's entry (manifest.h): the spec kernel's, then the schedule's
// buffers as more outputs. A buffer's role is the step's: an output where `sub` writes it, an
// input where it only reads it (so its loads may take the read-only path), else a temp,
// which the entry takes and never touches. A kernel output that an earlier step wrote and
// `sub` only reads is an input of this step likewise (`y[i] = sum(x[i, j], j)` then
// `z[j] = sum(x[i, j] * y[i], i)`).
KernelDef step_abi(const KernelDef& k, const Schedule& s, const KernelDef& sub) {
  KernelDef abi = k;
  for (TensorDecl& o : abi.outputs) {
    if (declares(sub.inputs, o.name) && !declares(sub.outputs, o.name)) o.role = TensorRole::input;
  }
  for (const TensorDecl& b : s.buffers) {
    TensorDecl& t = abi.outputs.emplace_back(b);
    t.role = declares(sub.outputs, b.name)  ? TensorRole::output
             : declares(sub.inputs, b.name) ? TensorRole::input
                                            : TensorRole::temp;
  }
  return abi;
}

// A pointwise step planned on a scheduled kernel's program, its stores renumbered as
// parameters of the step's entry (`abi`).
std::vector<PointwiseStep> plan_sub_pointwise(const KernelDef& abi, const KernelDef& sub) {
  std::vector<PointwiseStep> steps = plan_pointwise(sub);
  std::vector<const TensorDecl*> mine = sub.params(), all = abi.params();
  for (PointwiseStep& st : steps) {
    for (StepStore& store : st.stores) {
      const std::string& name = mine[store.param]->name;
      auto it = std::find_if(all.begin(), all.end(),
                             [&](const TensorDecl* t) { return t->name == name; });
      internal_check(it != all.end(), "plan: a step stores to a non-parameter");
      store.param = static_cast<int>(it - all.begin());
    }
  }
  return steps;
}

// ---- strided inputs --------------------------------------------------------------------------

bool reads(const Expr& e, const std::string& name) {
  if (const Load* l = e.as<Load>(); l && l->tensor == name) return true;
  if (const Gather* g = e.as<Gather>(); g && g->tensor == name) return true;
  bool found = false;
  for_each_child(e, [&](const Expr& c) { found = found || reads(c, name); });
  return found;
}

// Whether `step` reads a strided input of its entry.
bool reads_strided(const StepPlan& step) {
  for (const TensorDecl* t : step.abi->params()) {
    if (!t->strided) continue;
    if (step.sk ? loads_tensor(step.sk->def, t->name)
                : std::any_of(step.pointwise.stores.begin(), step.pointwise.stores.end(),
                              [&](const StepStore& st) { return reads(st.value, t->name); })) {
      return true;
    }
  }
  return false;
}

// The strided variants of a step that reads strided inputs, the one for rows of any length
// last. Pointwise (tiled steps too): the flat kernel, 256 threads, two elements in flight,
// scalar loads through the strides. Row reductions that read a strided input at an element of
// the row: a tile (compiler/lower/reduction_rows.cpp, step 4c) of 16 bytes of its narrowest
// element per column of a block's rows (8 rows of bf16, 4 of f32), which the copy reads as
// one segment of a transposed view, vectors from the tile; 256 threads for rows of up to
// kTileShortRows elements, 512 (two blocks an SM, their registers capped) for longer ones,
// and for rows the scalar variant holds (256 elements) the scalar variant. Measured on an
// H200 (bench/results/2026-11-26-h200-strided-tile, calls 5 and 6): 512 threads took 134 us
// where 256 took 150 for 16384 x 4096 bf16 over a transposed view, 236 against 283 in f32,
// 197 against 274 for 8192 x 8192; 113 against 84 for 32768 x 1000; 256 threads were faster
// up to rows of 2048 and slower from 3072; rows of 256 f32 took 62.9 us in the scalar
// variant, 111.5 in the 256-thread tile, whose blocks hold little. Other row reductions
// (and those short rows): a warp per row, 4 rows per block, 8 elements per thread on chip
// (rows that are contiguous but padded stay coalesced; a transposed row is read one element
// per thread at the row's stride). Outer reductions: the scalar shape of their default.
std::vector<std::pair<AnyConfig, int64_t>> strided_configs(const StepPlan& step) {
  switch (step.kind) {
    case bundle::StepKind::pointwise: {
      PointwiseConfig c{256, 1, 2};
      c.strided = true;
      return {{c, 0}};
    }
    case bundle::StepKind::row_reduction: {
      ReductionConfig scalar{128, 32, 1, 8};
      scalar.strided = true;
      if (step.tile.bytes_per_element > 0) {
        const int rows = std::clamp(16 / step.tile.narrowest, 1, 16);
        std::vector<std::pair<AnyConfig, int64_t>> out{{scalar, scalar.capacity()}};
        for (const auto& [block, limit] :
             {std::pair<int, int64_t>{256, kTileShortRows}, {512, 0}}) {
          ReductionConfig c{block, block / rows, step.max_vec, 2};
          c.strided = true;
          c.stage = true;
          out.emplace_back(c, limit);
        }
        return out;
      }
      return {{scalar, 0}};
    }
    case bundle::StepKind::outer_reduction: {
      ReductionConfig c = default_outer_config(1);
      c.vec = 1;
      c.strided = true;
      return {{c, 0}};
    }
    default:
      throw InternalError("plan: no strided variant for a contraction or a scan");
  }
}

// ---- configuration spaces ------------------------------------------------------------------

// The step's variants (config.h's spaces) with the default marked.
void plan_variants(StepPlan& step) {
  std::vector<AnyConfig> space;
  AnyConfig def;
  std::vector<std::pair<size_t, size_t>> twins;  // (a row tier, its shifting twin) in space
  switch (step.kind) {
    case bundle::StepKind::pointwise:
      if (const Tiling& t = step.pointwise.tiling; t.tiled()) {
        // The tiles, their scalar fallback first among the variants without vectors, then the
        // flat kernel's vector variants for the tuner (shapes whose tiles are mostly empty).
        for (const PointwiseConfig& c :
             tiled_config_space(step.max_vec, t.smem_bytes_per_element())) {
          space.push_back(c);
        }
        for (const PointwiseConfig& c : pointwise_config_space(step.max_vec)) {
          if (c.vec == step.max_vec) space.push_back(c);
        }
        def = default_tiled_config(step.max_vec, t.smem_bytes_per_element());
        break;  // no tune ranges: a tile's knobs constrain one another (config.h)
      }
      for (const PointwiseConfig& c : pointwise_config_space(step.max_vec)) space.push_back(c);
      def = default_pointwise_config(step.max_vec);
      // Pointwise variants compile on the fly: the tuner may move these knobs past the grid.
      step.tune_ranges = {{"block", 32, 1024}, {"unroll", 1, 16}};
      break;
    case bundle::StepKind::row_reduction: {
      const std::vector<ReductionConfig> rows =
          row_reduction_space(step.max_vec, !step.passes.fused.empty());
      for (const ReductionConfig& c : rows) space.push_back(c);
      // The tiers' shifting twins, then the staging variants: the ids of the row space stay.
      for (size_t i = 0; i < rows.size(); ++i) {
        if (auto twin =
                row_shift_twin(rows[i], step.max_vec, step.looped_fusion(), step.spread_tiers())) {
          twins.emplace_back(i, space.size());
          space.push_back(*twin);
        }
      }
      if (step.stage_bytes_per_element > 0) {
        for (const ReductionConfig& c : staged_row_configs(step.max_vec)) space.push_back(c);
      }
      // The variants that replace tiers on few rows (a row space config each), and their own
      // shifting twins last: the ids before them stay.
      // (Their element stores read the invariant input, so their tiers are never spread.)
      if (step.reads_row_invariant) {
        internal_check(!step.spread_tiers(), "plan: a step with few-rows variants spreads");
        std::set<size_t> with_twin;  // few-rows variants whose twin is in the space
        for (size_t i = 0; i < rows.size(); ++i) {
          const std::optional<ReductionConfig> few = row_few_rows_config(rows[i], step.max_vec);
          if (!few || row_shift_twin(rows[i], step.max_vec, step.looped_fusion()) == std::nullopt)
            continue;
          const auto at =
              static_cast<size_t>(std::find(rows.begin(), rows.end(), *few) - rows.begin());
          internal_check(at < rows.size(), "plan: a few-rows config outside the row space");
          step.few_rows.emplace_back(row_heuristic_limit(rows[i], step.max_vec),
                                     static_cast<int>(at));
          if (with_twin.insert(at).second) {
            ReductionConfig twin = *few;
            twin.shift = true;
            twins.emplace_back(at, space.size());
            space.push_back(twin);
          }
        }
        std::sort(step.few_rows.begin(), step.few_rows.end());
      }
      def = default_row_config(step.max_vec);
      break;
    }
    case bundle::StepKind::outer_reduction:
      for (const ReductionConfig& c : outer_reduction_space(step.max_vec)) space.push_back(c);
      def = default_outer_config(step.max_vec);
      break;
    case bundle::StepKind::scan:
      if (step.row_scan()) {
        for (const ScanConfig& c : row_scan_space(step.max_vec)) space.push_back(c);
        def = default_row_scan_config(step.max_vec);
      } else {
        for (const ScanConfig& c : outer_scan_space(step.max_vec)) space.push_back(c);
        def = default_outer_scan_config(step.max_vec);
      }
      break;
    case bundle::StepKind::contraction: {
      // TMA reads tensors of up to 5 dimensions: operands of more run the copies of the MMA
      // warps.
      const ContractionShape& cs = *step.sk->contraction;
      const auto most = static_cast<int>(bundle::kMaxTensorMapRank);
      const bool tma = cs.a.rank <= most && cs.b.rank <= most;
      const int bytes = static_cast<int>(size_of(cs.a.dtype));
      if (cs.fma()) {
        // f32 on CUDA cores: the tiles the MMA warps copy (cp.async), without wgmma or TMA;
        // 128 x 256 by default (2 x 4 warps of 64 x 64: the most FMAs per operand load),
        // measured on an H200 the fastest at 4096^3 and 3000 x 5000 x 1000 with either
        // layout of B, 1-2.5% ahead of 256 x 128 and 5-26% of 128 x 128
        // (bench/results/2026-11-30-h200-tf32, call 5).
        for (const ContractionConfig& c : contraction_config_space()) {
          if (!c.wgmma && !c.tma) space.push_back(with_element_bytes(c, bytes));
        }
        for (const AnyConfig& c : space) {
          const auto& cc = std::get<ContractionConfig>(c);
          if (cc.tile_m == 128 && cc.tile_n == 256) def = c;
        }
        break;
      }
      for (const ContractionConfig& c : contraction_config_space()) {
        if (tma || !c.tma) space.push_back(with_element_bytes(c, bytes));
      }
      // An epilogue with transcendental functions stages its accumulators through shared
      // memory (one copy of its code; the heavy default is a TMA config: without TMA the
      // 128 x 256 tiles copied by the MMA warps, as before). In clusters of two, as the plain
      // default, when its functions are approximated (fast_functions): under sustained load on
      // an H200, the bias + erf-GELU GEMM in 448.8 / 321.9 us at 8192 x 4096 x 4096 /
      // 2048 x 11008 x 4096, against 454.4 / 326.9 alone and 466.0 / 337.2 from registers
      // (bench/results/2026-11-27-h200-fast-erf, call 3); alone where one is a libdevice call
      // (clusters were 2% slower with libdevice's erf at 8192 x 4096 x 4096:
      // bench/results/2026-11-26-h200-cluster).
      ContractionConfig d = with_element_bytes(default_contraction_config(), bytes);
      if (tma && transcendental_epilogue(step.sk->def, false)) {
        d = with_element_bytes(default_contraction_config_heavy(), bytes);
        if (!transcendental_epilogue(step.sk->def, step.fast_functions)) {
          d.cluster = default_contraction_config().cluster;
        }
      }
      if (!tma) {  // nor clusters, which share tiles through TMA, nor TMA stores
        d.tma = 0;
        d.cluster = 1;
        d.tma_store = 0;
      }
      def = d;
      break;
    }
  }
  for (const AnyConfig& c : space) {
    PlannedVariant v = plan_variant(step, c);
    v.is_default = c == def;
    if (v.is_default) step.default_variant = static_cast<int>(step.variants.size());
    step.variants.push_back(std::move(v));
  }
  internal_check(std::count_if(step.variants.begin(), step.variants.end(),
                               [](const PlannedVariant& v) { return v.is_default; }) == 1,
                 "plan: a step's space must hold its default exactly once");
  if (reads_strided(step)) {  // last: the other variants keep their ids
    for (const auto& [config, limit] : strided_configs(step)) {
      step.strided_variant = static_cast<int>(step.variants.size());
      step.variants.push_back(plan_variant(step, config));
      step.variants.back().max_reduced = limit;
    }
  }
  // Variant i is space[i]: a row tier links its shifting twin (config.h row_shift_twin).
  for (const auto& [tier, twin] : twins) step.variants[tier].odd_rows = static_cast<int>(twin);
  // A TMA variant's fallback, for operands without tensor maps: the first variant of the
  // same tiles, blocks per SM and MMA whose MMA warps copy (measured on an H200, 4096 x 4096
  // x 4095: 1089 us against the producer warpgroup's 1948: bench/results/2026-11-24-h200-tma).
  // A ping-pong variant's tiles (64 x 256) may have no such twin: then the first of the same
  // tile_n.
  for (PlannedVariant& v : step.variants) {
    const auto* c = std::get_if<ContractionConfig>(&v.config);
    if (!c || !c->tma) continue;
    for (bool exact : {true, false}) {
      for (size_t w = 0; w < step.variants.size() && v.tile.map_fallback < 0; ++w) {
        const auto* o = std::get_if<ContractionConfig>(&step.variants[w].config);
        if (o && !o->tma && o->wgmma == c->wgmma && o->tile_n == c->tile_n &&
            (!exact || (o->tile_m == c->tile_m && o->ctas_per_sm == c->ctas_per_sm))) {
          v.tile.map_fallback = static_cast<int>(w);
        }
      }
    }
  }
}

// "8 threads x 16 elements per row, 16 rows per block".
std::string row_shape_text(const ReductionConfig& c) {
  std::string s =
      fmt::format("{} thread(s) x {} element(s) per row", c.group, int64_t{c.vec} * c.items);
  if (c.block / c.group > 1) s += fmt::format(", {} rows per block", c.block / c.group);
  return s;
}

// The name of the tile loop's dimension (Tiling::dims) that ends in step variable `last`: "s2",
// or "(s1, s2)" for variables joined into one.
std::string tile_dim_text(const PointwiseStep& p, int last) {
  for (const std::vector<int>& dim : p.tiling.dims(static_cast<int>(p.vars.size()))) {
    if (dim.back() != last) continue;
    if (dim.size() == 1) return p.vars[static_cast<size_t>(last)];
    std::vector<std::string> names;
    for (int v : dim) names.push_back(p.vars[static_cast<size_t>(v)]);
    return fmt::format("({})", fmt::join(names, ", "));
  }
  throw InternalError("plan: a tiled variable that ends no dimension");
}

// The runs of joined variables (Tiling::joined), "(s1, s2)" each, and their extents, "H*D";
// empty when none.
std::vector<std::pair<std::string, std::string>> joined_dims_text(const PointwiseStep& p) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::vector<int>& dim : p.tiling.dims(static_cast<int>(p.vars.size()))) {
    if (dim.size() == 1) continue;
    std::vector<Dim> extents;
    for (int v : dim) extents.push_back(p.space[static_cast<size_t>(v)]);
    out.emplace_back(tile_dim_text(p, dim.back()), product_text(extents));
  }
  return out;
}

std::string limit_text(int64_t limit) {
  return limit == INT64_MAX ? "any" : std::to_string(limit);
}

// A scan step's rule in words: the split for few long rows, the tiers by row length (row
// scans), or the one default (outer scans).
template <class Line>
void explain_scan_rule(const StepPlan& step, const bundle::StepRule& rule, Line&& line) {
  const std::string L = product_text(step.reduced);
  const std::string axis =
      scan_statement(*step.sk).indices[static_cast<size_t>(*step.sk->scan_axis)];
  const std::string ind = rule.split >= 0 ? "  " : "";
  if (rule.split >= 0) {
    const PlannedVariant& v = step.variants[static_cast<size_t>(rule.split)];
    line(fmt::format(
        "rows < the GPU's SMs and {} >= {}: variant {} ({}), each row spread over blocks "
        "that take its tiles in order, each tile scanned from the carry of the tiles before it "
        "(a single pass with a look-back through a workspace that a first launch clears; each "
        "block loads its next tile before it looks back for the one it holds)",
        L, int64_t{bundle::kSplitMinBlocks} * bundle::kSplitMinChunks * v.split.chunk, rule.split,
        config_text(v.config)));
    line("else:");
  }
  if (rule.tiers.empty()) {
    const PlannedVariant& def = step.variants[static_cast<size_t>(step.default_variant)];
    const auto& c = std::get<ScanConfig>(def.config);
    line(
        fmt::format("{}variant {} ({}): {} column(s) per block, {} per thread (scalar, coalesced "
                    "across the warp), walking down {} with {} step(s) loaded ahead",
                    ind, step.default_variant, config_text(def.config), def.elements_per_block,
                    c.vec, axis, c.items));
  }
  for (size_t t = 0; t < rule.tiers.size(); ++t) {
    const auto [limit, vi] = rule.tiers[t];
    const PlannedVariant& v = step.variants[static_cast<size_t>(vi)];
    const auto& c = std::get<ScanConfig>(v.config);
    std::string when = t + 1 < rule.tiers.size() ? fmt::format("{} <= {}", L, limit)
                       : t == 0                  ? std::string("every length")
                                : fmt::format("{} > {}", L, rule.tiers[t - 1].first);
    line(fmt::format(
        "{}{}: variant {} ({}), {} per row, chunks of {} carrying the prefix, {} a step{}", ind,
        when, vi, config_text(v.config),
        c.group == 32 ? std::string("a warp") : fmt::format("{} threads", c.group), c.chunk(),
        c.items, c.vec > 1 ? " (vectors: the next step's load during this one's scan)" : ""));
  }
}

}  // namespace

bool StepPlan::row_scan() const {
  return sk && sk->scan_axis && *sk->scan_axis + 1 == static_cast<int>(sk->space.size());
}

int StepPlan::looping_passes() const {
  return looped_fusion() != LoopedFusion::none ? passes.looped : passes.held;
}

bool StepPlan::spread_tiers() const {
  return kind == bundle::StepKind::row_reduction && max_vec == 4 && passes.held == 1 &&
         !passes.stores_elements;
}

LoopedFusion StepPlan::looped_fusion() const {
  if (passes.fused.empty()) return LoopedFusion::none;
  if (passes.looped == 1) return LoopedFusion::many;
  return !passes.welford && max_vec <= 4 ? LoopedFusion::largest : LoopedFusion::none;
}

PlannedVariant plan_variant(const StepPlan& step, const AnyConfig& config) {
  PlannedVariant v;
  v.config = config;
  if (const auto* p = std::get_if<PointwiseConfig>(&config)) {
    v.block_threads = p->block;
    v.elements_per_block = p->elements_per_block();
    v.strided = p->strided;
    // The flat kernel's entries (compiler/lower_pointwise.cpp, step 6): a strided variant has
    // one entry, tiles their own kernel.
    if (!p->strided && !p->tiled()) {
      v.general = true;
      v.row_multiple = p->vec > 1 && has_row_aligned_form(step.pointwise) ? p->vec : 0;
      // Heavy steps: two tiers by the launch's elements (config.h), the reduced extent being 1.
      if (step.pointwise.work_per_byte >= kHeavyWorkPerByte && !step.pointwise.tiling.tiled()) {
        if (*p == default_pointwise_config(step.max_vec)) v.max_reduced = 1;
        if (*p == heavy_pointwise_config(step.max_vec)) {
          v.max_reduced = 1;
          v.min_rows_per_sm = kHeavyMinElementsPerSm;
        }
      }
    }
    return v;
  }
  if (const auto* t = std::get_if<ContractionConfig>(&config)) {
    v.block_threads = t->threads();
    v.elements_per_block = int64_t{t->tile_m} * t->tile_n;
    v.tile = {t->tile_m, t->tile_n, t->ctas_per_sm,
              t->smem_bytes(static_cast<int>(size_of(step.sk->contraction->a.dtype))),
              contraction_tensor_maps(*step.abi, *step.sk, *t)};
    v.tile.cluster = std::max(t->cluster, 1);
    // Split-K: two phases on the same grid, one f32 word per element of a block's tile
    // (manifest.h), the reduced extent taken tile_k at a time.
    if (t->split) v.split = {2, 1, t->tile_k};
    return v;
  }
  if (const auto* sc = std::get_if<ScanConfig>(&config)) {
    v.block_threads = sc->block;
    if (step.row_scan()) {
      v.elements_per_block = sc->block / sc->group;
      v.max_reduced = row_scan_tier_limit(*sc, step.max_vec);
      if (sc->split) v.split = {2, kLookbackSlots, sc->chunk()};
    } else {
      v.elements_per_block = int64_t{sc->block} * sc->vec;
    }
    return v;
  }
  const auto& c = std::get<ReductionConfig>(config);
  const bool row = step.kind == bundle::StepKind::row_reduction;
  v.strided = c.strided;
  v.general = has_index32_entry(step.kind, c);
  v.block_threads = c.block;
  v.elements_per_block = rows_per_block(step.kind, c);
  if (row && !c.strided) {
    v.max_reduced = row_heuristic_limit(c, step.max_vec, step.looped_fusion(), step.spread_tiers());
    v.min_rows_per_sm = row_many_rows_per_sm(c, step.max_vec, step.looped_fusion());
  }
  // Outer steps: the variants the rule runs for short columns carry their limit (bundle/rule.h).
  if (step.kind == bundle::StepKind::outer_reduction && !c.strided && !c.stage) {
    const std::vector<ReductionConfig> shorts = short_outer_configs(step.max_vec);
    const ReductionConfig short_split = short_outer_split_config(step.max_vec);
    if (!c.split && std::find(shorts.begin(), shorts.end(), c) != shorts.end()) {
      v.max_reduced = bundle::kShortOuterMaxReduced;
    } else if (c == short_split && c != default_outer_split_config(step.max_vec) &&
               c != narrow_outer_split_config(step.max_vec)) {
      v.max_reduced = bundle::kShortSplitMaxReduced;
    }
  }
  if (c.split) {
    // The elements of the reduced extent a block walks per iteration.
    const int64_t chunk = row ? c.capacity() : int64_t{c.group} * c.items;
    // Outer: the fitted deep splits run where the deep one does, from kDeepSplitMinReduced.
    const std::vector<ReductionConfig> fitted = fitted_outer_split_configs(step.max_vec);
    const bool fits = !row && std::find(fitted.begin(), fitted.end(), c) != fitted.end();
    v.split = {step.split.phases, step.split.slots, chunk,
               row ? bundle::split_min_reduced(step.row_bytes_per_element * step.looping_passes())
               : fits ? bundle::kDeepSplitMinReduced
                      : 0};
    // A split row's last phase that only stores runs in the row's first block alone
    // (compiler/lower/reduction_split.cpp), so the runtime launches it one block per row.
    v.split.lead_last = row && step.split.last_only_stores;
  }
  if (c.stage && c.strided) {  // a tile, for rows of any length
    v.stage = {step.tile.bytes_per_element, rows_per_block(step.kind, c), 1,
               reduction::kTileRowAlign};
  } else if (c.stage) {
    v.stage = {step.stage_bytes_per_element, rows_per_block(step.kind, c), c.vec};
  }
  return v;
}

std::string config_text(const AnyConfig& c) {
  return std::visit([](const auto& x) { return config_text(x.as_map()); }, c);
}

std::unique_ptr<KernelPlan> plan_kernel(const KernelDef& k) {
  auto plan = std::make_unique<KernelPlan>();
  plan->kernel = &k;
  plan->schedule = schedule_kernel(k);
  const Schedule& s = plan->schedule;
  auto add_pointwise = [&](const KernelDef& abi, const std::vector<PointwiseStep>& steps) {
    for (const PointwiseStep& st : steps) {
      StepPlan& p = plan->steps.emplace_back();
      p.kind = bundle::StepKind::pointwise;
      p.abi = &abi;
      p.space = st.space;
      p.pointwise = st;
      p.fast_functions = st.fast_functions;
      p.max_vec = max_vector_width(abi, st);
      plan_variants(p);
    }
  };
  // Strided inputs: contractions (whose entry ends in its tensor maps' flag) and scans do not
  // read strides yet.
  for (const TensorDecl& in : k.inputs) {
    if (!in.strided) continue;
    for (const ScheduledKernel& sk : s.kernels) {
      if (sk.kind == StepKind::contraction ||
          (sk.kind == StepKind::scan && loads_tensor(sk.def, in.name))) {
        throw UserError(in.loc, fmt::format("strided input '{}' in a kernel with a {} (not "
                                            "supported yet): declare it without 'strided'",
                                            in.name, to_string(sk.kind)));
      }
    }
  }
  const bool all_pointwise =
      std::all_of(s.kernels.begin(), s.kernels.end(),
                  [](const ScheduledKernel& sk) { return sk.kind == StepKind::pointwise; });
  if (all_pointwise) {
    add_pointwise(k, plan_pointwise(k));
    return plan;
  }
  for (const ScheduledKernel& sk : s.kernels) {
    const KernelDef& abi = s.buffers.empty() && !reads_kernel_output(k, sk.def)
                               ? k
                               : plan->abis.emplace_back(step_abi(k, s, sk.def));
    if (sk.kind == StepKind::pointwise) {
      add_pointwise(abi, plan_sub_pointwise(abi, sk.def));
      continue;
    }
    StepPlan& p = plan->steps.emplace_back();
    p.kind = sk.kind;
    p.abi = &abi;
    p.sk = &sk;
    p.space = sk.space;
    p.reduced = sk.reduced;
    if (p.kind == StepKind::scan) {
      // The rows are the space but the scanned index; 16-byte vectors of the narrowest tensor.
      const auto axis = static_cast<size_t>(*sk.scan_axis);
      p.space.erase(p.space.begin() + static_cast<std::ptrdiff_t>(axis));
      p.reduced = {sk.space[axis]};
      size_t narrowest = 4;
      for (const TensorDecl* t : sk.def.params()) {
        if (t->role == TensorRole::output || loads_tensor(sk.def, t->name))
          narrowest = std::min(narrowest, size_of(t->dtype));
      }
      p.max_vec = static_cast<int>(16 / narrowest);
      plan_variants(p);
      continue;
    }
    if (p.kind == StepKind::contraction) {
      // 16-byte copies of the operands' tiles (cp.async) where their layout allows.
      p.max_vec = 16 / static_cast<int>(size_of(sk.contraction->a.dtype));
      p.fast_functions = fast_functions(stored_types(sk.def), statement_values(sk.def));
      plan_variants(p);
      continue;
    }
    p.max_vec = reduction_vector_width(sk);
    p.split = split_shape(abi, sk);
    if (p.kind == StepKind::row_reduction) {
      p.passes = row_passes(abi, sk);
      p.stage_bytes_per_element = stage_bytes_per_element(abi, sk);
      p.tile = tile_shape(abi, sk);
      p.row_bytes_per_element = row_bytes_per_element(abi, sk);
      p.reads_row_invariant = reads_row_invariant_inputs(abi, sk);
    }
    plan_variants(p);
  }
  return plan;
}

namespace {

// The largest unit roundoff of a term the spec rounds inside a sum or scan of step `sk`: a
// cast to f16 or bf16 in the body (through the pointwise temporaries it reads), or a read of a
// buffer stored in such a type (a lifted contraction operand, which a cast wrote). The GPU
// computes the value it rounds in f32 where the interpreter does in f64, so now and then a term
// rounds the other way: that costs the sum up to one unit roundoff of the term, which is at
// most that of the output's scale where no term is larger. A cut to tf32 of a computed value,
// anywhere (its f32 result is a step's output as it is), may cut the other way the same:
// kTf32Roundoff; a cut of a read of one of the spec's inputs is exact. The harness adds it to its
// tolerance (manifest steps[].approx_error), the largest of a kernel's steps.
double rounded_terms_error(const Schedule& schedule, const StepPlan& step) {
  std::map<std::string, const Expr*> temps;  // pointwise temporaries, recomputed where read
  std::vector<Expr> values;                  // the step's statements'
  if (step.sk) {
    for (const Stmt& st : step.sk->def.body) {
      if (recomputed_temp(step.sk->def, st)) temps[st.target] = &st.value;
      values.push_back(st.value);
    }
  } else {
    for (const StepStore& st : step.pointwise.stores) values.push_back(st.value);
  }
  double u = 0;
  std::function<void(const Expr&, bool)> walk = [&](const Expr& e, bool summed) {
    if (const Cast* c = e.as<Cast>(); c && summed) u = std::max(u, narrow_roundoff(c->to));
    if (const Unary* t = e.as<Unary>(); t && t->op == UnaryOp::tf32) {
      Expr a = wrap(t->a);
      if (const Cast* widened = a.as<Cast>()) a = wrap(widened->a);
      const Load* read = a.as<Load>();
      const bool input =
          read && std::any_of(schedule.normalized.inputs.begin(), schedule.normalized.inputs.end(),
                              [&](const TensorDecl& in) { return in.name == read->tensor; });
      if (!input) u = std::max(u, kTf32Roundoff);
    }
    if (const Load* l = e.as<Load>()) {
      if (summed) {
        for (const TensorDecl& b : schedule.buffers) {
          if (b.name == l->tensor) u = std::max(u, narrow_roundoff(b.dtype));
        }
      }
      if (auto it = temps.find(l->tensor); it != temps.end()) walk(*it->second, summed);
    }
    const bool inner = summed || e.as<Reduce>() || e.as<Scan>();
    for_each_child(e, [&](const Expr& c) { walk(c, inner); });
  };
  for (const Expr& v : values) walk(v, false);
  return u;
}

}  // namespace

std::string entry_name(const std::string& kernel, size_t step, size_t variant) {
  return fmt::format("{}_s{}_v{}", kernel, step, variant);
}

bundle::Step manifest_step(const KernelPlan& plan, size_t si, const std::vector<std::string>& archs,
                           bool default_only, std::vector<int>* planned) {
  const StepPlan& step = plan.steps[si];
  const std::string& kernel = plan.kernel->name;
  bundle::Step bs;
  bs.name = fmt::format("{}_s{}", kernel, si);
  bs.kind = step.kind;
  bs.space = step.space;
  bs.reduced = step.reduced;
  if (step.fast_functions) bs.approx_error = kApproxError;
  bs.approx_error = std::max(bs.approx_error, rounded_terms_error(plan.schedule, step));
  std::vector<int> written(step.variants.size(), -1);  // plan index -> manifest id
  // --default-only keeps the default, its odd-row twin and the strided variant.
  const int default_twin = step.variants[static_cast<size_t>(step.default_variant)].odd_rows;
  for (size_t pi = 0; pi < step.variants.size(); ++pi) {
    const PlannedVariant& pv = step.variants[pi];
    if (default_only && !pv.is_default && !pv.strided && static_cast<int>(pi) != default_twin) {
      continue;
    }
    const int id = static_cast<int>(bs.variants.size());
    written[pi] = id;
    bs.variants.push_back(manifest_variant(pv, id, entry_name(kernel, si, id), archs));
    if (planned) planned->push_back(static_cast<int>(pi));
  }
  // A map fallback or twin the bundle does not hold (--default-only) is none.
  for (bundle::Variant& v : bs.variants) {
    if (v.tile.map_fallback >= 0)
      v.tile.map_fallback = written[static_cast<size_t>(v.tile.map_fallback)];
    if (v.odd_rows >= 0) v.odd_rows = written[static_cast<size_t>(v.odd_rows)];
  }
  for (const auto& [limit, pi] : step.few_rows) {
    if (written[static_cast<size_t>(pi)] >= 0)
      bs.few_rows.emplace_back(limit, written[static_cast<size_t>(pi)]);
  }
  if (const Tiling& t = step.pointwise.tiling;
      step.kind == bundle::StepKind::pointwise && t.tiled()) {
    const std::vector<std::vector<int>> dims = t.dims(static_cast<int>(step.space.size()));
    for (const std::vector<int>& dim : dims) {
      if (dim.back() == t.across) bs.tile_across = dim;
    }
    bs.tile_inner = dims.back();
    bs.tile_elementwise = !t.odd_shifted;
  }
  return bs;
}

bundle::Variant manifest_variant(const PlannedVariant& pv, int id, const std::string& entry,
                                 const std::vector<std::string>& archs) {
  bundle::Variant v;
  v.id = id;
  v.entry = entry;
  v.config = std::visit([](const auto& c) { return c.as_map(); }, pv.config);
  v.block_threads = pv.block_threads;
  v.elements_per_block = pv.elements_per_block;
  v.max_reduced = pv.max_reduced;
  v.min_rows_per_sm = pv.min_rows_per_sm;
  v.split = pv.split;
  v.stage = pv.stage;
  v.tile = pv.tile;
  v.strided = pv.strided;
  v.odd_rows = pv.odd_rows;
  if (pv.general) v.general = {general_entry_name(entry), pv.row_multiple};
  v.is_default = pv.is_default;
  // A wgmma variant's Hopper image is the arch-specific one (wgmma exists on sm_90a only);
  // the runtime prefers it on sm_90 devices, and its other images run mma.sync.
  const auto* cc = std::get_if<ContractionConfig>(&pv.config);
  const bool hopper =
      cc && cc->wgmma && std::find(archs.begin(), archs.end(), "sm_90a") == archs.end();
  for (std::string arch : archs) {
    if (hopper && arch == "sm_90") arch = "sm_90a";
    v.images.push_back({arch, fmt::format("{}.{}.ptx", entry, arch), "", 0, 0, 0, "", ""});
  }
  return v;
}

std::string explain_rule(const KernelPlan& plan, size_t si, const std::string& indent) {
  const StepPlan& step = plan.steps[si];
  std::string out;
  auto line = [&](const std::string& s) { out += indent + s + "\n"; };
  const PlannedVariant& def = step.variants[static_cast<size_t>(step.default_variant)];
  // The runtime's own rule (bundle/rule.h) on the manifest step this plan writes; the SM count
  // only matters when it is evaluated for a launch.
  const bundle::Step written = manifest_step(plan, si, {});
  const bundle::StepRule rule = bundle::step_rule(
      written, std::vector<bool>(written.variants.size(), true), {1, /*memory_pools=*/true});
  if (step.strided_variant >= 0) {
    std::vector<std::string> names;
    for (const TensorDecl* t : step.abi->params()) {
      if (t->strided) names.push_back(t->name);
    }
    const PlannedVariant& sv = step.variants[static_cast<size_t>(step.strided_variant)];
    if (sv.stage.row_align == 0) {
      line(
          fmt::format("strides of {} not the contiguous ones: variant {} ({}), scalar loads at "
                      "sum(index * stride) in 64 bits",
                      fmt::join(names, ", "), step.strided_variant, config_text(sv.config)));
    } else {
      line(fmt::format("strides of {} not the contiguous ones:", fmt::join(names, ", ")));
      const std::string R = product_text(step.reduced);
      for (const auto& [limit, v] : rule.strided_tiers) {
        const PlannedVariant& tv = step.variants[static_cast<size_t>(v)];
        line(fmt::format("  {} <= {}: variant {} ({}), {} rows per block{}", R, limit, v,
                         config_text(tv.config), tv.elements_per_block,
                         tv.stage.row_align > 0 ? ", tiled"
                                                : ": scalar loads at sum(index * stride) in 64 "
                                                  "bits, the row on chip"));
      }
      const auto& c = std::get<ReductionConfig>(sv.config);
      line(fmt::format(
          "  {}variant {} ({}), {} rows per block, tiled{}",
          rule.strided_tiers.empty() ? "" : "else: ", step.strided_variant, config_text(sv.config),
          sv.elements_per_block,
          tile_blocks_per_sm(c) > 0
              ? fmt::format(", {} blocks an SM at most {} registers each", tile_blocks_per_sm(c),
                            65536 / (tile_blocks_per_sm(c) * c.block))  // 64K an SM
              : ""));
      line(fmt::format(
          "  tiled: a block's rows of them in a tile of shared memory ({} byte(s) per element, "
          "rows "
          "aligned to {}), copied along the rows or across them, whichever stride is smaller, "
          "at sum(index * stride) in 64 bits (across them with a row stride of 1, the other "
          "strides and the pointer multiples of 16 bytes and the last row extent of whole "
          "blocks: a column of the block's rows as one 16-byte vector); {}-element vectors from "
          "it when {} is a multiple of {} and the other pointers are aligned; when the tile "
          "does not fit, scalar loads through the strides",
          sv.stage.bytes_per_element, sv.stage.row_align, c.vec, R, c.vec));
    }
    line("contiguous strides:");
  }
  if (step.kind == bundle::StepKind::pointwise) {
    // Heavy steps' tiers (config.h): the one for many elements per SM first.
    std::vector<int> tiers;
    for (const auto& [limit, v] : rule.tiers) tiers.push_back(v);
    std::sort(tiers.begin(), tiers.end(), [&](int a, int b) {
      return step.variants[static_cast<size_t>(a)].min_rows_per_sm >
             step.variants[static_cast<size_t>(b)].min_rows_per_sm;
    });
    if (tiers.size() == 2) {
      const PlannedVariant& many = step.variants[static_cast<size_t>(tiers[0])];
      line(fmt::format(
          "an estimated {:.1f} instructions per byte moved (>= {}): elements >= {} x SMs: variant "
          "{} ({}), more vectors in flight per thread",
          step.pointwise.work_per_byte, kHeavyWorkPerByte, many.min_rows_per_sm, tiers[0],
          config_text(many.config)));
      line(fmt::format("else: variant {} ({})", tiers[1],
                       config_text(step.variants[static_cast<size_t>(tiers[1])].config)));
    } else {
      line(fmt::format("{}: variant {} ({}) (an estimated {:.1f} instructions per byte moved)",
                       rule.odd_tiles >= 0 ? "every size but those below" : "every size",
                       step.default_variant, config_text(def.config),
                       step.pointwise.work_per_byte));
    }
    if (step.fast_functions) line("  " + fast_functions_line(step));
    const bool rows = step.max_vec > 1 && has_row_aligned_form(step.pointwise);
    line(fmt::format(
        "  {}each variant's own entry computes 32-bit indices{}; steps of more than 2^31 - 1 "
        "elements{} run its general entry (every form, 64-bit indices){}",
        step.pointwise.tiling.tiled() ? "the flat kernel's variants: " : "",
        rows ? " and, with vectors, reads rows a multiple of its vector" : "",
        rows ? " or with rows that are not" : "",
        step.strided_variant >= 0 ? "; the strided variant has one entry, for every launch" : ""));
    if (const Tiling& t = step.pointwise.tiling; t.tiled()) {
      const auto& c = std::get<PointwiseConfig>(def.config);
      const std::string across = tile_dim_text(step.pointwise, t.across);
      const std::string inner =
          tile_dim_text(step.pointwise, static_cast<int>(step.pointwise.vars.size()) - 1);
      const std::string odd =
          t.shifts(c.vec, c.tile_in, c.tile_out)
              ? fmt::format(
                    "else aligned {}-element vectors, each tile's part of an output row "
                    "shifted along {} to start at a multiple of {} ({} x {} elements in "
                    "shared memory)",
                    c.vec, inner, c.vec, c.tile_out + c.vec, c.tile_in + c.vec)
              : "else element by element";
      const std::string rows =
          t.aligned_rows(c.vec, c.tile_in, c.tile_out)
              ? fmt::format(
                    "else, where {} is a multiple of {}, aligned vectors loaded and each tile's "
                    "part of an output row shifted as shared memory is read ({} x {} elements), ",
                    across, c.vec, c.tile_in, c.tile_out + c.vec)
              : "";
      line(fmt::format(
          "  tiles of {} {} x {} {} through shared memory, {} x {} blocks per thread: loads "
          "along {}, stores along {}, {}-element vectors when the extents of {} and {} are "
          "multiples of {}, {}{}",
          c.tile_in, across, c.tile_out, inner, c.vec, c.vec, across, inner, c.vec, across, inner,
          c.vec, rows, odd));
      if (const int blocks = t.blocks_per_sm(c.vec, c.tile_in, c.tile_out, c.block)) {
        line(fmt::format(
            "  {} blocks an SM, at most {} registers a thread (the {} that the words its "
            "hungriest path keeps in flight and 32 take)",
            blocks, registers_allowed(blocks, c.block),
            t.registers(c.vec, c.tile_in, c.tile_out, c.block)));
      }
      for (const auto& [dim, extent] : joined_dims_text(step.pointwise)) {
        line(
            fmt::format("  {} one dimension of {} elements (every load reads them as "
                        "consecutive dimensions)",
                        dim, extent));
      }
      if (rule.odd_tiles >= 0) {  // bundle/rule.h tiled_variant
        const PlannedVariant& odd = step.variants[static_cast<size_t>(rule.odd_tiles)];
        const auto& oc = std::get<PointwiseConfig>(odd.config);
        const bool smaller = rule.odd_tiles_smaller;
        const std::string rows =
            smaller ? fmt::format("{} not a multiple of {}", across, c.vec)
                    : fmt::format("extents of {} or {} not multiples of {}", across, inner, c.vec);
        const std::string few =
            smaller ? fmt::format(
                          ", or ceil({} / {}) x ceil({} / {}) x the other extents < {} x "
                          "the GPU's SMs (few tiles)",
                          across, c.tile_in, inner, c.tile_out, bundle::kFewTilesPerSm)
                    : "";
        line(fmt::format(
            "{}, or {} below {} or {} below {} (half the tiles' sides){}: variant {} ({}), {} "
            "elements a thread where the default's hold {} (measured faster there on an H200)",
            rows, across, c.tile_in / 2, inner, c.tile_out / 2, few, rule.odd_tiles,
            config_text(odd.config), oc.elements_per_block() / oc.block,
            c.elements_per_block() / c.block));
        if (smaller) {
          line(fmt::format(
              "  ({} alone not a multiple of {} keeps the default's tiles, whose input rows load "
              "aligned: measured faster there on an H200)",
              inner, c.vec));
        }
      }
    }
  } else if (step.kind == bundle::StepKind::contraction) {
    // Smaller tiles when the default's leave more than half the SMs idle: the largest that
    // give half of them a tile, else the smallest (bundle/rule.h heuristic_variant).
    const bool smaller = !rule.smaller.empty() && rule.chosen == step.default_variant;
    if (smaller) {
      line(
          fmt::format("2 ceil(elements / {}) < the GPU's SMs (tiles of {} x {} leave half of "
                      "them idle):",
                      def.elements_per_block, def.tile.m, def.tile.n));
      if (rule.contraction_split >= 0) {
        // bundle/rule.h contraction_split_blocks.
        const PlannedVariant& v = step.variants[static_cast<size_t>(rule.contraction_split)];
        const std::string K = product_text(step.reduced);
        line(fmt::format(
            "  2 ceil(elements / {}) < the GPU's SMs, ceil({} / {}) >= {} and S = min(SMs / "
            "tiles, ceil({} / {}) / {}) >= 3 (or 2 with ceil({} / {}) >= {}): variant {} ({}), "
            "split-K: tiles of {} x {}, each tile's {} over S blocks, 2 launches through a "
            "workspace (in the second each of a tile's S blocks adds the tile's S f32 partial "
            "sums in order for its part of the tile, and runs the epilogue there; an H200 "
            "measured it faster there than the tiles below)",
            v.elements_per_block, K, v.split.chunk, bundle::kContractionSplitMinReduced, K,
            v.split.chunk, bundle::kContractionSplitMinSteps, K, v.split.chunk,
            bundle::kContractionSplitLongReduced, rule.contraction_split, config_text(v.config),
            v.tile.m, v.tile.n, K));
      }
      for (size_t i = 0; i < rule.smaller.size(); ++i) {
        const int id = rule.smaller[i];
        const PlannedVariant& v = step.variants[static_cast<size_t>(id)];
        line(fmt::format(
            "  {}variant {} ({}), tiles of {} x {}",
            i + 1 < rule.smaller.size()
                ? fmt::format("2 ceil(elements / {}) >= the GPU's SMs: ", v.elements_per_block)
                : std::string(i > 0 ? "else: " : ""),
            id, config_text(v.config), v.tile.m, v.tile.n));
      }
      line("else:");
    }
    line(
        fmt::format("{}variant {} ({}): tiles of {} x {}, at most {} block(s) per SM walking "
                    "them",
                    smaller ? "  " : "", step.default_variant, config_text(def.config), def.tile.m,
                    def.tile.n, def.tile.ctas_per_sm));
    if (def.tile.cluster > 1) {
      line(fmt::format(
          "on sm_90a in clusters of {} blocks along M, each copying 1/{} of B's tile into all of "
          "them (TMA multicast): L2 serves B's tiles once per cluster (1-2.5% faster under "
          "sustained load on an H200, measured)",
          def.tile.cluster, def.tile.cluster));
    }
    // plan_variants made it the default only for a transcendental epilogue.
    const auto* dc = std::get_if<ContractionConfig>(&def.config);
    const bool staged = dc && dc->smem_epilogue;
    const bool stored = def.tile.stores_output();
    if (stored) {
      line(fmt::format(
          "its output is stored by TMA through a tensor map of it the runtime encodes at "
          "launch: each MMA warpgroup writes its 64 rows to shared memory 128 bytes of columns "
          "at a time and one thread stores each chunk, which runs on while the warps go on "
          "(bias + erf-GELU 0.90x, batched GEMMs 0.90-0.94x the time of the epilogue without "
          "it on an H200, measured); when the map cannot be encoded (a pointer not 16-byte "
          "aligned, rows not a multiple of 16 bytes) the same kernel stores {}",
          staged ? "as below" : "from registers"));
    }
    if (staged) {
      line(std::string(stored ? "without the output's map, its" : "its") +
           " epilogue evaluates a transcendental function: the accumulators go through "
           "shared memory, 32 columns at a time, to one copy of the epilogue's code in a loop "
           "(unrolled over every accumulator, an erf-GELU epilogue waited on instruction fetch: "
           "1.1-1.2x faster on an H200, measured)");
    }
    if (step.fast_functions) line(fast_functions_line(step));
    if (!def.tile.tensor_maps.empty()) {
      line(
          "its operands are copied by TMA through tensor maps the runtime encodes at launch; "
          "when one cannot be (a pointer not 16-byte aligned, rows not a multiple of 16 bytes), " +
          (def.tile.map_fallback >= 0
               ? fmt::format("variant {} runs instead", def.tile.map_fallback)
               : std::string("by its producer warps")));
    }
    line(fmt::format(
        "operands whose contiguous extent is not a multiple of {} or whose pointer is not "
        "16-byte aligned load element by element (the kernel checks at launch)",
        16 / size_of(step.sk->contraction->a.dtype)));
    return out;
  } else if (step.kind == bundle::StepKind::scan) {
    explain_scan_rule(step, rule, line);
  } else {
    const std::string R = product_text(step.reduced);
    const int sv = rule.split;
    // The split variant's line: when it runs (after `rows`, the narrow split's condition;
    // `when`, the reduced extent's, else the one every split needs, after `upto`).
    auto split_line = [&](int vi, const std::string& rows, const std::string& when = "",
                          const std::string& upto = "") {
      const PlannedVariant& v = step.variants[static_cast<size_t>(vi)];
      const std::string longer =
          v.split.min_reduced > 0 && step.kind == bundle::StepKind::row_reduction
              ? fmt::format(
                    "{} >= {} ({} byte(s) an element x {} pass(es) of the looping tier: {} "
                    "KiB or more a row; one block walks fewer faster, measured) and ",
                    R, v.split.min_reduced, step.row_bytes_per_element, step.looping_passes(),
                    bundle::kSplitMinRowBytes / 1024)
              : std::string();
      const std::string needs = fmt::format(
          "{}{}{} >= {} ({}+ blocks per tile in one wave of resident blocks, {}+ chunks of {} "
          "each)",
          upto, longer, R,
          int64_t{bundle::kSplitMinBlocks} * bundle::kSplitMinChunks * v.split.chunk,
          step.kind == bundle::StepKind::outer_reduction ? bundle::kOuterSplitMinBlocks
                                                         : bundle::kSplitMinBlocks,
          bundle::kSplitMinChunks, v.split.chunk);
      line(fmt::format(
          "{}ceil(rows / {}) < the GPU's SMs and {}: variant {} ({}), {} spread over blocks, {} "
          "launches through a workspace{}",
          rows, v.elements_per_block, when.empty() ? needs : when, vi, config_text(v.config), R,
          v.split.phases,
          v.split.lead_last ? " (the last, which only stores, one block per row)" : ""));
    };
    // Short columns first: one launch with the most threads along the reduced index.
    for (const int vi : rule.short_outer) {
      const PlannedVariant& v = step.variants[static_cast<size_t>(vi)];
      line(fmt::format(
          "{} >= {} and {} <= {} and ceil(rows / {}) < the GPU's SMs (short: {} threads along {}, "
          "one launch; faster there than the default and the split, measured): variant {} ({})",
          R, bundle::kShortOuterMinReduced, R, v.max_reduced, v.elements_per_block,
          std::get<ReductionConfig>(v.config).group, R, vi, config_text(v.config)));
    }
    if (sv >= 0) {
      const int64_t tile = step.variants[static_cast<size_t>(sv)].elements_per_block;
      if (rule.narrow_split >= 0) {
        const PlannedVariant& narrow = step.variants[static_cast<size_t>(rule.narrow_split)];
        const int64_t most = bundle::narrow_split_max_rows(tile, narrow.elements_per_block);
        const int64_t vec = std::get<ReductionConfig>(narrow.config).vec;
        // Rows up to `upto` that are whole vectors where a scalar split takes the others.
        auto rows_upto = [&](int64_t upto) {
          return rule.narrow_scalar_split >= 0
                     ? fmt::format("rows <= {} and a multiple of {} and ", upto, vec)
                     : fmt::format("rows <= {} and ", upto);
        };
        const std::string whole = rows_upto(most);
        if (rule.deep_split >= 0) {
          const auto& deep =
              std::get<ReductionConfig>(step.variants[static_cast<size_t>(rule.deep_split)].config);
          for (const int f : rule.fitted_splits) {
            const PlannedVariant& v = step.variants[static_cast<size_t>(f)];
            const auto& fc = std::get<ReductionConfig>(v.config);
            split_line(
                f, rows_upto(v.elements_per_block / 2),
                fmt::format("{} >= {} (few columns: {} threads along the rows where the "
                            "deep split has {}, a tile of twice the columns or more; "
                            "faster there, measured)",
                            R, v.split.min_reduced, fc.block / fc.group, deep.block / deep.group));
          }
          split_line(rule.deep_split, whole,
                     fmt::format("{} >= {} (long: {} steps in flight where the narrow split has "
                                 "{}, faster from there, measured)",
                                 R, bundle::kDeepSplitMinReduced, deep.items,
                                 std::get<ReductionConfig>(narrow.config).items));
        }
        if (rule.short_split >= 0) {
          const PlannedVariant& v = step.variants[static_cast<size_t>(rule.short_split)];
          split_line(rule.short_split, whole, "",
                     fmt::format("{} <= {} (short: chunks of {} rows where the narrow split's are "
                                 "{}, more blocks; faster up to there, measured) and ",
                                 R, v.max_reduced, v.split.chunk, narrow.split.chunk));
        }
        split_line(rule.narrow_split, whole);
        if (rule.narrow_scalar_split >= 0) {
          split_line(rule.narrow_scalar_split,
                     fmt::format("rows < {} and not a multiple of {} and ", tile, vec));
          split_line(sv, fmt::format("rows > {} and (rows >= {} or a multiple of {}) and ", most,
                                     tile, vec));
        } else {
          split_line(sv, fmt::format("rows > {} and ", most));
        }
      } else {
        split_line(sv, "");
      }
      line("else:");
    }
    const std::vector<std::pair<int64_t, int>>& tiers = rule.tiers;
    if (tiers.empty()) {
      const auto& c = std::get<ReductionConfig>(def.config);
      line(fmt::format("{}variant {} ({}): {} columns per block, {} x {} steps of {} in flight",
                       sv >= 0 ? "  " : "", step.default_variant, config_text(def.config),
                       def.elements_per_block, c.group, c.items, R));
    }
    if (step.spread_tiers() && !tiers.empty()) {
      line(fmt::format(
          "{}(spread tiers: one pass over the row, no element stores, 4-byte vectors; twice "
          "the threads a row with half the elements each, measured faster)",
          sv >= 0 ? "  " : ""));
    }
    for (size_t t = 0; t < tiers.size(); ++t) {
      const auto [limit, vi] = tiers[t];
      const PlannedVariant& v = step.variants[static_cast<size_t>(vi)];
      const auto& c = std::get<ReductionConfig>(v.config);
      const bool last = t + 1 == tiers.size();
      int64_t shorter = 0;  // the longest tier below this one's limit
      for (size_t u = 0; u < t; ++u) shorter = tiers[u].first < limit ? tiers[u].first : shorter;
      const int64_t many = v.min_rows_per_sm;
      std::string when =
          many > 0 && limit == INT64_MAX
              ? fmt::format("{} > {} and rows >= {} x the GPU's SMs", R, shorter, many)
          : limit == INT64_MAX ? fmt::format("{} > {}", R, shorter)
          : last               ? fmt::format("{} <= {} held, longer loops", R, limit)
                               : fmt::format("{} <= {}", R, limit);
      std::string how =
          limit == INT64_MAX
              ? fmt::format("loops over the row in chunks of {}, fused ({}): {} pass(es)",
                            c.capacity(), fmt::join(step.passes.fused, "; "), step.passes.looped)
          : last ? fmt::format("the row on chip, or in chunks of {}; {} pass(es) over it",
                               c.capacity(), step.passes.held)
                 : fmt::format("the row on chip, {} pass(es) over it", step.passes.held);
      const int twin = rule.odd_rows[static_cast<size_t>(vi)];
      line(fmt::format(
          "{}{}: variant {} ({}), {}; {}{}", sv >= 0 ? "  " : "", when, vi, config_text(v.config),
          row_shape_text(c), how,
          twin >= 0 ? fmt::format("; {} not a multiple of {}: variant {}, shifted", R, c.vec, twin)
                    : std::string()));
      for (const auto& [few_limit, fi] : rule.few_rows) {
        if (few_limit != limit) continue;
        const PlannedVariant& f = step.variants[static_cast<size_t>(fi)];
        const int few_twin = rule.odd_rows[static_cast<size_t>(fi)];
        line(fmt::format(
            "{}  rows <= the GPU's SMs{} (each row alone on its SM; the stores read [{}] operands "
            "the same for every row): variant {} ({}), {}{}",
            sv >= 0 ? "  " : "",
            bundle::few_rows_sm_divisor(limit) > 1
                ? fmt::format(" / {}", bundle::few_rows_sm_divisor(limit))
                : std::string(),
            R, fi, config_text(f.config), row_shape_text(std::get<ReductionConfig>(f.config)),
            few_twin >= 0
                ? fmt::format("; {} not a multiple of {}: variant {}, shifted", R, c.vec, few_twin)
                : std::string()));
      }
    }
  }
  const bool outer_scan = step.kind == bundle::StepKind::scan && !step.row_scan();
  if (step.max_vec > 1 && !outer_scan) {
    const std::string pointers =
        "pointers not aligned to a variant's vectors run the step's scalar variant";
    if (step.kind == bundle::StepKind::row_reduction) {
      line(fmt::format(
          "shifted rows: 16-byte vectors from each row's first element at a multiple of {0} in "
          "memory, scalars before it and after its last whole vector, [{3}] operands a lane at "
          "a time (rows shorter than {1}: scalars); other variants (split rows, the staging "
          "ones) load rows whose length is not a multiple of {0} as scalars; {2}",
          step.max_vec, 2 * step.max_vec, pointers, product_text(step.reduced)));
    } else if (step.row_scan()) {
      line(fmt::format("rows whose length is not a multiple of {} load scalars; {}", step.max_vec,
                       pointers));
    } else if (step.kind == bundle::StepKind::outer_reduction && !rule.scalar_columns.empty()) {
      // bundle/rule.h heuristic_variant: each variant the rule may run, its scalar twin.
      std::set<int> picks{rule.chosen, rule.split, rule.narrow_split, rule.deep_split,
                          rule.short_split};
      picks.insert(rule.short_outer.begin(), rule.short_outer.end());
      picks.insert(rule.fitted_splits.begin(), rule.fitted_splits.end());
      std::vector<std::string> twins;
      for (int v : picks) {
        if (v < 0 || static_cast<size_t>(v) >= rule.scalar_columns.size()) continue;
        const int t = rule.scalar_columns[static_cast<size_t>(v)];
        if (t >= 0) twins.push_back(fmt::format("{} -> {}", v, t));
      }
      if (!twins.empty()) {
        line(fmt::format(
            "rows not a multiple of the variant's vector run its twin of scalar loads, as many "
            "steps in flight as a 16-byte vector holds elements where one is (a split: the "
            "default's twin, or the default where it loads scalars, where ceil(rows / its "
            "columns) >= the GPU's SMs or the split's twin would not split), where the vector "
            "variant would load them one at a time (measured faster there on an H200): variant {}",
            fmt::join(twins, ", ")));
      }
      // bundle/rule.h prefetching_variant.
      if (rule.prefetching >= 0 && step.space.size() >= 2) {
        const PlannedVariant& v = step.variants[static_cast<size_t>(rule.prefetching)];
        line(fmt::format(
            "rows over {} whose innermost extent is not a multiple of the variant's vector (their "
            "product is), the variant without a limit of its own: variant {} ({}: scalar loads, "
            "the next chunk's made before the last one's sums) where {} > {} and ceil(rows / {}) "
            ">= the GPU's SMs (the vector variant would load them one at a time; measured faster "
            "there on an H200)",
            product_text(step.space), rule.prefetching, config_text(v.config),
            product_text(step.reduced), bundle::kShortOuterMaxReduced, v.elements_per_block));
      }
      // bundle/rule.h few_tiles_variant.
      const auto* chosen = rule.chosen >= 0
                               ? std::get_if<ReductionConfig>(
                                     &step.variants[static_cast<size_t>(rule.chosen)].config)
                               : nullptr;
      if (rule.deep_split >= 0 && chosen && chosen->vec > 1) {
        const int runs = bundle::few_tiles_pick(rule);
        const PlannedVariant& v = step.variants[static_cast<size_t>(runs)];
        line(fmt::format(
            "an unsplit scalar variant standing in for the vector one (a twin above, or the "
            "prefetching variant) where ceil(rows / its columns) < twice the GPU's SMs and {} > {} "
            "(one block of 256 threads an SM would walk all of {}): variant {} ({}), {} spread "
            "over blocks{} (measured faster there on an H200)",
            product_text(step.reduced), bundle::kShortOuterMaxReduced, product_text(step.reduced),
            runs, config_text(v.config), product_text(step.reduced),
            runs == rule.deep_split
                ? ", its scalar loads where the rows are not whole vectors"
                : fmt::format(", the scalar twin of the deep split (variant {})",
                              rule.deep_split)));
      }
      line(pointers);
    } else {
      line(pointers);
    }
  }
  if (step.kind == bundle::StepKind::outer_reduction) {
    line(fmt::format(
        "each variant{} has two entries: its own computes indices and offsets in 32 bits, for "
        "launches of at most 2^31 - 1 rows x {} elements (and a split's workspace words); its "
        "general one, in 64 bits, runs every other launch",
        step.strided_variant >= 0 ? " but the strided one" : "", product_text(step.reduced)));
  }
  return out;
}

std::string print_plan(const KernelPlan& plan) {
  const KernelDef& k = *plan.kernel;
  std::string out = fmt::format("plan {}: {} step(s), {} buffer(s)\n", k.name, plan.steps.size(),
                                plan.schedule.buffers.size());
  for (const TensorDecl& b : plan.schedule.buffers) {
    out += fmt::format("buffer {}: {}{}\n", b.name, to_string(b.dtype), dims_text(b.shape));
  }
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    const StepPlan& st = plan.steps[si];
    out += fmt::format("step {} {}_s{}: {}", si, k.name, si, to_string(st.kind));
    if (!st.reduced.empty()) {
      out += fmt::format(" rows={} {}={}", dims_text(st.space),
                         st.kind == bundle::StepKind::scan ? "scan" : "reduce",
                         product_text(st.reduced));
    } else {
      out += fmt::format(" space={}", dims_text(st.space));
    }
    out += fmt::format(" max_vec={}\n", st.max_vec);
    if (st.kind == bundle::StepKind::contraction) {
      out += fmt::format("  operands: {}\n", describe_operands(*st.sk->contraction));
    }
    if (st.kind == bundle::StepKind::scan) {
      const Stmt& scan = scan_statement(*st.sk);
      out += fmt::format("  scan: {} along {} ({})\n", scan_name(scan.value.as<Scan>()->op),
                         scan.indices[static_cast<size_t>(*st.sk->scan_axis)],
                         st.row_scan() ? "contiguous: rows" : "outer: columns");
    }
    if (st.sk && !st.sk->flattening.empty()) {
      out += fmt::format("  reduction over {}\n", st.sk->flattening);
      if (st.abi) {
        if (std::string s = stepped_axes_text(*st.abi, *st.sk); !s.empty()) {
          out += fmt::format("  stepped coordinates: {}\n", s);
        }
      }
    }
    if (st.kind == bundle::StepKind::row_reduction) {
      out += fmt::format("  passes: held={} looped={}\n", st.passes.held, st.passes.looped);
      for (const std::string& f : st.passes.fused) out += fmt::format("  fusion: {}\n", f);
    }
    if (!st.reduced.empty() && st.kind != bundle::StepKind::scan) {
      out += fmt::format("  split: phases={} slots={}\n", st.split.phases, st.split.slots);
    }
    if (st.kind == bundle::StepKind::pointwise && st.pointwise.tiling.tiled()) {
      const Tiling& t = st.pointwise.tiling;
      std::vector<std::string> loads;
      for (const TiledLoad& l : t.loads) {
        std::vector<std::string> idx;
        for (int v : l.vars) idx.push_back(st.pointwise.vars[static_cast<size_t>(v)]);
        loads.push_back(fmt::format("{}[{}]", l.tensor, fmt::join(idx, ", ")));
      }
      std::vector<std::string> joined;
      for (const auto& [dim, extent] : joined_dims_text(st.pointwise)) {
        joined.push_back(fmt::format(" joined={}", dim));
      }
      out += fmt::format("  tiled: across={} inner={} smem={} byte(s) per element: {}{}\n",
                         tile_dim_text(st.pointwise, t.across), st.pointwise.vars.back(),
                         t.smem_bytes_per_element(), fmt::join(loads, ", "), fmt::join(joined, ""));
    }
    if (st.stage_bytes_per_element > 0) {
      out += fmt::format("  stage: {} byte(s) per element\n", st.stage_bytes_per_element);
    }
    if (st.tile.bytes_per_element > 0) {
      out += fmt::format("  tile: {} byte(s) per element, narrowest {}\n",
                         st.tile.bytes_per_element, st.tile.narrowest);
    }
    for (const TuneRange& r : st.tune_ranges) {
      out += fmt::format("  tune: {} in [{}, {}]\n", r.name, r.min, r.max);
    }
    out += "  rule:\n" + explain_rule(plan, si, "    ");
    out += fmt::format("  variants: {}\n", st.variants.size());
    for (size_t vi = 0; vi < st.variants.size(); ++vi) {
      const PlannedVariant& v = st.variants[vi];
      out += fmt::format("    v{} {}{} threads={} per_block={}", vi, config_text(v.config),
                         v.is_default ? " default" : "", v.block_threads, v.elements_per_block);
      if (v.max_reduced > 0) {
        out +=
            fmt::format(" {}<={}", st.kind == bundle::StepKind::outer_reduction ? "short" : "tier",
                        limit_text(v.max_reduced));
      }
      if (v.min_rows_per_sm > 0) out += fmt::format(" rows>={}xSMs", v.min_rows_per_sm);
      if (v.odd_rows >= 0) out += fmt::format(" odd_rows=v{}", v.odd_rows);
      if (v.split.phases > 0) {
        out += fmt::format(
            " split(phases={} slots={} chunk={}{})", v.split.phases, v.split.slots, v.split.chunk,
            v.split.min_reduced > 0 ? fmt::format(" min_reduced={}", v.split.min_reduced)
                                    : std::string());
      }
      if (v.stage.bytes_per_element > 0) {
        out += fmt::format(" stage(bytes={} rows={} vec={}{})", v.stage.bytes_per_element,
                           v.stage.rows_per_block, v.stage.vec,
                           v.stage.row_align > 0 ? fmt::format(" row_align={}", v.stage.row_align)
                                                 : std::string());
      }
      if (v.tile.m > 0) {
        out += fmt::format(" tile({}x{} ctas={}{} smem={})", v.tile.m, v.tile.n, v.tile.ctas_per_sm,
                           v.tile.cluster > 1 ? fmt::format(" cluster={}", v.tile.cluster) : "",
                           v.tile.smem_bytes);
        const std::vector<const TensorDecl*> params = st.abi->params();
        for (const bundle::TensorMapInfo& t : v.tile.tensor_maps) {
          out += fmt::format(" map({} box={})", params[static_cast<size_t>(t.param)]->name,
                             fmt::join(t.box, "x"));
        }
        if (v.tile.map_fallback >= 0) out += fmt::format(" map_fallback={}", v.tile.map_fallback);
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace kiln
