// The autotuner's search, independent of GPUs so that it can be tested with fake timings:
//  1. Time every configuration of the grid (the variants compiled ahead of time); a
//     configuration the timer rejects (fails to load, spills, too many resources, wrong
//     result) is recorded with its reason and never wins.
//  2. Coordinate descent from the best: for each numeric parameter in turn, try twice and half
//     its value (within its range) and move when the time improves by more than `min_gain`
//     and more than the measured spread; repeat until a full sweep finds nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/config.h"  // config_text: a config's text form

namespace kiln {

using Config = std::map<std::string, int64_t>;

struct Measurement {
  double median_us = 0;
  double spread = 0;  // (p90 - p10) / median
};

/// A timing, or the reason the configuration cannot be used.
struct Trial {
  std::optional<Measurement> time;
  std::string rejected;
};

struct ParamRange {
  std::string name;
  int64_t min = 1, max = 1;
};

struct SearchOptions {
  bool descent = true;
  double min_gain = 0.01;  // a move must be at least 1% faster
  int max_sweeps = 8;
};

struct SearchResult {
  std::optional<Config> best;
  Measurement best_time;
  std::optional<Config> runner_up;
  Measurement runner_up_time;
  int timed = 0;
  int descent_moves = 0;
  std::vector<std::string> rejected;  // "block=1024 unroll=8 vec=4: reason"
  std::string how;
};

/// Runs the search; `trial` is called at most once per distinct configuration.
SearchResult search(const std::vector<Config>& grid, const std::vector<ParamRange>& params,
                    const std::function<Trial(const Config&)>& trial, const SearchOptions& opts);

}  // namespace kiln
