// See config.h.
#include "compiler/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

namespace kiln {

std::string config_text(const std::map<std::string, int64_t>& config) {
  std::string s;
  for (const auto& [k, v] : config) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v);
  return s;
}

std::map<std::string, int64_t> PointwiseConfig::as_map() const {
  if (tiled())
    return {{"block", block}, {"vec", vec}, {"tile_in", tile_in}, {"tile_out", tile_out}};
  if (strided) return {{"block", block}, {"vec", vec}, {"unroll", unroll}, {"strided", 1}};
  return {{"block", block}, {"vec", vec}, {"unroll", unroll}};
}

std::vector<PointwiseConfig> pointwise_config_space(int max_vec) {
  std::vector<PointwiseConfig> space;
  for (int vec : {1, max_vec}) {
    for (int block : {128, 256, 512}) {
      for (int unroll : {1, 2, 4}) space.push_back({block, vec, unroll});
    }
    if (max_vec == 1) break;
  }
  return space;
}

// Measured on an H200 (bench/results/2026-11-21-h200-pointwise.md): 128 threads with two
// vectors in flight was the best or within 3% of the best config for add, swiglu and bias_gelu
// (and for gathers: config.h).
PointwiseConfig default_pointwise_config(int max_vec) {
  return {128, max_vec, 2};
}

PointwiseConfig heavy_pointwise_config(int max_vec) {
  return {128, max_vec, 4};
}

namespace {

// A tiled config if its tile is valid (config.h) and fits the static shared memory: vec x vec
// blocks a multiple of the block, at most 16 vectors loaded per thread.
std::optional<PointwiseConfig> tiled_config(int block, int vec, int tile_in, int tile_out,
                                            int smem_bytes_per_element) {
  if (tile_in % vec != 0 || tile_out % vec != 0) return std::nullopt;
  const int64_t blocks = int64_t{tile_in / vec} * (tile_out / vec);
  if (blocks % block != 0 || blocks / block * vec > 16) return std::nullopt;
  if (int64_t{tile_in} * tile_out * smem_bytes_per_element > kStaticSmemBytes) return std::nullopt;
  return PointwiseConfig{block, vec, 1, tile_in, tile_out};
}

}  // namespace

std::vector<PointwiseConfig> tiled_config_space(int max_vec, int smem_bytes_per_element) {
  std::vector<PointwiseConfig> space;
  auto add = [&](std::optional<PointwiseConfig> c) {
    if (c && std::find(space.begin(), space.end(), *c) == space.end()) space.push_back(*c);
  };
  add(default_tiled_config(max_vec, smem_bytes_per_element));
  for (auto [in, out] :
       {std::pair{64, 64}, {32, 32}, {32, 64}, {64, 32}, {128, 64}, {64, 128}, {128, 128}}) {
    for (int block : {64, 128, 256, 512}) {
      add(tiled_config(block, max_vec, in, out, smem_bytes_per_element));
    }
  }
  // Scalar: 16 and 4 elements per thread.
  add(tiled_config(256, 1, 64, 64, smem_bytes_per_element));
  add(tiled_config(256, 1, 32, 32, smem_bytes_per_element));
  return space;
}

// Square tiles of 16 x vec on a side where they fit the static shared memory, with 16 vectors
// in flight per thread (256 bytes) and at least 64 threads. Measured on an H200
// (bench/results/2026-11-25-h200-memory-bound, every variant): f32 64 x 64 tiles on 64 threads
// beat the former default (the same tiles on 256 threads, 4 vectors per thread) by 1.67x on an
// 8191 x 8193 transpose and 1.12x on a transpose with an add, level elsewhere; bf16 128 x 128
// tiles on 128 threads beat 64 x 64 on 64 threads by 1.23x on an 8192^2 transpose and 1.22x
// on [B, S, H, D] -> [B, H, D, S].
PointwiseConfig default_tiled_config(int max_vec, int smem_bytes_per_element) {
  int side = std::max(64, 16 * max_vec);
  while (side > max_vec &&
         int64_t{side} * side * std::max(smem_bytes_per_element, 1) > kStaticSmemBytes) {
    side /= 2;
  }
  const int blocks = (side / max_vec) * (side / max_vec);
  const int block = std::min(blocks, std::max(64, blocks * max_vec / 16));
  return {block, max_vec, 1, side, side};
}

