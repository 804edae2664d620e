// The autotuner's search, independent of GPUs so that it can be tested with fake timings:
//  1. Time every configuration of the grid (the variants compiled ahead of time); a
//     configuration the timer rejects (fails to load, spills, too many resources, wrong
//     result) is recorded with its reason and never wins.
//  2. Coordinate descent from the best: for each numeric parameter in turn, try twice and half
//     its value (within its range) and move when the time improves by more than `min_gain`
//     and more than the measured spread; repeat until a full sweep finds nothing.
//     Before timing the neighbours of a new best, the search announces them all (upcoming),
//     so that configurations outside the bundle compile while others are timed.
//  3. The winner is the fastest configuration timed (the descent's threshold only decides
//     where it goes next), the runner-up the second fastest: never faster than the winner.
//  4. (kiln tune) keep_default_unless_faster: the default, timed again after the search, stays
//     the winner unless a candidate's time is below the default's.
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
  double spread = 0;    // (p90 - p10) / median
  int reps = 0;         // timed repetitions
  bool pruned = false;  // stopped early: clearly slower than the best so far (harness.h)
  double fastest_us = 0;
};

/// A timing, or the reason the configuration cannot be used. A pruned timing (its
/// Measurement::pruned set, `pruned` saying why) never wins and is no runner-up: it is
/// listed in SearchResult::pruned.
struct Trial {
  std::optional<Measurement> time;
  std::string rejected;
  std::string pruned = {};
};

struct ParamRange {
  std::string name;
  int64_t min = 1, max = 1;
};

struct SearchOptions {
  bool descent = true;
  double min_gain = 0.01;  // a move must be at least 1% faster
  int max_sweeps = 8;
  /// Called during the descent, whenever the best changes, with the neighbours of the new
  /// best that were never timed, before any of them is: the tuner compiles them meanwhile.
  std::function<void(const std::vector<Config>&)> upcoming = {};
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
  std::map<Config, Measurement> times;  // every configuration timed in full
  std::vector<std::string> pruned;      // "block=1024 unroll=8 vec=4: why"
};

/// Runs the search; `trial` is called at most once per distinct configuration.
SearchResult search(const std::vector<Config>& grid, const std::vector<ParamRange>& params,
                    const std::function<Trial(const Config&)>& trial, const SearchOptions& opts);

/// Step 4: `default_time` is `default_config`'s time measured after the search (it replaces
/// the search's time of that configuration). The winner is the default unless another
/// configuration's time is strictly below it; the runner-up is the fastest of the others.
/// Returns a note for the entry's `how` when the default was kept over the search's best
/// ("default kept: the fastest candidate, block=256 ..., took 10.2 us, not below the
/// default's 10.1 us"), else "".
std::string keep_default_unless_faster(SearchResult& r, const Config& default_config,
                                       const Measurement& default_time);

}  // namespace kiln
