// `kiln tune`: benchmark a bundle's variants on the GPU for given shapes and record the
// winners in the autotune cache (bundle/cache.h). docs/autotune.md describes the method.
#pragma once

#include <string>
#include <vector>

#include "autotune/jobs.h"
#include "ir/program.h"

namespace kiln {

struct TuneOptions {
  std::string bundle;
  std::string cache_path;
  std::vector<TuneJob> jobs;   // (kernel, shape) pairs, in order (autotune/jobs.h)
  bool deterministic = false;  // only configs whose results are bitwise the default's
  bool force = false;          // re-tune keys the cache already has
  bool descent = true;         // coordinate descent beyond the precompiled grid
  bool progress = false;       // redraw a progress bar on stderr
};

/// Tunes each job and stores the results; prints one line per (kernel, shape, step).
/// Returns 0; 77 when there is no CUDA driver (libcuda cannot be loaded); or 1 with a
/// one-line reason on stderr.
int tune(const TuneOptions& opts);

}  // namespace kiln