int tile_blocks_per_sm(const ReductionConfig& c) {
  return c.strided && c.stage && c.block >= 512 ? 1024 / c.block : 0;
}

std::map<std::string, int64_t> ReductionConfig::as_map() const {
  std::map<std::string, int64_t> m{
      {"block", block}, {"group", group}, {"vec", vec}, {"items", items}};
  // Absent when off: the configs tuned before these knobs keep their keys.
  if (split) m["split"] = 1;
  if (fuse) m["fuse"] = 1;
  if (stage) m["stage"] = 1;
  if (strided) m["strided"] = 1;
  if (shift) m["shift"] = 1;
  if (prefetch) m["prefetch"] = 1;
  return m;
}

namespace {

// 16 elements per thread as vectors of max_vec (the tiers for long rows hold twice that).
int tier_items(int max_vec) {
  return std::max(1, 16 / max_vec);
}

ReductionConfig row_config(int group, int vec, int items, int block = 0) {
  return {std::max({group, 128, block}), group, vec, items};
}

// The heuristic's tiers: one row per 8 .. 64 threads with 16 elements per thread (rows of up
// to 1024), then 64 .. 512 threads with 32 (up to 16384); longer rows loop on the last.
// Measured on an H200 (bench/results/2026-11-21-h200-reductions.md, third run): what limits a
// persistent row kernel is the rows in flight per SM, so small blocks holding more elements
// per thread win once registers stay low (bf16 layernorm of 4096: 128 threads x 32 elements
// 140.4 us, 256 x 16 148.5 us, 512 x 8 255.6 us; softmax of 8192: 256 x 32 69.7 us, 512 x 16
// 78.1 us). 1024 threads x 32 elements would spill (64 registers at most).
// Spread tiers (rows that one pass reads and whose elements nothing stores, of 4-byte
// vectors: StepPlan::spread_tiers): the rows of 1025 .. 8192 on twice the threads with 16
// elements each (128 .. 512 threads), the same limits. Measured on an H200
// (bench/results/2026-12-02-h200-spread-rows, calls 1 and 3): f32 sums, maxima and dot products
// of rows of 1500, 3000 and 6000 at 264 to 16896 rows took 0.82-0.99 of the packed tier's time
// at all 54 shapes (sums of 264 x 1500 5.6 -> 4.8 us, 16896 x 1500 27.4 -> 26.2, maxima of
// 4224 x 6000 27.3 -> 26.2); at 12000 (512 -> 1024 threads) 0.91-1.08, so the 16384 tier stays.
// Where the row is read twice or stored, or its elements are 2 bytes, spreading was level or
// slower: f32 means and variances 0.98-1.06 (1.25-1.73 at 12000), f32 softmax 0.94-1.06, bf16
// sums 1.00-1.23, bf16 softmax and layernorm 0.91-1.36.
constexpr int kLargestTierGroup = 512;
constexpr int kManyRowsGroup = 128;
bool is_tier(const ReductionConfig& c, int max_vec, bool spread) {
  const int items = tier_items(max_vec);
  if (c.split || c.fuse || c.stage || c.shift || c.vec != max_vec ||
      c.block != std::max(c.group, 128)) {
    return false;
  }
  if (c.group <= 64 && c.items == items) return true;  // rows of up to 1024
  if (spread) {
    return (c.group >= 128 && c.group <= kLargestTierGroup && c.items == items) ||
           (c.group == kLargestTierGroup && c.items == 2 * items);
  }
  return c.group >= 64 && c.group <= kLargestTierGroup && c.items == 2 * items;
}

}  // namespace

