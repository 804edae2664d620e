// See search.h.
#include "autotune/search.h"

#include <fmt/format.h>

namespace kiln {

SearchResult search(const std::vector<Config>& grid, const std::vector<ParamRange>& params,
                    const std::function<Trial(const Config&)>& trial, const SearchOptions& opts) {
  SearchResult r;
  std::map<Config, std::optional<Measurement>> seen;
  auto measure = [&](const Config& c) -> std::optional<Measurement> {
    if (auto it = seen.find(c); it != seen.end()) return it->second;
    Trial t = trial(c);
    ++r.timed;
    if (!t.time) r.rejected.push_back(config_text(c) + ": " + t.rejected);
    seen[c] = t.time;
    return t.time;
  };
  for (const Config& c : grid) measure(c);

  auto better = [&](const Measurement& a, const Measurement& b) {  // a really beats b
    double gain = (b.median_us - a.median_us) / b.median_us;
    return gain > opts.min_gain && gain > std::max(a.spread, b.spread);
  };
  auto current_best = [&]() -> std::optional<std::pair<Config, Measurement>> {
    std::optional<std::pair<Config, Measurement>> best;
    for (const auto& [c, m] : seen) {
      if (m && (!best || m->median_us < best->second.median_us)) best = {c, *m};
    }
    return best;
  };

  auto best = current_best();
  int sweeps = 0;
  if (best && opts.descent) {
    for (bool moved = true; moved && sweeps < opts.max_sweeps; ++sweeps) {
      moved = false;
      for (const ParamRange& p : params) {
        auto it = best->first.find(p.name);
        if (it == best->first.end()) continue;
        for (int64_t v : {it->second * 2, it->second / 2}) {
          if (v < p.min || v > p.max || v == it->second) continue;
          Config c = best->first;
          c[p.name] = v;
          std::optional<Measurement> m = measure(c);
          if (m && better(*m, best->second)) {
            best = {c, *m};
            ++r.descent_moves;
            moved = true;
            break;
          }
        }
      }
    }
  }
  if (best) {
    r.best = best->first;
    r.best_time = best->second;
    for (const auto& [c, m] : seen) {
      if (!m || c == best->first) continue;
      if (!r.runner_up || m->median_us < r.runner_up_time.median_us) {
        r.runner_up = c;
        r.runner_up_time = *m;
      }
    }
  }
  r.how =
      fmt::format("grid {} + coordinate descent ({} sweep(s), {} move(s)); {} timed, {} rejected",
                  grid.size(), sweeps, r.descent_moves, r.timed, r.rejected.size());
  return r;
}

}  // namespace kiln
