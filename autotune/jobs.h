// What `kiln tune` tunes: a list of (bundle, kernel, shape) jobs, made from --shape arguments or
// from a recorded-shapes file (bundle/shape_record.h), sorted and deduplicated, and cut into shards
// for several tuners. GPU-free: the manifest is all it reads.
//
// The order is (bundle, kernel name, shape), the bundle by its position in the command's list
// and shapes compared symbol by symbol, by name then value: it depends only on the jobs and
// the order the bundles were named in, never on the machine, the file's line order or which process
// recorded a shape first. Shard i of n takes the jobs at positions i, i + n, i + 2n, ... of
// that order, so the n shards are disjoint, cover the list, and are the same on every machine
// given the same bundle and shapes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/manifest.h"
#include "bundle/shape_record.h"
#include "ir/program.h"

namespace kiln {

struct TuneJob {
  int bundle = 0;  // index into the bundles being tuned (TuneOptions::bundles)
  std::string kernel;
  SymbolValues shape;  // exactly the kernel's symbols
  friend bool operator==(const TuneJob&, const TuneJob&) = default;
  friend auto operator<=>(const TuneJob&, const TuneJob&) = default;
};

struct JobList {
  std::vector<TuneJob> jobs;         // sorted, one per (kernel, shape)
  std::vector<std::string> skipped;  // one line per thing left out, and why
};

/// Each kernel of each bundle (only `kernel` when non-empty) with each shape that binds all
/// its symbols, restricted to them; a shape that misses one of a kernel's symbols is skipped
/// for that kernel ("softmax M=4096: skipped, no value for N").
JobList jobs_from_shapes(const std::vector<bundle::Manifest>& bundles, const std::string& kernel,
                         const std::vector<SymbolValues>& shapes);

/// The recorded shapes read from `origin`, deduplicated, each given to the first bundle that
/// has its kernel with the recorded hash. Lines naming a kernel no bundle has, a kernel whose
/// hash differs from every bundle's (recorded from another version of it) or other symbols
/// than the kernel's are skipped, one line per kernel and reason with the first line number
/// and the count. With `kernel`, other kernels are left out silently.
JobList jobs_from_recorded(const std::vector<bundle::Manifest>& bundles, const std::string& kernel,
                           const std::vector<shapes::Recorded>& recorded, std::string_view origin);

/// "I/N" with 0 <= I < N; nullopt and `why` otherwise.
std::optional<std::pair<int, int>> parse_shard(std::string_view text, std::string* why);

/// Shard `index` of `count` of a sorted job list (see above).
std::vector<TuneJob> shard(const std::vector<TuneJob>& jobs, int index, int count);

/// "softmax M=4096,N=1000".
std::string job_text(const TuneJob& j);

}  // namespace kiln