std::vector<ReductionConfig> row_reduction_space(int max_vec, bool fusable) {
  const int items = tier_items(max_vec);
  std::vector<ReductionConfig> space;
  auto add = [&](ReductionConfig c) {
    if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
  };
  for (int group = 8; group <= 64; group *= 2) add(row_config(group, max_vec, items));
  for (int group = 64; group <= 512; group *= 2) add(row_config(group, max_vec, 2 * items));
  // Other splits for the tuner: fewer elements per thread, more rows per block.
  add(row_config(32, max_vec, 2 * items));
  for (int group = 128; group <= 1024; group *= 2) add(row_config(group, max_vec, items));
  if (items >= 2) {
    for (int group : {256, 1024}) add(row_config(group, max_vec, items / 2));
  }
  for (int group : {32, 64}) add(row_config(group, max_vec, items, 256));
  if (max_vec > 1) {
    add(row_config(32, 1, 8));
    add(row_config(256, 1, 8));
    add(row_config(1024, 1, 8));
  }
  for (const ReductionConfig& c : split_row_configs(max_vec)) add(c);
  if (fusable) {
    const size_t unfused = space.size();
    for (size_t i = 0; i < unfused; ++i) {
      if (space[i].split) continue;
      ReductionConfig c = space[i];
      c.fuse = true;
      space.push_back(c);
    }
  }
  return space;
}

// 512 threads per slice with 16 elements each: 4 blocks fill an SM's 2048 threads.
std::vector<ReductionConfig> split_row_configs(int max_vec) {
  const int items = tier_items(max_vec);
  return {{512, 512, max_vec, items, true},
          {256, 256, max_vec, 2 * items, true},
          {1024, 1024, max_vec, items, true}};
}

// One row per block, as many threads as fit (the staged row bounds the blocks per SM: a row
// of 64K bf16 takes 128 KB, one block per SM on Hopper), 16 elements per thread per chunk.
// On an H200 (rows of 65536 bf16) 1024 threads were the fastest of the three, and still
// slower than the plain looped tier: the tuner picks them or not.
std::vector<ReductionConfig> staged_row_configs(int max_vec) {
  const int items = tier_items(max_vec);
  std::vector<ReductionConfig> out;
  for (int group : {1024, 512, 256}) {
    ReductionConfig c = row_config(group, max_vec, items);
    c.stage = true;
    out.push_back(c);
  }
  return out;
}

int64_t row_heuristic_limit(const ReductionConfig& c, int max_vec, LoopedFusion looped,
                            bool spread) {
  if (!c.fuse) return is_tier(c, max_vec, spread) ? c.capacity() : 0;
  // Measured on an H200 (bench/results/2026-11-21-h200-reductions-run5.log, D): looped rows
  // of 65536, mean_var 132.3 -> 82.4 us and logsumexp 131.1 -> 73.9 us fused (one pass),
  // but softmax 101.3 -> 105.3 us and layernorm 108.4 -> 111.0 us (two passes either way).
  // Two-pass rows, fused 512-thread tier against unfused, 12 shapes
  // (bench/results/2026-11-25-h200-rows, fused.txt): f32 softmax 1.19-1.32x faster fused at all
  // 4 (4096 x 32768 294.8 us against 387.8); bf16 softmax 1.03-1.10x slower at 3 of 4 (4096 x
  // 65536 357.2 against 342.0; 1.28x faster at 2048 x 131072); layernorm level or slower.
  ReductionConfig unfused = c;
  unfused.fuse = false;
  if (looped == LoopedFusion::none || !is_tier(unfused, max_vec, spread)) return 0;
  if (c.group != kLargestTierGroup && (c.group != kManyRowsGroup || looped != LoopedFusion::many)) {
    return 0;
  }
  return std::numeric_limits<int64_t>::max();
}

// Measured on an H200 (bench/results/2026-11-24-h200-everyday, looped.txt): with many looped
// rows the fused single pass runs faster on 128 threads per row than on 512: cross-entropy of
// 32768 rows of 32768 bf16 498.0 us against 784.7 us, logsumexp of 8192 x 65536 bf16 254.1
// against 307.5, f32 4096 x 32768 level (133.3 against 132.4); 1024 x 65536 bf16 (7.8 rows
// per SM, below the threshold, which stays on the measured side) 45.2 against 50.3. The two-pass
// rows (softmax, layernorm) stay on 512 threads: their unfused 512 tier beat every 128-thread
// variant (softmax f32 4096 x 32768 387.5 us against 415.9 at best).
int64_t row_many_rows_per_sm(const ReductionConfig& c, int max_vec, LoopedFusion looped) {
  if (!c.fuse || c.group != kManyRowsGroup) return 0;
  return row_heuristic_limit(c, max_vec, looped) > 0 ? kManyRowsPerSm : 0;
}

