// See config.h.
#include "compiler/config.h"

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

}  // namespace kiln
