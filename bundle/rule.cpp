// See rule.h.
#include "bundle/rule.h"

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>

namespace kiln::bundle {

namespace {

// A variant's config knob `name`, `absent` when it has none.
int64_t config_knob(const Variant& v, const char* name, int64_t absent) {
  const auto it = v.config.find(name);
  return it == v.config.end() ? absent : it->second;
}

// A variant's config "vec" (elements per access), 1 when it has none. A manifest's config is
// only numbers: callers divide by it only when it is above 1.
int64_t config_vec(const Variant& v) {
  return config_knob(v, "vec", 1);
}

// The tiles (blocks of the unsplit grid) of `v` over `rows`: ceil(rows / its elements per
// block), a manifest's elements_per_block below 1 (unchecked here) counting as 1.
int64_t tiles_of(const Variant& v, int64_t rows) {
  return ceil_div(rows, std::max<int64_t>(v.elements_per_block, 1));
}

// A variant's config without the knobs `keys`: the rest of its shape, to find its twins.
std::map<std::string, int64_t> config_without(const Variant& v,
                                              std::initializer_list<const char*> keys) {
  std::map<std::string, int64_t> config = v.config;
  for (const char* k : keys) config.erase(k);
  return config;
}

// A contraction's steps of `chunk` elements over a reduced extent of `reduced` (at least 1).
int64_t contraction_steps(int64_t reduced, int64_t chunk) {
  return ceil_div(std::max<int64_t>(reduced, 1), std::max<int64_t>(chunk, 1));
}

}  // namespace

StepRule step_rule(const Step& step, const std::vector<bool>& loadable, const DeviceFacts& device) {
  StepRule r;
  r.reads_strided = std::any_of(step.variants.begin(), step.variants.end(),
                                [](const Variant& v) { return v.strided; });
  for (size_t vi = 0; vi < step.variants.size(); ++vi) {
    if (!loadable[vi]) continue;
    const Variant& v = step.variants[vi];
    const int id = static_cast<int>(vi);
    if (r.chosen < 0 || v.is_default) r.chosen = id;
    if (v.align_bytes == 1 && (r.scalar_fallback < 0 || v.is_default)) r.scalar_fallback = id;
    if (v.strided) {
      if (v.max_reduced > 0 && !step.reduced.empty()) {
        r.strided_tiers.emplace_back(v.max_reduced, id);
      } else if (r.strided < 0) {
        r.strided = id;
      }
      continue;
    }
    // An outer step's limits mark its variants for short columns (rule.h), not tiers.
    if (v.max_reduced > 0 && step.kind == StepKind::outer_reduction) {
      if (v.split.phases == 0) {
        r.short_outer.push_back(id);
      } else if (r.short_split < 0 && device.memory_pools) {
        r.short_split = id;
      }
      continue;
    }
    // A pointwise step's tiers have the limit 1 (its reduced extent) and differ in
    // min_rows_per_sm, its rows being its elements.
    if (v.max_reduced > 0 && (!step.reduced.empty() || step.kind == StepKind::pointwise)) {
      r.tiers.emplace_back(v.max_reduced, id);
    }
  }
  std::sort(r.strided_tiers.begin(), r.strided_tiers.end());
  std::stable_sort(r.short_outer.begin(), r.short_outer.end(), [&](int a, int b) {
    return step.variants[static_cast<size_t>(a)].elements_per_block <
           step.variants[static_cast<size_t>(b)].elements_per_block;
  });
  // Contraction steps: the smaller tiles of the chosen variant's kind (TMA-fed or not),
  // largest first, the first variant of each size.
  if (step.kind == StepKind::contraction && r.chosen >= 0) {
    const Variant& chosen = step.variants[static_cast<size_t>(r.chosen)];
    const size_t tma = chosen.config.count("tma");
    std::map<int64_t, int, std::greater<>> by_size;  // elements per block -> first variant
    for (size_t vi = 0; vi < step.variants.size(); ++vi) {
      const Variant& v = step.variants[vi];
      if (loadable[vi] && v.config.count("tma") == tma && v.split.phases == 0 &&
          v.elements_per_block < chosen.elements_per_block) {
        by_size.emplace(v.elements_per_block, static_cast<int>(vi));
      }
    }
    for (const auto& [size, vi] : by_size) r.smaller.push_back(vi);
    for (size_t vi = 0; vi < step.variants.size() && r.contraction_split < 0; ++vi) {
      const Variant& v = step.variants[vi];
      if (loadable[vi] && v.config.count("tma") == tma && v.split.phases > 0 &&
          device.memory_pools) {
        r.contraction_split = static_cast<int>(vi);
      }
    }
  }
  r.map_fallback.assign(step.variants.size(), -1);
  for (size_t vi = 0; vi < step.variants.size(); ++vi) {
    const int f = step.variants[vi].tile.map_fallback;
    if (f >= 0 && static_cast<size_t>(f) < loadable.size() && loadable[static_cast<size_t>(f)]) {
      r.map_fallback[vi] = f;
    }
  }
  r.odd_rows.assign(step.variants.size(), -1);
  for (size_t vi = 0; vi < step.variants.size(); ++vi) {
    const int t = step.variants[vi].odd_rows;
    if (t >= 0 && static_cast<size_t>(t) < loadable.size() && loadable[static_cast<size_t>(t)]) {
      r.odd_rows[vi] = t;
    }
  }
  std::sort(r.tiers.begin(), r.tiers.end());
  for (const auto& [limit, variant] : step.few_rows) {
    if (variant >= 0 && static_cast<size_t>(variant) < loadable.size() &&
        loadable[static_cast<size_t>(variant)]) {
      r.few_rows.emplace_back(limit, variant);
    }
  }
  // Tiled steps: the tiles of kOddTileSide for odd or short extents and few tiles
  // (tiled_variant).
  if (!step.tile_across.empty() && r.chosen >= 0) {
    const Variant& chosen = step.variants[static_cast<size_t>(r.chosen)];
    auto tile = [](const Variant& v, const char* side) { return config_knob(v, side, 0); };
    // The first loadable variant with the chosen one's vector (and `threads`, where not
    // kAnyBlock) and tiles of tile_in x tile_out; -1 where none is.
    constexpr int64_t kAnyBlock = -1;
    auto find = [&](int tile_in, int tile_out, int64_t threads) {
      for (size_t vi = 0; vi < step.variants.size(); ++vi) {
        const Variant& v = step.variants[vi];
        if (loadable[vi] && !v.strided && config_vec(v) == config_vec(chosen) &&
            (threads == kAnyBlock || config_knob(v, "block", 0) == threads) &&
            tile(v, "tile_in") == tile_in && tile(v, "tile_out") == tile_out) {
          return static_cast<int>(vi);
        }
      }
      return -1;
    };
    // Where odd extents run element by element, odd tiles hold half the elements a thread of
    // the chosen variant holds (kOddTileSide).
    // A manifest's knobs are any int64: a block past a GPU's 1024 threads, tiles whose product
    // overflows, or sides below 1 count as no tile (elements 0), and the rule runs `chosen`.
    int64_t block = config_knob(chosen, "block", 0), elements = 0;
    const int64_t tile_in = tile(chosen, "tile_in"), tile_out = tile(chosen, "tile_out");
    if (block > 1024 || tile_in < 1 || tile_out < 1 ||
        __builtin_mul_overflow(tile_in, tile_out, &elements)) {
      block = elements = 0;
    }
    if (step.tile_elementwise && block > 0 && elements >= 2 * block &&
        elements % (2 * block) == 0 &&
        kOddTileSide * kOddTileSide % (elements / (2 * block)) == 0) {
      r.odd_tiles =
          find(kOddTileSide, kOddTileSide, kOddTileSide * kOddTileSide / (elements / (2 * block)));
    }
    if (r.odd_tiles < 0 && elements > kOddTileSide * kOddTileSide) {
      r.odd_tiles = find(kOddTileSide, kOddTileSide, kAnyBlock);
    }
    r.odd_tiles_smaller = r.odd_tiles >= 0 && elements > kOddTileSide * kOddTileSide;
  }
  // Row steps split under their tiers; outer steps have no tiers, only this choice.
  const bool may_split = (!r.tiers.empty() && step.kind != StepKind::pointwise) ||
                         step.kind == StepKind::outer_reduction;
  for (size_t vi = 0; vi < step.variants.size() && r.split < 0 && may_split; ++vi) {
    if (loadable[vi] && step.variants[vi].split.phases > 0 && device.memory_pools) {
      r.split = static_cast<int>(vi);
    }
  }
  // The narrow split loads vectors as wide as the split's: a scalar split variant (for the
  // tuner) has fewer columns per tile, and measured 1.4x slower on bf16 column sums of
  // 1048576 x 64 than the narrow 16-byte one (bench/results/2026-11-25-h200-rows, outer/).
  auto vec_of = [&](size_t vi) { return config_vec(step.variants[vi]); };
  // (The fitted deep splits, which carry a min_reduced, are not candidates.)
  for (size_t vi = 0; vi < step.variants.size() && r.split >= 0; ++vi) {
    if (step.kind != StepKind::outer_reduction || !loadable[vi] ||
        step.variants[vi].split.phases == 0 || step.variants[vi].split.min_reduced > 0 ||
        vec_of(vi) != vec_of(static_cast<size_t>(r.split))) {
      continue;
    }
    const int64_t fewest =
        step.variants[static_cast<size_t>(r.narrow_split >= 0 ? r.narrow_split : r.split)]
            .elements_per_block;
    if (step.variants[vi].elements_per_block < fewest) r.narrow_split = static_cast<int>(vi);
  }
  // The deep split: the first variant whose config is the narrow split's but for more steps
  // in flight (items).
  if (r.narrow_split >= 0) {
    auto items_of = [](const Variant& v) {
      const auto it = v.config.find("items");
      return it == v.config.end() ? int64_t{1} : it->second;
    };
    const Variant& narrow = step.variants[static_cast<size_t>(r.narrow_split)];
    const std::map<std::string, int64_t> shape = config_without(narrow, {"items"});
    for (size_t vi = 0; vi < step.variants.size() && r.deep_split < 0; ++vi) {
      const Variant& v = step.variants[vi];
      if (loadable[vi] && v.split.phases > 0 && items_of(v) > items_of(narrow) &&
          config_without(v, {"items"}) == shape) {
        r.deep_split = static_cast<int>(vi);
      }
    }
  }
  // The fitted deep splits, fewest columns per tile first (ties in variant order).
  for (size_t vi = 0; vi < step.variants.size() && r.deep_split >= 0; ++vi) {
    const Variant& v = step.variants[vi];
    if (loadable[vi] && step.kind == StepKind::outer_reduction && v.split.phases > 0 &&
        v.split.min_reduced > 0 && vec_of(vi) == vec_of(static_cast<size_t>(r.narrow_split))) {
      r.fitted_splits.push_back(static_cast<int>(vi));
    }
  }
  std::stable_sort(r.fitted_splits.begin(), r.fitted_splits.end(), [&](int a, int b) {
    return step.variants[static_cast<size_t>(a)].elements_per_block <
           step.variants[static_cast<size_t>(b)].elements_per_block;
  });
  // Measured there: bf16 column sums of 1000003 x 7 took 38.1 us on the scalar split, 64.9 on the
  // 16-byte narrow split's scalar path.
  for (size_t vi = 0; vi < step.variants.size() && r.narrow_split >= 0; ++vi) {
    if (!loadable[vi] || step.variants[vi].split.phases == 0 || vec_of(vi) != 1 ||
        vec_of(static_cast<size_t>(r.narrow_split)) == 1 ||
        step.variants[vi].split.min_reduced > 0 || step.variants[vi].max_reduced > 0) {
      continue;
    }
    if (r.narrow_scalar_split < 0 ||
        step.variants[vi].elements_per_block <
            step.variants[static_cast<size_t>(r.narrow_scalar_split)].elements_per_block) {
      r.narrow_scalar_split = static_cast<int>(vi);
    }
  }
  // Outer steps: each vector variant's twin for scalar loads: its config but vec 1 and as
  // many steps in flight (items) as the widest vector holds elements (the bytes a thread has in
  // flight per column of a 16-byte vector's), else its own items; a split without one, the
  // narrow scalar split.
  if (step.kind == StepKind::outer_reduction) {
    r.scalar_columns.assign(step.variants.size(), -1);
    int64_t widest = 1;
    for (const Variant& v : step.variants) widest = std::max(widest, config_vec(v));
    for (size_t vi = 0; vi < step.variants.size(); ++vi) {
      const Variant& v = step.variants[vi];
      if (config_vec(v) == 1 || v.strided) continue;
      auto twin = [&](int64_t items) {
        for (size_t ti = 0; ti < step.variants.size(); ++ti) {
          const Variant& t = step.variants[ti];
          // The twin runs wherever v would: no limit of its own narrower than v's.
          const bool limits =
              t.max_reduced == 0 || (v.max_reduced > 0 && t.max_reduced >= v.max_reduced);
          if (loadable[ti] && !t.strided && config_vec(t) == 1 &&
              t.split.phases == v.split.phases && t.split.min_reduced <= v.split.min_reduced &&
              limits && config_knob(t, "items", 1) == items &&
              config_without(t, {"vec", "items"}) == config_without(v, {"vec", "items"})) {
            return static_cast<int>(ti);
          }
        }
        return -1;
      };
      int t = twin(widest);
      if (t < 0) t = twin(config_knob(v, "items", 1));
      if (t < 0 && v.split.phases > 0) t = r.narrow_scalar_split;
      r.scalar_columns[vi] = t;
    }
    for (size_t vi = 0; vi < step.variants.size() && r.prefetching < 0; ++vi) {
      const Variant& v = step.variants[vi];
      if (loadable[vi] && config_knob(v, "prefetch", 0) == 1 && v.split.phases == 0 &&
          v.max_reduced == 0 && !v.strided) {
        r.prefetching = static_cast<int>(vi);
      }
    }
  }
  return r;
}

int resident_blocks(const Variant& v, const DeviceFacts& device) {
  int registers = 0;
  int64_t shared = 0;
  for (const ArchImage& im : v.images) {
    registers = std::max(registers, im.registers);
    shared = std::max<int64_t>(shared, im.shared_bytes);
  }
  if (registers <= 0 || v.block_threads <= 0) return 0;
  const int64_t warps = ceil_div(v.block_threads, 32);
  const int64_t per_warp = ceil_div(int64_t{registers} * 32, 256) * 256;
  int64_t blocks = std::min<int64_t>(32, device.threads_per_sm / (warps * 32));
  blocks = std::min(blocks, device.registers_per_sm / (per_warp * warps));
  blocks = std::min(blocks, device.shared_per_sm / (shared + 1024));
  return static_cast<int>(std::max<int64_t>(blocks, 0));
}

// Measured on an H200 (bench/results/2026-11-27-h200-scan-overlap, calls 7-8: column sums of
// 262144 rows, interleaved): the narrow split was faster while it needed 1 or 2 tiles (bf16 over
// 72 to 128 columns 30.2-35.3 us against 37.3-39.4 on the wide split; f32 over 48 and 64
// 31.4-31.7 and 34.5-34.9 against 35.8 and 36.8-37.0), mixed at 3 (bf16 192 44.3-44.7 against
// 45.5, f32 96 43.0-43.7 against 45.6-45.8; bf16 160 and 176 2-4% slower), and slower at 4, where
// its tiles cover as many columns as one wide tile (bf16 200 to 248 50.0-57.5 against 46.6-51.3;
// f32 112 and 124 52.5-55.9 against 49.1-52.2).
int64_t narrow_split_max_rows(int64_t wide_tile, int64_t narrow_tile) {
  if (narrow_tile <= 0 || wide_tile <= narrow_tile) return 0;
  return (wide_tile - 1) / narrow_tile * narrow_tile;
}

int64_t split_blocks(int64_t tiles, int64_t reduced, int64_t chunk, int sm_count, int resident) {
  tiles = std::max<int64_t>(tiles, 1);
  const int64_t sms = std::max(sm_count, 1);
  const int64_t want = resident > 0 ? std::max<int64_t>(1, int64_t{resident} * sms / tiles)
                                    : ceil_div(int64_t{kSplitBlocksPerSm} * sms, tiles);
  const int64_t most =
      std::max<int64_t>(1, reduced / (int64_t{kSplitMinChunks} * std::max<int64_t>(chunk, 1)));
  return std::max<int64_t>(1, std::min({want, most, kMaxGridX / tiles}));
}

int64_t contraction_split_blocks(int64_t tiles, int64_t reduced, int64_t chunk, int sm_count,
                                 int per_sm) {
  tiles = std::max<int64_t>(tiles, 1);
  const int64_t want =
      std::max<int64_t>(1, int64_t{std::max(sm_count, 1)} * std::max(per_sm, 1) / tiles);
  const int64_t most =
      std::max<int64_t>(1, contraction_steps(reduced, chunk) / kContractionSplitMinSteps);
  return std::max<int64_t>(1, std::min({want, most, kMaxGridX / tiles}));
}

bool contraction_splits(int64_t split, int64_t reduced, int64_t chunk) {
  const int64_t steps = contraction_steps(reduced, chunk);
  return steps >= kContractionSplitMinReduced &&
         (split >= 3 || (split == 2 && steps >= kContractionSplitLongReduced));
}

namespace {

// Whether split variant vi runs here: fewer tiles (blocks of the unsplit kernel) than SMs, the
// reduced extent at least its min_reduced, each tile worth kSplitMinBlocks+ blocks (an outer
// step's kOuterSplitMinBlocks+, where the reduced extent holds kSplitMinBlocks x
// kSplitMinChunks chunks).
bool split_runs(const Step& step, int vi, int64_t rows, int64_t reduced,
                const DeviceFacts& device) {
  const Variant& sv = step.variants[static_cast<size_t>(vi)];
  const int64_t tiles = tiles_of(sv, rows);
  const bool outer =
      step.kind == StepKind::outer_reduction &&
      reduced / std::max<int64_t>(sv.split.chunk, 1) >= int64_t{kSplitMinBlocks} * kSplitMinChunks;
  return tiles < device.sm_count && reduced >= sv.split.min_reduced &&
         split_blocks(tiles, reduced, sv.split.chunk, device.sm_count,
                      resident_blocks(sv, device)) >=
             (outer ? kOuterSplitMinBlocks : kSplitMinBlocks);
}

// heuristic_variant before an outer step's scalar twin.
int heuristic_pick(const Step& step, const StepRule& rule, int64_t rows, int64_t reduced,
                   const DeviceFacts& device) {
  if (rows < 1 || reduced < 1) return rule.chosen;
  if (step.kind == StepKind::contraction) {
    if (rule.chosen < 0 || rule.smaller.empty()) return rule.chosen;
    // Fewer tiles than half the SMs: smaller tiles fill more of the GPU, the largest that
    // give half the SMs a tile. Measured on an H200 (bench/results/2026-11-24-h200-contractions):
    // at 1024^3 the 64 x 64 tiles beat 128 x 256 (32 tiles), at 2048^3 128 x 256 (128 tiles)
    // beat them by 1.6x. Among the TMA variants (bench/results/2026-11-24-h200-session7/
    // variants_small.txt) the 128 x 128 tiles beat the 64 x 64 mma.sync ones at all 5 shapes
    // this rule sent to them, and 128 x 256 stayed the fastest at the 3 shapes just past the
    // threshold. 128 x 64 against 128 x 128 (bench/results/2026-11-27-h200-fast-erf, call 6):
    // faster where 128 x 128 leaves half the SMs idle (1024^3 10.1 against 12.3 us, 1024 x 1024
    // x 4096 21.8 against 29.7, 128 x 4096 x 4096 23.2 against 29.5, 512^3, 256 x 4096 x 4096, a
    // batch of 4 512 x 512 x 1024), slower where it does not (4096 x 512 x 4096 40.1 against
    // 31.7, 1536 x 1024 x 2048, 2048 x 1024 x 1024).
    auto tiles = [&](int v) { return tiles_of(step.variants[static_cast<size_t>(v)], rows); };
    if (2 * tiles(rule.chosen) >= device.sm_count) return rule.chosen;
    if (rule.contraction_split >= 0) {
      const Variant& sv = step.variants[static_cast<size_t>(rule.contraction_split)];
      const int64_t t = tiles(rule.contraction_split);
      if (2 * t < device.sm_count &&
          contraction_splits(contraction_split_blocks(t, reduced, sv.split.chunk, device.sm_count,
                                                      sv.tile.ctas_per_sm),
                             reduced, sv.split.chunk)) {
        return rule.contraction_split;
      }
    }
    for (int v : rule.smaller) {
      if (2 * tiles(v) >= device.sm_count) return v;
    }
    return rule.smaller.back();
  }
  if (step.kind == StepKind::outer_reduction && reduced >= kShortOuterMinReduced) {
    for (int v : rule.short_outer) {
      const Variant& sv = step.variants[static_cast<size_t>(v)];
      if (reduced <= sv.max_reduced && tiles_of(sv, rows) < device.sm_count) {
        return v;
      }
    }
  }
  if (rule.split >= 0) {
    auto runs = [&](int vi) { return split_runs(step, vi, rows, reduced, device); };
    int split = rule.split;
    const int64_t tile = step.variants[static_cast<size_t>(split)].elements_per_block;
    if (rule.narrow_split >= 0 && rows < tile) {
      const Variant& narrow = step.variants[static_cast<size_t>(rule.narrow_split)];
      const int64_t vec = config_vec(narrow);
      if (rule.narrow_scalar_split >= 0 && vec > 1 && rows % vec != 0) {
        split = rule.narrow_scalar_split;
      } else if (rows <= narrow_split_max_rows(tile, narrow.elements_per_block)) {
        split = rule.narrow_split;
        if (rule.deep_split >= 0 && reduced >= kDeepSplitMinReduced) {
          split = rule.deep_split;
          for (int f : rule.fitted_splits) {
            if (step.variants[static_cast<size_t>(f)].elements_per_block >= 2 * rows && runs(f)) {
              split = f;
              break;
            }
          }
        } else if (rule.short_split >= 0 &&
                   reduced <= step.variants[static_cast<size_t>(rule.short_split)].max_reduced) {
          split = rule.short_split;
        }
      }
    }
    if (runs(split)) return split;
  }
  if (rule.tiers.empty()) return rule.chosen;
  int64_t limit = rule.tiers.back().first;
  for (const auto& [l, variant] : rule.tiers) {
    if (l >= reduced) {
      limit = l;
      break;
    }
  }
  // Of the tiers of that limit, the one with the largest min_rows_per_sm that the rows reach
  // (an ordinary tier's is 0); the first of them if none is reached.
  int best = -1, first = -1;
  int64_t best_min = -1;
  const int64_t rows_per_sm = rows / std::max(device.sm_count, 1);
  for (const auto& [l, variant] : rule.tiers) {
    if (l != limit) continue;
    if (first < 0) first = variant;
    const int64_t min = step.variants[static_cast<size_t>(variant)].min_rows_per_sm;
    if (min > best_min && rows_per_sm >= min) {
      best = variant;
      best_min = min;
    }
  }
  if (best < 0) best = first;
  // Each row alone on its SM (config.h row_few_rows_config says why and what was measured).
  if (rows <= device.sm_count / few_rows_sm_divisor(limit)) {
    for (const auto& [l, variant] : rule.few_rows) {
      if (l == limit) best = variant;
    }
  }
  return odd_rows_variant(step, rule, best, reduced);
}

}  // namespace

int heuristic_variant(const Step& step, const StepRule& rule, int64_t rows, int64_t reduced,
                      const DeviceFacts& device) {
  const int v = heuristic_pick(step, rule, rows, reduced, device);
  if (step.kind != StepKind::outer_reduction || v < 0 ||
      static_cast<size_t>(v) >= rule.scalar_columns.size() || rows < 1) {
    return v;
  }
  const Variant& picked = step.variants[static_cast<size_t>(v)];
  const int64_t vec = config_vec(picked);
  if (vec <= 1 || rows % vec == 0) return v;  // a manifest's vec: unchecked
  const int twin = rule.scalar_columns[static_cast<size_t>(v)];
  if (picked.split.phases == 0) return twin >= 0 ? twin : v;
  // A split runs for fewer tiles than SMs; the unsplit default's scalar twin (or the default,
  // scalar already), of narrower tiles, may have enough, and runs where the split's twin would
  // not split.
  int unsplit = -1;
  if (rule.chosen >= 0 && static_cast<size_t>(rule.chosen) < rule.scalar_columns.size()) {
    unsplit = config_vec(step.variants[static_cast<size_t>(rule.chosen)]) <= 1
                  ? rule.chosen
                  : rule.scalar_columns[static_cast<size_t>(rule.chosen)];
  }
  if (unsplit >= 0 &&
      tiles_of(step.variants[static_cast<size_t>(unsplit)], rows) >= device.sm_count) {
    return unsplit;
  }
  if (twin >= 0 && split_runs(step, twin, rows, reduced, device)) return twin;
  return unsplit >= 0 ? unsplit : v;
}

StepRule pinned_rule(const StepRule& rule, int variant) {
  StepRule pinned;
  pinned.chosen = variant;
  pinned.scalar_fallback = rule.scalar_fallback;
  pinned.map_fallback = rule.map_fallback;
  pinned.odd_rows = rule.odd_rows;
  pinned.reads_strided = rule.reads_strided;
  pinned.strided = rule.strided;
  pinned.strided_tiers = rule.strided_tiers;
  return pinned;
}

int strided_variant(const StepRule& rule, int64_t reduced) {
  for (const auto& [limit, variant] : rule.strided_tiers) {
    if (reduced <= limit) return variant;
  }
  return rule.strided;
}

int tiled_variant(const Step& step, const StepRule& rule, int variant,
                  std::span<const int64_t> space, const DeviceFacts& device) {
  if (rule.odd_tiles < 0 || variant != rule.chosen || step.tile_across.empty()) return variant;
  // The product of the extents at `positions`; 0 for a position past the space, an extent
  // below 1 or a product past int64 (unchecked input: the rule then keeps `variant`).
  auto extent = [&](const std::vector<int>& positions) {
    int64_t n = 1;
    for (int p : positions) {
      if (p < 0 || static_cast<size_t>(p) >= space.size() || space[static_cast<size_t>(p)] < 1 ||
          __builtin_mul_overflow(n, space[static_cast<size_t>(p)], &n)) {
        return int64_t{0};
      }
    }
    return n;
  };
  const int64_t across = extent(step.tile_across), inner = extent(step.tile_inner);
  if (across < 1 || inner < 1) return variant;
  const Variant& chosen = step.variants[static_cast<size_t>(rule.chosen)];
  const int64_t vec = std::max<int64_t>(config_vec(chosen), 1);  // a manifest's config: unchecked
  const int64_t tile_in = std::max<int64_t>(config_knob(chosen, "tile_in", 1), 1);
  const int64_t tile_out = std::max<int64_t>(config_knob(chosen, "tile_out", 1), 1);
  const bool smaller = rule.odd_tiles_smaller;
  if (across < tile_in / 2 || inner < tile_out / 2 || across % vec != 0) return rule.odd_tiles;
  // Aligned input rows (the innermost extent alone not a multiple of the vector) keep the larger
  // tiles, which run the aligned-rows path; tiles of the same size run odd_tiles' threads.
  if (inner % vec != 0 && !smaller) return rule.odd_tiles;
  if (smaller) {
    // The chosen one's tiles: its two sides' times every other extent (the whole space's
    // elements over the tiles' two extents; no product here passes the space's).
    int64_t all = 1;
    for (int64_t e : space) {
      if (e < 1 || __builtin_mul_overflow(all, e, &all)) return variant;
    }
    const int64_t tiles =
        ceil_div(across, tile_in) * ceil_div(inner, tile_out) * (all / across / inner);
    if (tiles < kFewTilesPerSm * std::max(device.sm_count, 1)) return rule.odd_tiles;
  }
  return variant;
}

int rule_variant(const Step& step, const StepRule& rule, std::span<const int64_t> space,
                 std::span<const int64_t> reduced, const DeviceFacts& device) {
  auto product = [](std::span<const int64_t> extents) -> std::optional<int64_t> {
    int64_t n = 1;
    for (int64_t e : extents) {
      if (e < 1 || __builtin_mul_overflow(n, e, &n)) return std::nullopt;
    }
    return n;
  };
  const std::optional<int64_t> rows = product(space), r = product(reduced);
  if (!rows || !r) return rule.chosen;
  int v = heuristic_variant(step, rule, *rows, *r, device);
  v = prefetching_variant(step, rule, v, space, *rows, *r, device);
  v = few_tiles_variant(step, rule, v, *rows, *r, device);
  return tiled_variant(step, rule, v, space, device);
}

int prefetching_variant(const Step& step, const StepRule& rule, int variant,
                        std::span<const int64_t> space, int64_t rows, int64_t reduced,
                        const DeviceFacts& device) {
  if (step.kind != StepKind::outer_reduction || rule.prefetching < 0 || space.size() < 2 ||
      variant < 0 || static_cast<size_t>(variant) >= step.variants.size() || rows < 1 ||
      reduced <= kShortOuterMaxReduced) {
    return variant;
  }
  const Variant& picked = step.variants[static_cast<size_t>(variant)];
  const int64_t vec = config_vec(picked);
  if (vec <= 1 || rows % vec != 0 || space.back() % vec == 0 || picked.max_reduced > 0) {
    return variant;
  }
  return tiles_of(step.variants[static_cast<size_t>(rule.prefetching)], rows) >= device.sm_count
             ? rule.prefetching
             : variant;
}

int few_tiles_variant(const Step& step, const StepRule& rule, int variant, int64_t rows,
                      int64_t reduced, const DeviceFacts& device) {
  if (step.kind != StepKind::outer_reduction || rule.deep_split < 0 || rule.chosen < 0 ||
      variant < 0 || variant == rule.chosen || rows < 1 || reduced <= kShortOuterMaxReduced ||
      static_cast<size_t>(variant) >= step.variants.size() ||
      static_cast<size_t>(rule.chosen) >= step.variants.size()) {
    return variant;
  }
  const Variant& v = step.variants[static_cast<size_t>(variant)];
  const bool stands_in = variant == rule.prefetching ||
                         std::find(rule.scalar_columns.begin(), rule.scalar_columns.end(),
                                   variant) != rule.scalar_columns.end();
  if (!stands_in || v.split.phases > 0 || config_vec(v) > 1 || v.max_reduced > 0 ||
      config_vec(step.variants[static_cast<size_t>(rule.chosen)]) <= 1) {
    return variant;
  }
  return tiles_of(v, rows) < 2 * int64_t{std::max(device.sm_count, 1)} ? few_tiles_pick(rule)
                                                                       : variant;
}

// The stand-in's columns are not whole vectors, so neither are the deep split's: its twin of
// scalar loads where it has one.
int few_tiles_pick(const StepRule& rule) {
  const auto d = static_cast<size_t>(rule.deep_split);
  return d < rule.scalar_columns.size() && rule.scalar_columns[d] >= 0 ? rule.scalar_columns[d]
                                                                       : rule.deep_split;
}

int odd_rows_variant(const Step& step, const StepRule& rule, int variant, int64_t reduced) {
  if (variant < 0 || static_cast<size_t>(variant) >= rule.odd_rows.size()) return variant;
  const int twin = rule.odd_rows[static_cast<size_t>(variant)];
  if (twin < 0) return variant;
  const int64_t vec = config_vec(step.variants[static_cast<size_t>(twin)]);
  return vec > 1 && reduced % vec != 0 ? twin : variant;
}

}  // namespace kiln::bundle