std::optional<ReductionConfig> row_shift_twin(const ReductionConfig& c, int max_vec,
                                              LoopedFusion looped, bool spread) {
  if (c.vec == 1 || c.shift || c.strided || row_heuristic_limit(c, max_vec, looped, spread) == 0) {
    return std::nullopt;
  }
  ReductionConfig twin = c;
  twin.shift = true;
  return twin;
}

// Measured on an H200 (bench/results/2026-11-28-h200-weight-prefetch, call 4: 1, 8 and 33
// rows, every variant): the norms' tiers (128 threads a row at 4096, 256 at 8192, 64 at 1000)
// took 1.03-1.28x the time of the fastest variant, which was 512 threads a row at 4096 and
// 8192 (4 vectors a thread at most) and 256 at 1000 (one); the softmaxes, which read no
// weight, were within 4% of theirs on their tiers (call 5). On few rows each row is its SM's
// only work: more threads a row put more of it in flight, and fewer vectors a thread mean
// fewer weight loads one after another in the store pass.
std::optional<ReductionConfig> row_few_rows_config(const ReductionConfig& c, int max_vec) {
  const int64_t limit = row_heuristic_limit(c, max_vec);
  if (limit == 0 || c.group < 64) return std::nullopt;
  int group = kLargestTierGroup;
  while (group > 1 && int64_t{group} * max_vec > limit) group /= 2;
  std::optional<ReductionConfig> best;
  for (const ReductionConfig& o : row_reduction_space(max_vec)) {
    if (o.group == group && o.block == group && o.vec == max_vec && !o.split && !o.fuse &&
        !o.stage && !o.shift && !o.strided && o.capacity() >= limit &&
        (!best || o.items < best->items)) {
      best = o;
    }
  }
  if (!best || *best == c) return std::nullopt;
  return best;
}

ReductionConfig default_row_config(int max_vec) {
  return row_config(256, max_vec, 2 * tier_items(max_vec));
}

std::vector<ReductionConfig> outer_reduction_space(int max_vec) {
  std::vector<ReductionConfig> space;
  for (int vec : {max_vec, 1}) {
    for (auto [x, y] :
         {std::pair{8, 32}, {32, 8}, {16, 16}, {16, 32}, {32, 32}, {32, 16}, {64, 4}}) {
      space.push_back({x * y, y, vec, 4});
    }
    if (max_vec == 1) break;
  }
  // Around the default (32 columns, scalar loads): more steps in flight, wider blocks, pairs.
  for (ReductionConfig c : {ReductionConfig{256, 8, 1, 8},
                            {128, 4, 1, 8},
                            {512, 16, 1, 4},
                            {512, 8, 1, 4},
                            {256, 8, std::max(1, max_vec / 2), 4},
                            {512, 8, std::max(1, max_vec / 2), 4},
                            {512, 16, std::max(1, max_vec / 2), 4}}) {
    if (c.vec <= max_vec && std::find(space.begin(), space.end(), c) == space.end()) {
      space.push_back(c);
    }
  }
  // 16-byte loads with 8 steps in flight, for the tuner (after the others: their ids stay).
  for (ReductionConfig c : {ReductionConfig{256, 8, max_vec, 8}, {128, 4, max_vec, 8}}) {
    if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
  }
  // Split over the reduced extent, for few columns: the rule's two (the default split, then
  // the narrow one for fewer columns than its tile), then the others for the tuner, then the
  // rule's deep one (last: the ids before it stay those of earlier bundles).
  for (ReductionConfig c :
       {default_outer_split_config(max_vec), narrow_outer_split_config(max_vec),
        ReductionConfig{256, 8, max_vec, 2}, ReductionConfig{256, 8, std::max(1, max_vec / 2), 4},
        ReductionConfig{512, 16, 1, 4}, ReductionConfig{512, 8, std::max(1, max_vec / 2), 4},
        ReductionConfig{256, 32, max_vec, 4}, deep_outer_split_config(max_vec)}) {
    c.split = true;
    if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
  }
  // After the deep split, so that every id before stays that of earlier bundles.
  for (const ReductionConfig& c : fitted_outer_split_configs(max_vec)) {
    if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
  }
  // Last, the same: scalar loads with 8 steps in flight, prefetched (prefetching_outer_configs).
  for (const ReductionConfig& c : prefetching_outer_configs()) space.push_back(c);
  return space;
}

