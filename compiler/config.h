// Configuration spaces: the knobs of each kernel kind. Every point is compiled as a separate
// variant; the autotuner picks among them and the heuristic default is used until it has.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

/// A pointwise step: each thread handles `unroll` vectors of `vec` consecutive elements per
/// grid-stride iteration, the vectors of one block interleaved so that a warp's accesses are
/// contiguous; a block covers block * vec * unroll elements.
struct PointwiseConfig {
  int block = 256;  // threads per block
  int vec = 1;      // elements per thread per access (1 = scalar code, no alignment needed)
  int unroll = 1;   // independent vectors in flight per thread

  int64_t elements_per_block() const { return int64_t{block} * vec * unroll; }
  std::map<std::string, int64_t> as_map() const;
  friend bool operator==(const PointwiseConfig&, const PointwiseConfig&) = default;
};

/// All configurations for a step whose widest useful vector is `max_vec` elements (16 bytes
/// of its narrowest contiguous tensor). Scalar variants are always present: they are the
/// fallback for pointers that are not 16-byte aligned.
std::vector<PointwiseConfig> pointwise_config_space(int max_vec);

/// The heuristic default: 128 threads, full vectors, two vectors in flight.
PointwiseConfig default_pointwise_config(int max_vec);

}  // namespace kiln
