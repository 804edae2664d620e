// The `kiln cache` verbs: thin shells over bundle/cache.h (see cache_command.h).
#include "tools/cache_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <set>

#include "bundle/cache.h"
#include "bundle/manifest.h"

namespace kiln {
namespace {

// CLI11 binds options to variables that outlive parse(): they live here.
struct CacheArgs {
  CLI::App* cache = nullptr;
  CLI::App* show = nullptr;
  CLI::App* diff = nullptr;
  CLI::App* merge = nullptr;
  CLI::App* prune = nullptr;
  std::string file, a, b, out;
  bool json = false, buckets = false;
  std::vector<std::string> bundles, gpus, inputs;
};

CacheArgs& args() {
  static CacheArgs a;
  return a;
}

int fail(const std::string& message) {
  fmt::print(stderr, "kiln: {}\n", message);
  return 1;
}

int show(const CacheArgs& a) {
  Result<cache::Cache> c = cache::load_existing(a.file);
  if (!c.ok()) return fail(c.message());
  if (a.json) {
    fmt::print("{}", cache::entries_json(*c));
  } else if (c->entries.empty()) {
    fmt::print("{}: no entries\n", a.file);
  } else {
    cache::TableOptions t;
    t.buckets = a.buckets;
    fmt::print("{}", cache::format_table(*c, t));
  }
  return 0;
}

// As diff(1): 0 when the caches hold the same entries, 1 when they differ, 2 on errors.
int diff(const CacheArgs& a) {
  Result<cache::Cache> x = cache::load_existing(a.a);
  if (!x.ok()) return fail(x.message()) + 1;
  Result<cache::Cache> y = cache::load_existing(a.b);
  if (!y.ok()) return fail(y.message()) + 1;
  std::string d = cache::diff(*x, *y);
  fmt::print("{}", d.empty() ? "no differences\n" : d);
  return d.empty() ? 0 : 1;
}

// Two or more caches (the shards of a tune), merged in order: the newer entry per key wins,
// and on a tie the later file.
int merge(const CacheArgs& a) {
  if (a.inputs.size() < 2) return fail("cache merge: give two or more cache files to merge");
  cache::Cache merged;
  std::vector<std::string> counts;
  for (const std::string& file : a.inputs) {
    Result<cache::Cache> c = cache::load_existing(file);
    if (!c.ok()) return fail(c.message());
    merged = cache::merge(merged, *c);
    counts.push_back(fmt::format("{} from {}", c->entries.size(), file));
  }
  Result<cache::Cache> written = cache::save(a.out, merged);
  if (!written.ok()) return fail(written.message());
  fmt::print("wrote {}: {} entries ({})\n", a.out, written->entries.size(),
             fmt::join(counts, ", "));
  return 0;
}

// Every GPU name in the cache, in order of first appearance.
std::vector<std::string> gpu_names(const cache::Cache& c) {
  std::vector<std::string> out;
  for (const cache::Entry& e : c.entries) {
    if (std::find(out.begin(), out.end(), e.key.gpu.name) == out.end())
      out.push_back(e.key.gpu.name);
  }
  return out;
}

// Drops entries whose kernel is in none of the bundles (with --bundle; `hashes` is never
// empty then) or whose GPU is not named (with --gpu). A --gpu name that no entry has is refused,
// not read as "keep nothing" (a typo would empty the file): returns the reason, and `c` is left as
// it was.
std::string prune_entries(cache::Cache& c, const std::vector<std::string>& hashes,
                          size_t& dropped) {
  const CacheArgs& a = args();
  std::vector<std::string> present = gpu_names(c);
  std::vector<cache::GpuKey> gpus;
  for (const std::string& name : a.gpus) {
    if (std::find(present.begin(), present.end(), name) == present.end()) {
      std::vector<std::string> quoted;
      for (const std::string& p : present) quoted.push_back(fmt::format("\"{}\"", p));
      return fmt::format(
          "cache prune: --gpu \"{}\" matches no entry of {} (its GPUs: {}); "
          "nothing written",
          name, a.file,
          quoted.empty() ? "none, it has no entries" : fmt::format("{}", fmt::join(quoted, ", ")));
    }
    for (const cache::Entry& e : c.entries) {
      if (e.key.gpu.name == name) gpus.push_back(e.key.gpu);
    }
  }
  dropped = cache::prune(c, hashes, gpus);
  return "";
}

int prune(const CacheArgs& a) {
  if (a.bundles.empty() && a.gpus.empty()) {
    return fail("cache prune: give --bundle DIR or --gpu NAME to prune against");
  }
  std::vector<std::string> hashes;
  for (const std::string& dir : a.bundles) {
    Result<bundle::Manifest> m = bundle::read_manifest(dir);
    if (!m.ok()) return fail(m.message());
    if (m->kernels.empty()) {
      return fail(fmt::format("cache prune: bundle {} has no kernels; nothing written", dir));
    }
    for (const bundle::KernelInfo& k : m->kernels) hashes.push_back(k.hash);
  }
  size_t before = 0, dropped = 0;
  std::string target = a.out.empty() ? a.file : a.out;
  Result<cache::Cache> written = Status::error("");
  if (a.out.empty()) {
    // In place: the file must be there (update would read a missing one as empty), and a
    // refused prune writes nothing, judged on the entries read under the lock.
    if (Result<cache::Cache> c = cache::load_existing(a.file); !c.ok()) return fail(c.message());
    written = cache::update(a.file, [&](cache::Cache& c) {
      before = c.entries.size();
      std::string why = prune_entries(c, hashes, dropped);
      return why.empty() ? Status::ok_status() : Status::error(why);
    });
  } else {
    Result<cache::Cache> c = cache::load_existing(a.file);
    if (!c.ok()) return fail(c.message());
    before = c->entries.size();
    if (std::string why = prune_entries(*c, hashes, dropped); !why.empty()) return fail(why);
    written = cache::save(a.out, *c);
  }
  if (!written.ok()) return fail(written.message());
  fmt::print("wrote {}: dropped {} of {} entries, {} left\n", target, dropped, before,
             written->entries.size());
  return 0;
}

}  // namespace

void add_cache_commands(CLI::App& app) {
  CacheArgs& a = args();
  a.cache = app.add_subcommand("cache", "show, compare, merge and prune autotune cache files");
  a.cache->require_subcommand(1);

  a.show = a.cache->add_subcommand("show", "print a cache's entries as a table");
  a.show->add_option("file", a.file, "cache file (JSON)")->required();
  a.show->add_flag("--json", a.json, "print the entries as JSON instead");
  a.show->add_flag("--buckets", a.buckets, "list the bucket entries too (else only counted)");

  a.diff = a.cache->add_subcommand(
      "diff", "entries added, removed and retuned from A to B (exit 1 when they differ)");
  a.diff->add_option("a", a.a, "the old cache file")->required();
  a.diff->add_option("b", a.b, "the new cache file")->required();

  a.merge = a.cache->add_subcommand(
      "merge", "merge two or more caches (e.g. shards); the newer entry wins per key");
  a.merge->add_option("files", a.inputs, "cache files (a later one wins ties)")->required();
  a.merge->add_option("-o,--output", a.out, "the cache file to write")->required();

  a.prune = a.cache->add_subcommand(
      "prune", "drop entries for kernels or GPUs no longer present (in place unless -o)");
  a.prune->add_option("file", a.file, "cache file")->required();
  a.prune->add_option("--bundle", a.bundles, "keep only kernels of these bundle directories");
  a.prune->add_option("--gpu", a.gpus, "keep only these GPU names (e.g. \"NVIDIA H200\")");
  a.prune->add_option("-o,--output", a.out, "write here instead of rewriting FILE");
}

int run_cache_commands(CLI::App& app) {
  const CacheArgs& a = args();
  if (a.show != nullptr && *a.show) return show(a);
  if (a.diff != nullptr && *a.diff) return diff(a);
  if (a.merge != nullptr && *a.merge) return merge(a);
  if (a.prune != nullptr && *a.prune) return prune(a);
  return fail("cache: expected one of show, diff, merge, prune");
}

}  // namespace kiln