// Measured on an H200 (bench/results/2026-11-21-h200-reductions.md, third run): for column
// sums, 8-byte loads over 64 columns per block with 8 threads along the rows (134.1 us, 97% of
// copy) beat scalar loads over 32 columns (140.9 us) and 16-byte loads (143.6 us at best).
// (Measured before whole chunks walked unmasked, which cut the registers: to be measured again.)
ReductionConfig default_outer_config(int max_vec) {
  return {256, 8, std::max(1, max_vec / 2), 4};
}

// Expected, not yet measured (the lead measures every variant): 16-byte loads with 4 steps in
// flight, 64 bytes a thread, from 256 columns (bf16; 128 f32) per tile, so a warp reads 512
// contiguous bytes of a row. The default's 8-byte loads (4 blocks of 78 registers per SM)
// reached 45.6% of DRAM bandwidth on bf16 column sums of 65536 x 2048 (Nsight Compute).
ReductionConfig default_outer_split_config(int max_vec) {
  return {256, 8, max_vec, 4, true};
}

// For fewer columns than the default split's tile: 8 threads along the rows with 16 bytes each
// (64 bf16 columns, 32 f32), so no thread idles on 64 columns (the default split's tile of 256
// would leave 3 in 4 of its threads idle), 16 along the reduced index with 8 steps in flight.
// Measured on an H200 against 256 threads (32 along the reduced index, 4 steps), now the
// tuner's, interleaved, 200 launches (bench/results/2026-11-27-h200-scan-overlap, call 4):
// column sums bf16 1048576 x 64 54.4 -> 52.9 us, 524288 x 128 54.8 -> 53.5, 4194304 x 16 111.1
// -> 100.2, f32 1048576 x 32 54.8 -> 52.5, ln_wgrad bf16 1048576 x 64 90.4 -> 86.8; 256 threads
// with 8 steps and 512 with 4 were no faster.
ReductionConfig narrow_outer_split_config(int max_vec) {
  return {128, 16, max_vec, 8, true};
}

// Once the narrow split's chunks summed plainly, 16 steps in flight (4 blocks of 128 registers
// per SM: 128 KB of loads in flight against 80 KB with 8 steps) were 2-9% faster on long bf16
// column sums on an H200 (4194304 x 16 65.5 -> 59.5 us, 1048576 x 64 52.3 -> 51.0: bench/
// results/2026-11-27-h200-few-columns, call 6), but its chunks of 256 need twice the rows to
// split at all and give fewer blocks on short columns: 1.7-2.9x slower from 1024 to 2047 rows,
// where the rule ran the unsplit default instead, and up to 13% slower from 2048 to 4096
// (bench/results/2026-11-28-h200-narrow-split, call 1). The rule runs it from 65536 rows on
// (bundle/rule.h kDeepSplitMinReduced).
ReductionConfig deep_outer_split_config(int max_vec) {
  return {128, 16, max_vec, 16, true};
}

// Measured on an H200 (bench/results/2026-11-30-h200-few-column-tiles, call 2: 50 launches
// each, the deep split's 8 threads along the rows against these 4 and 2): bf16 column sums of
// 8388608 x 8 took 88.7 us on the deep split (one of its 8 threads has a column), 62.2 on 4 and
// 60.4 on 2; 4194304 x 16 57.1, 54.0 and 59.3; the layernorm weight gradient 4194304 x 16 107.1,
// 92.7 and 104.4; but 2097152 x 32 49.6, 53.1 and 62.3, f32 2097152 x 16 49.3, 50.5 and 59.4,
// bf16 1048576 x 64 49.0, 57.8 and 78.5. Of the three, the narrowest whose tile holds twice the
// columns or more was the fastest at every shape (the rule, bundle/rule.h
// StepRule::fitted_splits); the tile the columns fill (2 threads on 16 bf16 columns) was not.
std::vector<ReductionConfig> fitted_outer_split_configs(int max_vec) {
  std::vector<ReductionConfig> out;
  for (const int across : {4, 2}) {
    ReductionConfig c = deep_outer_split_config(max_vec);
    c.group = c.block / across;
    out.push_back(c);
  }
  return out;
}

