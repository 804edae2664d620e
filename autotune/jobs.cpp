// See jobs.h.
#include "autotune/jobs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

namespace kiln {
namespace {

std::string shape_text(const SymbolValues& s) {
  std::string out;
  for (const auto& [k, v] : s) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
  return out;
}

void sort_unique(std::vector<TuneJob>& jobs) {
  std::sort(jobs.begin(), jobs.end());
  jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
}

}  // namespace

std::string job_text(const TuneJob& j) {
  return fmt::format("{} {}", j.kernel, shape_text(j.shape));
}

JobList jobs_from_shapes(const std::vector<bundle::Manifest>& bundles, const std::string& kernel,
                         const std::vector<SymbolValues>& shapes) {
  JobList out;
  for (size_t b = 0; b < bundles.size(); ++b) {
    for (const bundle::KernelInfo& info : bundles[b].kernels) {
      if (!kernel.empty() && info.name != kernel) continue;
      for (const SymbolValues& all : shapes) {
        TuneJob job{static_cast<int>(b), info.name, {}};
        std::string missing;
        for (const std::string& s : info.symbols) {
          auto it = all.find(s);
          if (it == all.end()) {
            missing = s;
            break;
          }
          job.shape[s] = it->second;
        }
        if (!missing.empty()) {
          out.skipped.push_back(
              fmt::format("{} {}: skipped, no value for {}", info.name, shape_text(all), missing));
        } else {
          out.jobs.push_back(std::move(job));
        }
      }
    }
  }
  sort_unique(out.jobs);
  return out;
}

JobList jobs_from_recorded(const std::vector<bundle::Manifest>& bundles, const std::string& kernel,
                           const std::vector<shapes::Recorded>& recorded, std::string_view origin) {
  JobList out;
  struct Skip {
    int first_line = 0;
    int count = 0;
  };
  std::map<std::string, Skip> skips;  // by reason, in the order of the reasons' text
  std::vector<std::string> order;
  auto skip = [&](const shapes::Recorded& r, std::string reason) {
    auto [it, fresh] = skips.try_emplace(reason, Skip{r.line, 0});
    if (fresh) order.push_back(reason);
    ++it->second.count;
  };
  for (const shapes::Recorded& r : recorded) {
    if (!kernel.empty() && r.kernel != kernel) continue;
    // The first bundle with the kernel at the recorded hash takes the line.
    const bundle::KernelInfo* info = nullptr;
    const bundle::KernelInfo* named = nullptr;  // the first of that name, for the message
    int b = 0;
    for (; b < static_cast<int>(bundles.size()) && info == nullptr; ++b) {
      const bundle::KernelInfo* k = bundles[b].find(r.kernel);
      if (named == nullptr) named = k;
      if (k != nullptr && k->hash == r.hash) info = k;
    }
    if (named == nullptr) {
      skip(r, fmt::format("kernel {} is not in the bundle{}", r.kernel,
                          bundles.size() == 1 ? "" : "s"));
      continue;
    }
    if (info == nullptr) {
      skip(r, fmt::format("kernel {} was recorded with hash {}, the bundle's is {} (another "
                          "version of the kernel)",
                          r.kernel, r.hash, named->hash));
      continue;
    }
    std::set<std::string> want(info->symbols.begin(), info->symbols.end()), got;
    for (const auto& [name, v] : r.shape) got.insert(name);
    if (want != got) {
      skip(r, fmt::format("kernel {}: the recorded symbols ({}) are not the kernel's ({})",
                          r.kernel, fmt::join(got, ","), fmt::join(info->symbols, ",")));
      continue;
    }
    out.jobs.push_back({b - 1, r.kernel, SymbolValues(r.shape.begin(), r.shape.end())});
  }
  for (const std::string& reason : order) {
    const Skip& s = skips.at(reason);
    out.skipped.push_back(fmt::format("{}:{}: skipped: {} ({} line{})", origin, s.first_line,
                                      reason, s.count, s.count == 1 ? "" : "s"));
  }
  sort_unique(out.jobs);
  return out;
}

std::optional<std::pair<int, int>> parse_shard(std::string_view text, std::string* why) {
  auto number = [](std::string_view s, int& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty();
  };
  size_t slash = text.find('/');
  int i = 0, n = 0;
  if (slash == std::string_view::npos || !number(text.substr(0, slash), i) ||
      !number(text.substr(slash + 1), n) || n < 1 || i < 0 || i >= n) {
    if (why) {
      *why = fmt::format("--shard {}: expected I/N with 0 <= I < N (e.g. 0/4 ... 3/4)", text);
    }
    return std::nullopt;
  }
  return std::pair{i, n};
}

std::vector<TuneJob> shard(const std::vector<TuneJob>& jobs, int index, int count) {
  std::vector<TuneJob> out;
  for (size_t i = static_cast<size_t>(index); i < jobs.size(); i += static_cast<size_t>(count)) {
    out.push_back(jobs[i]);
  }
  return out;
}

}  // namespace kiln
