// See explain.h.
#include "tools/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "compiler/lower_contraction.h"
#include "compiler/reduction_analysis.h"

namespace kiln {
namespace {

std::optional<int64_t> product(const std::vector<Dim>& dims, const SymbolValues& sizes) {
  int64_t n = 1;
  for (const Dim& d : dims) {
    int64_t v = 0;
    if (d.is_fixed()) {
      v = d.value();
    } else if (auto it = sizes.find(d.name()); it != sizes.end()) {
      v = it->second;
    } else {
      return std::nullopt;
    }
    if (__builtin_mul_overflow(n, v, &n)) return std::nullopt;
  }
  return n;
}

}  // namespace

ExplainedStep explain_step(const KernelPlan& plan, size_t si, const SymbolValues& sizes,
                           const bundle::DeviceFacts& device) {
  const StepPlan& step = plan.steps[si];
  const bundle::Step bs = manifest_step(plan, si, {});
  const bundle::StepRule rule =
      bundle::step_rule(bs, std::vector<bool>(bs.variants.size(), true), device);
  const std::optional<int64_t> rows = product(step.space, sizes);
  const std::optional<int64_t> reduced =
      !step.reduced.empty() ? product(step.reduced, sizes) : std::optional<int64_t>(1);
  ExplainedStep out;
  if (!rows || !reduced) return out;
  std::vector<int64_t> space, reduced_extents;
  for (const Dim& d : step.space) space.push_back(*product({d}, sizes));
  for (const Dim& d : step.reduced) reduced_extents.push_back(*product({d}, sizes));
  out.variant = bundle::rule_variant(bs, rule, space, reduced_extents, device);
  const PlannedVariant& v = step.variants[static_cast<size_t>(out.variant)];
  // Without images the residency is unknown: a split's grid is counted as the rule's default.
  const int resident =
      bundle::resident_blocks(bs.variants[static_cast<size_t>(out.variant)], device);
  const int64_t blocks = bundle::ceil_div(*rows, v.elements_per_block);
  // Which of a variant's two entries (bundle::GeneralForm) a launch of `elements` runs.
  const bundle::GeneralForm& g = bs.variants[static_cast<size_t>(out.variant)].general;
  const int64_t inner = step.space.empty() ? 1 : product({step.space.back()}, sizes).value_or(1);
  auto entry = [&](int64_t elements) -> std::string {
    if (g.entry.empty()) return "";
    if (bundle::runs_general(g, elements, inner)) return "; its general entry (64-bit indices)";
    return "; its own entry (32-bit indices)";
  };
  if (step.kind == bundle::StepKind::pointwise) {
    out.how = fmt::format("{} element(s) per block, {} block(s) (the grid loops past {}){}",
                          v.elements_per_block, blocks, bundle::kMaxGridX, entry(*rows));
    return out;
  }
  if (step.kind == bundle::StepKind::contraction) {
    const size_t d = step.space.size();
    const int64_t m = *product({step.space[d - 2]}, sizes),
                  n = *product({step.space[d - 1]}, sizes);
    const int64_t tiles =
        *rows / (m * n) * bundle::ceil_div(m, v.tile.m) * bundle::ceil_div(n, v.tile.n);
    out.how = fmt::format(
        "{} tile(s) of {} x {} over {} block(s) (at most {} per SM), {} steps of {} along {} "
        "each",
        tiles, v.tile.m, v.tile.n,
        std::min<int64_t>(tiles, int64_t{device.sm_count} * v.tile.ctas_per_sm), v.tile.ctas_per_sm,
        bundle::ceil_div(*reduced, std::get<ContractionConfig>(v.config).tile_k),
        std::get<ContractionConfig>(v.config).tile_k, product_text(step.reduced));
    return out;
  }
  if (step.kind == bundle::StepKind::scan) {
    const auto& c = std::get<ScanConfig>(v.config);
    const std::string L = product_text(step.reduced);
    if (v.split.phases > 0) {
      out.how = fmt::format(
          "split: {} row(s), each over {} blocks taking tiles of {} elements of {} in order, "
          "each tile's carry looked back for through a workspace (a first launch clears it)",
          blocks, bundle::split_blocks(blocks, *reduced, v.split.chunk, device.sm_count, resident),
          v.split.chunk * std::max(1, c.items), L);
    } else if (step.row_scan()) {
      out.how =
          fmt::format("{} row(s) per block, {} block(s), chunks of {} along {}{}",
                      v.elements_per_block, blocks, c.chunk(), L,
                      *reduced % c.vec == 0
                          ? ""
                          : fmt::format(" (scalar loads: {} is not a multiple of {})", L, c.vec));
    } else {
      out.how = fmt::format("{} column(s) per block, {} block(s), each walking {} steps of {}",
                            v.elements_per_block, blocks, *reduced, L);
    }
    return out;
  }
  const auto& c = std::get<ReductionConfig>(v.config);
  const std::string R = product_text(step.reduced);
  if (v.split.phases > 0) {
    const int64_t per_tile =
        bundle::split_blocks(blocks, *reduced, v.split.chunk, device.sm_count, resident);
    // The workspace as runtime/launch.cpp sizes it; overflowing, the general entry's.
    int64_t grid = 0;
    const std::optional<int64_t> bytes =
        __builtin_mul_overflow(blocks, per_tile, &grid)
            ? std::nullopt
            : bundle::split_workspace_bytes(grid, v.elements_per_block, v.split.slots);
    const int64_t workspace = bytes.value_or(std::numeric_limits<int64_t>::max());
    out.how = fmt::format(
        "split: {} tile(s) of {} row(s), each over {} blocks walking {} in chunks of {}, {} "
        "launches through a workspace{}{}",
        blocks, v.elements_per_block, per_tile, R, v.split.chunk, v.split.phases,
        v.split.lead_last ? " (the last, which only stores, one block per row)" : "",
        entry(bundle::launch_elements(*rows, *reduced, workspace)));
    return out;
  }
  if (step.kind == bundle::StepKind::outer_reduction) {
    out.how = fmt::format("{} row(s) per block, {} block(s); {} x {} steps of {} in flight{}",
                          v.elements_per_block, blocks, c.group, c.items, R,
                          entry(bundle::launch_elements(*rows, *reduced, 0)));
    return out;
  }
  // Whether the row runs on vectors: a shifting variant (config.h ReductionConfig::shift) every
  // row of 2 x vec or more, any other a row of whole vectors whose trailing runs of the reduced
  // indices (reduction::vector_runs) are whole vectors too. A row held on chip walks vectors.
  const bool whole = *reduced % c.vec == 0;
  std::string broken_run;  // a run that is not a multiple of vec
  for (int a : vector_runs(*step.abi, *step.sk)) {
    const std::vector<Dim> run(step.reduced.begin() + a, step.reduced.end());
    if (*product(run, sizes) % c.vec != 0) broken_run = product_text(run);
  }
  const bool vectors = c.shift ? *reduced >= 2 * c.vec : whole && broken_run.empty();
  std::string loads;
  if (!vectors) {
    loads = fmt::format(" (scalar loads: {})",
                        !whole    ? fmt::format("{} is not a multiple of {}", R, c.vec)
                        : c.shift ? fmt::format("{} is shorter than {}", R, 2 * c.vec)
                                  : fmt::format("each row's runs of {} elements are not a "
                                                "multiple of {}",
                                                broken_run, c.vec));
  } else if (!whole) {
    loads = fmt::format(
        " (shifted rows: {} is not a multiple of {}; vectors between each row's scalar head and "
        "tail)",
        R, c.vec);
  }
  // A looped row of scalars in a vectorized variant takes its own chunks (emit_rows).
  const int64_t chunk = vectors || c.vec == 1
                            ? c.capacity()
                            : int64_t{c.group} * reduction::looped_scalar_items(
                                                     steps_reduced_axes(*step.abi, *step.sk));
  if (*reduced <= c.capacity() && (c.vec == 1 || vectors)) {
    out.how = fmt::format("the row on chip, {} pass(es) over it, {} block(s){}", step.passes.held,
                          blocks, loads);
  } else {
    out.how =
        fmt::format("loops over the row in chunks of {}{}, {} pass(es), {} block(s){}", chunk,
                    c.fuse ? fmt::format(" fused ({})", fmt::join(step.passes.fused, "; ")) : "",
                    c.fuse ? step.passes.looped : step.passes.held, blocks, loads);
  }
  return out;
}

// What compiler/codegen.h make_dependent does for a kernel of several launches.
std::string explain_dependent_launches(const KernelPlan& plan) {
  const bool split = std::any_of(plan.steps.begin(), plan.steps.end(), [](const StepPlan& st) {
    return std::any_of(st.variants.begin(), st.variants.end(), [](const PlannedVariant& v) {
      const auto* rc = std::get_if<ReductionConfig>(&v.config);
      const auto* sc = std::get_if<ScanConfig>(&v.config);
      return (rc && rc->split) || (sc && sc->split);
    });
  });
  if (plan.steps.size() < 2 && !split) return "";
  std::string out =
      "dependent launches: on sm_90 and later every launch after the first (a later step, a "
      "split's later phase) may start while the kernel before it runs, its blocks taking SMs as "
      "that one's leave them, and waits for it (griddepcontrol.wait) at its start";
  for (size_t si = 1; si < plan.steps.size(); ++si) {
    const StepPlan& st = plan.steps[si];
    if (st.kind == bundle::StepKind::contraction && contraction_defers_wait(*st.abi, *st.sk)) {
      out += fmt::format(
          "; step {}, a contraction of the spec's inputs, copies and multiplies its first "
          "tiles meanwhile and waits before each tile's epilogue",
          si);
    }
  }
  return out + "\n";
}

std::string explain_kernel(const KernelDef& k, const SymbolValues& sizes,
                           const bundle::DeviceFacts& device) {
  std::unique_ptr<KernelPlan> plan = plan_kernel(k);
  ScheduleOptions opts;
  opts.sizes = sizes;
  std::string out = explain_schedule(schedule_kernel(k, opts));
  out += fmt::format(
      "\nsteps (GPU launches; with no tuned winner, runtime/launch.h's heuristic picks each "
      "variant by this rule):\n");
  for (size_t si = 0; si < plan->steps.size(); ++si) {
    const StepPlan& st = plan->steps[si];
    out += fmt::format("  step {} {}_s{}: {}", si, k.name, si, to_string(st.kind));
    out += !st.reduced.empty()
               ? fmt::format(" over rows {}, {} {}", dims_text(st.space),
                             st.kind == bundle::StepKind::scan ? "scanning" : "reducing",
                             product_text(st.reduced))
               : fmt::format(" over {}", dims_text(st.space));
    out += fmt::format(", {} variant(s)\n", st.variants.size());
    if (st.sk && st.abi) {
      if (std::string s = stepped_axes_text(*st.abi, *st.sk); !s.empty()) {
        out += fmt::format("    its points step the coordinates {}\n", s);
      }
    }
    out += explain_rule(*plan, si, "    ");
    ExplainedStep e = explain_step(*plan, si, sizes, device);
    if (e.variant >= 0) {
      const PlannedVariant& v = st.variants[static_cast<size_t>(e.variant)];
      out += fmt::format("    runs: variant {} ({}) on a GPU of {} SMs: {}\n", e.variant,
                         config_text(v.config), device.sm_count, e.how);
    }
  }
  out += explain_dependent_launches(*plan);
  return out;
}

}  // namespace kiln