// Measured on an H200 (bench/results/2026-12-01-h200-outer-scalar, calls 1-4): ptxas, asked
// for 6 blocks of 256 threads an SM (build_image's occupancy hint), issued 2 of the 4 or 8
// scalar loads of a chunk at a time in some kernels and all of them in others (cuobjdump: the
// bf16 column sums' 4 steps, the bf16 mean over a middle axis's 8), and the same config ran
// 2-3x apart (bf16 column sums of 8192 x 32768 443 against 194 us; the mean over [8, 2048,
// 4097] 146.6 against 75.3). Loading the next chunk before summing the last puts a chunk's
// loads in flight together: with 8 steps, f32 column sums of 6000 x 20001 179.3 -> 127.7 us
// (128 threads: 313.7 -> 146.1), the bf16 mean 146.6 -> 52.4, the f32 mean over [64, 1024,
// 513] 40.3 -> 38.5; but bf16 column sums whose schedule already held 8 in flight 4-10% slower
// (8192 x 20001 100.5 -> 110.0), and where the registers grew past the hint (128 threads, f32
// mean over [64, 1024, 513]: 40 -> 70 registers) up to 1.4x slower. So these are variants of
// their own: the rule runs the first for means over a middle axis whose innermost extent is
// not a multiple of the vector (bundle/rule.h StepRule::prefetching).
std::vector<ReductionConfig> prefetching_outer_configs() {
  std::vector<ReductionConfig> out{{256, 8, 1, 8}, {128, 4, 1, 8}};
  for (ReductionConfig& c : out) c.prefetch = true;
  return out;
}

// Measured on an H200 (bench/results/2026-11-28-h200-short-outer, calls 1 and 2): from 128 to
// 1023 rows, 32 threads along the reduced index over 32 columns of scalars were the fastest
// variant or within 10% of it wherever their tiles were fewer than the SMs (bf16 column sums over
// 16 to 4096 columns, f32 over 32 to 4096, the layernorm weight gradient over 64 and 1024; e.g.
// bf16 over 64 columns of 512 rows 7.0 us against 11.9 for the default, over 4096 of 1000 rows
// 11.6 against 14.4 for the split the rule ran). Over more columns (bf16 8192 and 16384, the
// weight gradient over 8192), 16 threads over 32 vectors of 8 bytes: bf16 over 8192 columns of
// 512 rows 10.1 us against 13.8 (the split) and 12.4 (32 threads over scalars, twice the
// blocks). Over 65536 columns the default (8 threads) was 5-10% faster than either.
std::vector<ReductionConfig> short_outer_configs(int max_vec) {
  return {{1024, 32, 1, 4}, {512, 16, std::max(1, max_vec / 2), 4}};
}

// Measured there: from 1024 to 24576 rows over few columns, chunks of 32 rows gave 4x the
// blocks of the narrow split's chunks of 128 and took 9.3-15.0 us against 10.6-15.8 (bf16 over
// 64 columns of 4096 rows 9.7 against 11.2); from 30000 rows level or slower (up to 5%).
ReductionConfig short_outer_split_config(int max_vec) {
  ReductionConfig c = default_outer_config(max_vec);
  c.split = true;
  return c;
}

std::map<std::string, int64_t> ScanConfig::as_map() const {
  std::map<std::string, int64_t> m = {{"block", block}, {"group", group}, {"vec", vec}};
  if (items > 1) m["items"] = items;
  if (split) m["split"] = 1;
  return m;
}

