// See search.h.
#include "autotune/search.h"

#include <fmt/format.h>

namespace kiln {

namespace {

// best and runner_up from r.times: the fastest, then the second fastest; on a tie `preferred`
// (the default) goes first, then the smaller configuration.
void rank(SearchResult& r, const std::optional<Config>& preferred) {
  r.best.reset();
  r.runner_up.reset();
  auto before = [&](const Config& a, const Measurement& ma, const Config& b,
                    const Measurement& mb) {
    if (ma.median_us != mb.median_us) return ma.median_us < mb.median_us;
    if (preferred && (a == *preferred) != (b == *preferred)) return a == *preferred;
    return a < b;
  };
  for (const auto& [c, m] : r.times) {
    if (!r.best || before(c, m, *r.best, r.best_time)) {
      if (r.best) {
        r.runner_up = r.best;
        r.runner_up_time = r.best_time;
      }
      r.best = c;
      r.best_time = m;
    } else if (!r.runner_up || before(c, m, *r.runner_up, r.runner_up_time)) {
      r.runner_up = c;
      r.runner_up_time = m;
    }
  }
}

}  // namespace

std::string keep_default_unless_faster(SearchResult& r, const Config& default_config,
                                       const Measurement& default_time) {
  const std::optional<Config> searched = r.best;
  const Measurement searched_time = r.best_time;
  r.times[default_config] = default_time;
  rank(r, default_config);
  if (searched && *searched != default_config && *r.best == default_config) {
    return fmt::format(
        "default kept: the fastest candidate, {}, took {:.2f} us, not below the default's "
        "{:.2f} us",
        config_text(*searched), searched_time.median_us, default_time.median_us);
  }
  return "";
}

SearchResult search(const std::vector<Config>& grid, const std::vector<ParamRange>& params,
                    const std::function<Trial(const Config&)>& trial, const SearchOptions& opts) {
  SearchResult r;
  std::map<Config, std::optional<Measurement>> seen;
  auto measure = [&](const Config& c) -> std::optional<Measurement> {
    if (auto it = seen.find(c); it != seen.end()) return it->second;
    Trial t = trial(c);
    ++r.timed;
    if (!t.time) r.rejected.push_back(config_text(c) + ": " + t.rejected);
    if (t.time && t.time->pruned) r.pruned.push_back(config_text(c) + ": " + t.pruned);
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
      if (m && !m->pruned && (!best || m->median_us < best->second.median_us)) best = {c, *m};
    }
    return best;
  };

  auto best = current_best();
  int sweeps = 0;
  // The neighbours of `center` within the ranges, never timed.
  auto neighbours = [&](const Config& center) {
    std::vector<Config> out;
    for (const ParamRange& p : params) {
      auto it = center.find(p.name);
      if (it == center.end()) continue;
      for (int64_t v : {it->second * 2, it->second / 2}) {
        if (v < p.min || v > p.max || v == it->second) continue;
        Config c = center;
        c[p.name] = v;
        if (!seen.count(c)) out.push_back(std::move(c));
      }
    }
    return out;
  };
  std::optional<Config> announced;  // the best whose neighbours were announced
  if (best && opts.descent) {
    for (bool moved = true; moved && sweeps < opts.max_sweeps; ++sweeps) {
      moved = false;
      for (const ParamRange& p : params) {
        if (opts.upcoming && announced != best->first) {
          announced = best->first;
          if (std::vector<Config> next = neighbours(best->first); !next.empty()) {
            opts.upcoming(next);
          }
        }
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
  for (const auto& [c, m] : seen) {
    if (m && !m->pruned) r.times[c] = *m;
  }
  rank(r, std::nullopt);
  r.how = fmt::format(
      "grid {} + coordinate descent ({} sweep(s), {} move(s)); {} timed, {} rejected, {} pruned",
      grid.size(), sweeps, r.descent_moves, r.timed, r.rejected.size(), r.pruned.size());
  return r;
}

}  // namespace kiln
