// See config.h.
#include "compiler/config.h"

#include <algorithm>

namespace kiln {

std::map<std::string, int64_t> PointwiseConfig::as_map() const {
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
// vectors in flight was the best or within 3% of the best config for add, swiglu and bias_gelu.
PointwiseConfig default_pointwise_config(int max_vec) {
  return {128, max_vec, 2};
}

std::map<std::string, int64_t> ReductionConfig::as_map() const {
  return {{"block", block}, {"group", group}, {"vec", vec}, {"items", items}};
}

namespace {

// 16 elements per thread (as vectors of max_vec): enough loads in flight to cover latency, few
// enough registers for several blocks per SM.
int tier_items(int max_vec) {
  return std::max(1, 16 / max_vec);
}

ReductionConfig row_config(int group, int vec, int items) {
  return {std::max(group, 128), group, vec, items};
}

}  // namespace

namespace {

// The heuristic's tiers: one row per 8 .. 128 threads with 16 elements per thread, then 128 ..
// 1024 threads with 32. Measured on an H200 (bench/results/2026-11-21-h200-reductions.md):
// rows of 8192 ran best on 256 threads with 32 elements each, 512 and 1024 threads per row
// lost to the barriers.
bool is_tier(const ReductionConfig& c, int max_vec) {
  const int items = tier_items(max_vec);
  if (c.vec != max_vec || c.block != std::max(c.group, 128)) return false;
  return (c.group <= 128 && c.items == items) || (c.group >= 128 && c.items == 2 * items);
}

}  // namespace

std::vector<ReductionConfig> row_reduction_space(int max_vec) {
  const int items = tier_items(max_vec);
  std::vector<ReductionConfig> space;
  auto add = [&](ReductionConfig c) {
    if (std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
  };
  for (int group = 8; group <= 128; group *= 2) add(row_config(group, max_vec, items));
  for (int group = 128; group <= 1024; group *= 2) add(row_config(group, max_vec, 2 * items));
  add(row_config(32, max_vec, 2 * items));
  for (int group : {256, 512, 1024}) add(row_config(group, max_vec, items));
  if (items >= 2) {
    for (int group : {128, 256}) add(row_config(group, max_vec, items / 2));
  }
  if (max_vec > 1) {
    add(row_config(32, 1, 8));
    add(row_config(1024, 1, 8));
  }
  return space;
}

int64_t row_heuristic_limit(const ReductionConfig& c, int max_vec) {
  return is_tier(c, max_vec) ? c.capacity() : 0;
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
  return space;
}

// Measured on an H200 (bench/results/2026-11-21-h200-reductions.md): for column sums, scalar
// loads over 32 columns per block beat 16-byte ones over 32 or 128 (more blocks in flight).
ReductionConfig default_outer_config(int max_vec) {
  (void)max_vec;
  return {256, 8, 1, 4};
}

}  // namespace kiln