std::vector<ScanConfig> row_scan_space(int max_vec) {
  std::vector<ScanConfig> space;
  if (max_vec > 1) {
    space.push_back({256, 32, max_vec, 1, false});  // a warp per row, 8 rows per block
    space.push_back({512, 512, max_vec, 1, false});
    space.push_back({256, 256, max_vec, 1, false});
    space.push_back({1024, 1024, max_vec, 1, false});
  }
  // The first scalar variant is the step's fallback for misaligned pointers: a block per row.
  space.push_back({512, 512, 1, 1, false});
  space.push_back({256, 32, 1, 1, false});
  // Split rows: tiles of 16 elements a thread (16 / vec chunks) in 512 threads.
  space.push_back({512, 512, max_vec, std::max(1, 16 / max_vec), true});
  // Several chunks loaded ahead per step (items): more bytes in flight per thread.
  if (max_vec > 1) {
    space.push_back({256, 256, max_vec, 2, false});
    space.push_back({256, 256, max_vec, 4, false});
    space.push_back({512, 512, max_vec, 2, false});
    // Split rows of other tiles (block x vec x items elements), for the tuner.
    space.push_back({256, 256, max_vec, std::max(1, 32 / max_vec), true});
    space.push_back({256, 256, max_vec, std::max(1, 16 / max_vec), true});
    space.push_back({512, 512, max_vec, std::max(1, 8 / max_vec), true});
    space.push_back({1024, 1024, max_vec, std::max(1, 8 / max_vec), true});
  }
  return space;
}

// Measured on an H200 (bench/results/2026-11-24-h200-shapes): 256 threads loading two chunks
// ahead were the fastest on long rows (f32 32768 and 131072: 291 and 297 us against 387 and
// 389 for 512 threads with one chunk; 262144: 206 against 203). Since rows load a step ahead,
// the shorter tiers are config.h's (warp_scan_limit, block_scan_limit).
ScanConfig default_row_scan_config(int max_vec) {
  return {256, 256, max_vec, 2, false};
}

int64_t row_scan_tier_limit(const ScanConfig& c, int max_vec) {
  if (c.split || c.vec != max_vec) return 0;
  if (c.group == 32 && c.block == 256 && c.items == 1) return warp_scan_limit(max_vec);
  if (c == ScanConfig{256, 256, max_vec, 1, false}) return block_scan_limit(max_vec);
  if (c == default_row_scan_config(max_vec)) return std::numeric_limits<int64_t>::max();
  return 0;
}

// Outer scans are bound by the loads in flight (columns x items): 4K x 32K f32 has 32K
// columns, so each thread loads 16 rows ahead by default.
std::vector<ScanConfig> outer_scan_space(int max_vec) {
  std::vector<ScanConfig> space = {
      {128, 1, 1, 16, false}, {128, 1, 1, 4, false}, {256, 1, 1, 8, false}, {64, 1, 1, 16, false}};
  if (max_vec > 1) {
    space.push_back({128, 1, max_vec, 8, false});
    space.push_back({64, 1, max_vec, 8, false});
  }
  return space;
}

ScanConfig default_outer_scan_config(int /*max_vec*/) {
  return {128, 1, 1, 16, false};
}

std::map<std::string, int64_t> ContractionConfig::as_map() const {
  std::map<std::string, int64_t> m{
      {"tile_m", tile_m},   {"tile_n", tile_n},   {"tile_k", tile_k},
      {"warps_m", warps_m}, {"warps_n", warps_n}, {"stages", stages},
      {"group", group},     {"raster", raster},   {"ctas", ctas_per_sm}};
  if (wgmma) m["wgmma"] = 1;
  if (tma) m["tma"] = 1;
  if (pingpong) m["pingpong"] = 1;
  if (smem_epilogue) m["smem_epilogue"] = 1;
  if (cluster > 1) m["cluster"] = cluster;
  if (tma_store) m["tma_store"] = 1;
  if (split) m["split"] = 1;
  return m;
}

ContractionConfig with_element_bytes(ContractionConfig c, int element_bytes) {
  c.tile_k = c.tile_k * 2 / element_bytes;
  return c;
}

