// `kiln tune`: benchmark the variants of one or more bundles on the GPU for given shapes and record
// the winners in the autotune cache (bundle/cache.h). docs/autotune.md describes the method.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "autotune/jobs.h"
#include "ir/program.h"

namespace kiln {

struct TuneOptions {
  std::vector<std::string> bundles;         // bundle directories; TuneJob::bundle indexes them
  std::vector<bundle::Manifest> manifests;  // their manifests, as the jobs were made from them
  std::string cache_path;
  std::vector<TuneJob> jobs;   // (bundle, kernel, shape), in order (autotune/jobs.h)
  bool deterministic = false;  // only configs whose results are bitwise the default's
  bool force = false;          // re-tune keys the cache already has
  bool descent = true;         // coordinate descent beyond the precompiled grid
  bool progress = false;       // redraw a progress bar on stderr
};

/// Tunes each job and stores the results; prints one line per (kernel, shape, step).
/// Returns 0; 77 when there is no CUDA driver (libcuda cannot be loaded); or 1 with a
/// one-line reason on stderr.
int tune(const TuneOptions& opts);

/// The progress bar's line: `job` of `jobs` done and `job_fraction` of the next, a bar of 20,
/// the time left estimated as elapsed x (1 - done) / done ("--" until 1% and 1 s), then
/// `text`; at most 99 columns.
///   [######..............] 5/17 41s left  softmax M=4096,N=1000 step 0: block=256 ... (3/12+)
std::string progress_line(size_t job, size_t jobs, double job_fraction, double elapsed_s,
                          std::string_view text);

}  // namespace kiln
