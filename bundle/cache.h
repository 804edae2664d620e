// The autotune cache: one JSON file of tuned winners, shared by `kiln tune` (which writes it)
// and the runtime (which reads it). Part of kiln_bundle: no LLVM, no CUDA.
//
// File format (docs/autotune.md has the full schema):
//   {"format": "kiln-autotune-cache", "version": 1, "entries": [ Entry, ... ]}
// An entry is keyed by (kernel hash, step, GPU name, compute capability, SM count, driver
// version, Kiln version, shape key). The shape key is either exact (every symbol's value) or a
// bucket: every symbol rounded up to the next power of two ("M=32768,N=1024" is its own bucket;
// "M=30000" falls in bucket "M=32768"). Lookup tries the exact key, then the bucket, then
// reports that the heuristic default applies and why.
//
// Writes are atomic and lose nothing: store() takes an exclusive lock on "<file>.lock"
// (flock), re-reads the file, merges the new entries in (a newer tuned_at wins for the same
// key), writes "<file>.tmp.<pid>.<n>", fsyncs and renames it over the file
// (bundle/atomic_file.h). A file that is not JSON, has another format or an unknown version
// is reported and never overwritten.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bundle/status.h"

namespace kiln::cache {

inline constexpr int kSchemaVersion = 1;

struct GpuKey {
  std::string name;  // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  friend bool operator==(const GpuKey&, const GpuKey&) = default;
  friend auto operator<=>(const GpuKey&, const GpuKey&) = default;
};

struct Key {
  std::string kernel_hash;  // manifest KernelInfo::hash
  int step = 0;
  GpuKey gpu;
  int driver_version = 0;  // cuDriverGetVersion, e.g. 13000
  std::string kiln_version;
  std::map<std::string, int64_t> shape;  // symbol values: exact, or the bucket's
  bool bucket = false;                   // shape holds bucket values
  friend bool operator==(const Key&, const Key&) = default;
  friend auto operator<=>(const Key&, const Key&) = default;
};

/// One timed candidate.
struct Timing {
  std::map<std::string, int64_t> config;  // e.g. {"block": 128, "vec": 4, "unroll": 2}
  double median_us = 0;
  double spread = 0;  // (p90 - p10) / median of the repetitions
  friend bool operator==(const Timing&, const Timing&) = default;
};

struct Entry {
  Key key;
  std::string kernel;  // kernel name, for people
  Timing winner;
  std::optional<Timing> runner_up;
  Timing default_config;              // the heuristic default, timed in the same run
  std::string how;                    // e.g. "grid 18 + coordinate descent 2 steps"
  bool deterministic = false;         // tuned in deterministic mode
  int candidates = 0;                 // configurations timed
  std::vector<std::string> rejected;  // "block=1024 vec=4 unroll=4: 255 registers, spills"
  std::vector<std::string> pruned;    // checked, timing stopped early: "CONFIG: why"
  std::string tuned_at;               // ISO 8601 UTC
  friend bool operator==(const Entry&, const Entry&) = default;
};

struct Cache {
  int version = kSchemaVersion;
  std::vector<Entry> entries;  // sorted by key, one per key
  friend bool operator==(const Cache&, const Cache&) = default;
};

/// The bucket of one symbol value: the next power of two >= v (1 -> 1, 3 -> 4, 1024 -> 1024,
/// 1025 -> 2048). Values above 2^62 cannot round up without overflow and share the top
/// bucket, INT64_MAX. Values <= 0 are not shapes and are returned unchanged.
int64_t bucket_value(int64_t v);

/// The bucket of a shape: every value rounded up to a power of two (bucket_value).
std::map<std::string, int64_t> bucket_of(const std::map<std::string, int64_t>& shape);

/// The current time as the ISO 8601 UTC text tuned_at holds ("2025-06-01T12:34:56Z").
std::string utc_now();

/// JSON text (stable order, two-space indent) and its parser; errors name `origin` and the
/// JSON path.
std::string to_json(const Cache& c);
Result<Cache> parse(std::string_view json, std::string_view origin);

/// Reads a cache file. A missing file is an empty cache; anything unreadable is an error.
Result<Cache> load(const std::string& path);
/// Reads a cache file that must be there ("PATH: no such cache file" otherwise): for a cache
/// given to read or launch from (`kiln cache`, `kiln run -c`, kiln_bundle_use_cache), where a
/// misspelled path must not read as an empty cache.
Result<Cache> load_existing(const std::string& path);

/// Merges `entries` into the file at `path` under its lock (see above). Returns the merged
/// cache as written.
Result<Cache> store(const std::string& path, const std::vector<Entry>& entries);

/// The general form of store(): under the lock, reads the file (missing = empty; unreadable,
/// corrupt or foreign = an error and nothing is written), applies `edit`, and writes the
/// result atomically. An edit that fails (e.g. `kiln cache prune --gpu` naming no GPU of the
/// file, as read under the lock) writes nothing and update returns its status. Returns the
/// cache as written (sorted, one entry per key).
Result<Cache> update(const std::string& path, const std::function<Status(Cache&)>& edit);

/// Replaces the contents of the cache file at `path` with `c` (update() with an assignment:
/// an existing file that is not a valid cache is still refused, never overwritten).
Result<Cache> save(const std::string& path, const Cache& c);

/// a + b, one entry per key; for a key in both, the newer tuned_at wins (ties: b).
Cache merge(const Cache& a, const Cache& b);

/// The entry for `key` exactly, else nullptr.
const Entry* find(const Cache& c, const Key& key);

/// Lookup for a launch: exact shape, else its bucket. `why` (if given) receives which one
/// matched or why none did ("no entry for this GPU", "no entry for shape M=.., N=..").
const Entry* lookup(const Cache& c, Key key, std::string* why = nullptr);

/// Entries whose kernel hash is not in `live_hashes` (if non-empty) or whose GPU is not in
/// `live_gpus` (if non-empty) are dropped; returns how many.
size_t prune(Cache& c, const std::vector<std::string>& live_hashes,
             const std::vector<GpuKey>& live_gpus);

/// Human-readable differences between two caches (added, removed, changed winners, each
/// change of time with its percentage: "10.00 us -> 9.00 us, -10.0%"); empty when they hold
/// the same entries.
std::string diff(const Cache& a, const Cache& b);

/// How format_table lays out its table.
struct TableOptions {
  bool buckets = false;  // list the bucket entries too (else only counted)
  int width = 100;       // columns of the terminal; no line is wider (>= 60)
};
/// A table for people: a header line with the counts, then one group per kernel step, GPU,
/// driver and Kiln version (sorted by kernel), its shapes sorted, each with the default's and
/// the winner's time (us), the speed-up (default / winner, "1.23x") and the winner's config;
/// then a legend of the configs' knobs. No line is wider than opts.width (long configs wrap).
std::string format_table(const Cache& c, const TableOptions& opts = {});

/// The entries for machines: a JSON array of entries in the file's format, each with an added
/// "speedup" (default / winner median; null when the winner's time is 0).
std::string entries_json(const Cache& c);

}  // namespace kiln::cache