std::vector<ContractionConfig> contraction_config_space() {
  return {
      // mma.sync: 128 x 128, 2 x 4 warps of 64 x 32, two blocks per SM.
      {128, 128, 32, 2, 4, 4, 8, 0, 2},
      // 128 x 256 and 256 x 128: a warp holds 64 x 64 (128 accumulators a thread).
      {128, 256, 32, 2, 4, 3, 8, 0, 1},
      {256, 128, 32, 4, 2, 3, 8, 0, 1},
      // 64 x 64 for problems of few tiles (the rule runs the smallest tiles when the default
      // would leave SMs idle: bundle/rule.h).
      {64, 64, 32, 2, 2, 4, 8, 0, 4},
      // wgmma (sm_90a; mma.sync elsewhere): 128 x 128 and 128 x 256, the copies issued by
      // the MMA warps stages - 2 steps ahead.
      {128, 128, 64, 8, 1, 4, 8, 0, 1, 1},
      {128, 256, 64, 8, 1, 4, 8, 0, 1, 1},
      // Two blocks per SM of 128 x 128 (3 stages, 96 KiB each): one's epilogue overlaps the
      // other's MMAs.
      {128, 128, 64, 8, 1, 3, 8, 0, 2, 1},
      // Warp-specialized, TMA-fed: 128 x 256 in 4 stages (192 KiB) in clusters of two blocks
      // sharing B's tiles (the default), 128 x 128 in 6 (the rule's tiles for problems of few
      // tiles).
      default_contraction_config(),
      {128, 128, 64, 8, 1, 6, 8, 0, 1, 1, 1},
      // Ping-pong (one warpgroup per tile, two tiles in flight): 64 x 256 in 5 stages
      // (200 KiB), 128 x 128 in 7 (224 KiB).
      {64, 256, 64, 8, 1, 5, 8, 0, 1, 1, 1, 1},
      {128, 128, 64, 8, 1, 7, 8, 0, 1, 1, 1, 1},
      // 128 x 256 with the epilogue through shared memory (20 KiB more): the default for
      // transcendental epilogues.
      default_contraction_config_heavy(),
      // The default's tiles without a cluster, and the heavy default's in clusters of two.
      {128, 256, 64, 8, 1, 4, 8, 0, 1, 1, 1, 0, 0, 1, 1},
      {128, 256, 64, 8, 1, 4, 8, 0, 1, 1, 1, 0, 1, 2, 1},
      // TMA-fed 128 x 64 in 8 stages (192 KiB): twice the tiles of 128 x 128 for problems of
      // few tiles (bundle/rule.h).
      {128, 64, 64, 8, 1, 8, 8, 0, 1, 1, 1},
      // Split-K (the rule's choice when even 128 x 128 tiles leave half the SMs idle and the
      // reduced extent is long): TMA-fed 128 x 128 in 6 stages, each tile's reduced extent
      // spread over several blocks.
      contraction_split_config(),
  };
}

// Measured on an H200 (bench/results/2026-11-24-h200-tma): the TMA-fed 128 x 256 tiles took
// 257 us at 4096^3 and 1930 us at 8192^3, against 375 and 2879 for the same tiles copied by
// the MMA warps (cp.async) and more for every other variant; problems with fewer tiles than
// SMs run the 64 x 64 mma.sync tiles (bundle/rule.h). In clusters of two blocks sharing B's
// tiles (bench/results/2026-11-26-h200-cluster: under sustained load, where the GEMM runs at
// the board's power limit and L2's traffic costs clock): 402.2 against 412.0 us at 8192 x
// 4096 x 4096, 199.6 against 203.4 at 4096^3, 1635.2 against 1672.4 at 8192^3 (cuBLAS
// 1638.8), 137.7 against 140.7 for a batch of 16 2048 x 2048 x 512; 10% less L2 traffic.
ContractionConfig default_contraction_config() {
  return {128, 256, 64, 8, 1, 4, 8, 0, 1, 1, 1, 0, 0, 2, 1};
}

// Measured on an H200 (bench/results/2026-11-25-h200-epilogue, every variant at 4 shapes each):
// with bias + erf-GELU fused, 128 x 256 tiles stored through shared memory took 0.82-0.89 of
// the time of the 128 x 128 tiles stored from registers (the default before, itself 0.66-0.74
// of 128 x 256 from registers, whose unrolled epilogue waited on instruction fetch); with SiLU
// times a third tensor 0.94-1.02. With a bias only the register epilogue stays: the staged one
// took 0.98-1.07 of its time.
ContractionConfig default_contraction_config_heavy() {
  return {128, 256, 64, 8, 1, 4, 8, 0, 1, 1, 1, 0, 1, 1, 1};
}

// The split-K config (ContractionConfig::split): the 128 x 128 TMA tiles of the rule's smaller
// ones, the register epilogue (its phase 1 stores what it folded).
ContractionConfig contraction_split_config() {
  ContractionConfig c{128, 128, 64, 8, 1, 6, 8, 0, 1, 1, 1};
  c.split = 1;
  return c;
}

}  // namespace kiln
