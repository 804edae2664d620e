// `kiln tune`: benchmark a bundle's variants on the GPU for given shapes and record the
// winners in the autotune cache (bundle/cache.h). docs/autotune.md describes the method.
#pragma once

#include <string>
#include <vector>

#include "ir/program.h"

namespace kiln {

struct TuneOptions {
  std::string bundle;
  std::string cache_path;
  std::string kernel;                // empty: every kernel of the bundle
  std::vector<SymbolValues> shapes;  // each binds the symbols of the kernels it applies to
  bool deterministic = false;        // only configs whose results are bitwise the default's
  bool force = false;                // re-tune keys the cache already has
  bool descent = true;               // coordinate descent beyond the precompiled grid
  bool progress = false;             // redraw a progress line on stderr
};

/// Tunes and stores the results; prints one line per (kernel, shape, step) and a summary.
/// Returns 0; 77 when there is no CUDA driver (libcuda cannot be loaded); or 1 with a
/// one-line reason on stderr.
int tune(const TuneOptions& opts);

}  // namespace kiln
