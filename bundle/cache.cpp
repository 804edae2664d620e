// Reading, writing and merging the autotune cache (see cache.h for the format's meaning and
// docs/autotune.md for the schema field by field).
//
// parse() treats its input as hostile, like the manifest reader: every field is type- and
// range-checked and a failed check throws a private Invalid (JSON path + reason) that parse()
// turns into "ORIGIN: PATH: reason". Duplicate keys in one file keep the newer tuned_at, so
// a parsed cache is always sorted with one entry per key.
//
// update() is the only writer. Its protocol, in order:
//   1. open "<file>.lock" (created 0644, never deleted) and flock it exclusively
//      (bundle/atomic_file.h, shared with the bundle writer);
//   2. read the file: missing = empty; unreadable, not JSON, foreign format or version = stop
//      with the error (nothing is written);
//   3. refuse a file that is not writable (a read-only cache is a decision, not an obstacle);
//   4. apply the edit (an edit that fails stops here: nothing is written), normalize, check
//      that the result parses back;
//   5. write "<file>.tmp.<pid>.<n>" (the old file's mode), fsync, close, rename over the
//      file, fsync the directory; on any failure unlink the temporary: the old file is
//      untouched.
#include "bundle/cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "bundle/atomic_file.h"
#include "bundle/json_reader.h"

namespace kiln::cache {
namespace {

using Json = nlohmann::json;
using files::errno_error;
using json::fail;
using json::index_path;
using json::Invalid;
using json::key_path;
using json::Obj;
using json::read_integer;
using json::type_name;
using OrderedJson = nlohmann::ordered_json;

constexpr const char* kFormat = "kiln-autotune-cache";
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr off_t kMaxFileBytes = off_t{256} << 20;

// ---- writing ----

OrderedJson ints_json(const std::map<std::string, int64_t>& m) {
  OrderedJson o = OrderedJson::object();
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

OrderedJson timing_json(const Timing& t) {
  return {{"config", ints_json(t.config)}, {"median_us", t.median_us}, {"spread", t.spread}};
}

OrderedJson key_json(const Key& k) {
  return {{"kernel_hash", k.kernel_hash},
          {"step", k.step},
          {"gpu",
           {{"name", k.gpu.name},
            {"cc", fmt::format("{}.{}", k.gpu.cc_major, k.gpu.cc_minor)},
            {"sm_count", k.gpu.sm_count}}},
          {"driver_version", k.driver_version},
          {"kiln_version", k.kiln_version},
          {"shape", ints_json(k.shape)},
          {"bucket", k.bucket}};
}

OrderedJson entry_json(const Entry& e) {
  OrderedJson j = {
      {"kernel", e.kernel}, {"key", key_json(e.key)}, {"winner", timing_json(e.winner)}};
  if (e.runner_up) j["runner_up"] = timing_json(*e.runner_up);
  j["default"] = timing_json(e.default_config);
  j["how"] = e.how;
  j["deterministic"] = e.deterministic;
  j["candidates"] = e.candidates;
  j["rejected"] = e.rejected;
  if (!e.pruned.empty()) j["pruned"] = e.pruned;  // optional: older readers ignore it
  j["tuned_at"] = e.tuned_at;
  return j;
}

// ---- reading ----

// {"name": integer, ...} with non-empty names and values in lo..hi.
std::map<std::string, int64_t> read_ints(const Obj& o, std::string_view key, int64_t lo) {
  const Json& j = o.get(key, "an object");
  Obj m(j, o.at(key));
  std::map<std::string, int64_t> out;
  for (const auto& [name, v] : j.items()) {
    if (name.empty()) fail(m.path(), "expected non-empty names");
    out[name] = read_integer(v, m.at(name), lo, kInt64Max);
  }
  return out;
}

// "9.0" -> (9, 0)
void read_cc(const Obj& o, GpuKey& gpu) {
  std::string cc = o.str("cc");
  size_t dot = cc.find('.');
  auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 2 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string::npos || !digits(cc.substr(0, dot)) || !digits(cc.substr(dot + 1))) {
    fail(o.at("cc"), fmt::format("expected a compute capability like \"9.0\", got \"{}\"", cc));
  }
  gpu.cc_major = std::stoi(cc.substr(0, dot));
  gpu.cc_minor = std::stoi(cc.substr(dot + 1));
}

Key read_key(const Obj& o) {
  Key k;
  k.kernel_hash = o.nonempty_str("kernel_hash");
  k.step = static_cast<int>(o.integer("step", 0, kIntMax));
  Obj g(o.get("gpu", "an object"), o.at("gpu"));
  k.gpu.name = g.nonempty_str("name");
  read_cc(g, k.gpu);
  k.gpu.sm_count = static_cast<int>(g.integer("sm_count", 1, kIntMax));
  k.driver_version = static_cast<int>(o.integer("driver_version", 0, kIntMax));
  k.kiln_version = o.str("kiln_version");
  k.bucket = o.boolean("bucket");
  k.shape = read_ints(o, "shape", 1);
  if (k.bucket) {
    for (const auto& [name, v] : k.shape) {
      if (bucket_value(v) != v) {
        fail(key_path(o.at("shape"), name),
             fmt::format("expected a bucket value (a power of two or {}), got {}", kInt64Max, v));
      }
    }
  }
  return k;
}

Timing read_timing(const Obj& o) {
  Timing t;
  t.config = read_ints(o, "config", std::numeric_limits<int64_t>::min());
  t.median_us = o.nonnegative("median_us");
  t.spread = o.nonnegative("spread");
  return t;
}

// "YYYY-MM-DDTHH:MM:SSZ": fixed width, so that text order is time order.
bool is_timestamp(std::string_view s) {
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:ddZ";
  if (s.size() != kShape.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool ok = kShape[i] == 'd' ? (s[i] >= '0' && s[i] <= '9') : s[i] == kShape[i];
    if (!ok) return false;
  }
  return true;
}

Entry read_entry(const Obj& o) {
  Entry e;
  e.kernel = o.nonempty_str("kernel");
  e.key = read_key(Obj(o.get("key", "an object"), o.at("key")));
  e.winner = read_timing(Obj(o.get("winner", "an object"), o.at("winner")));
  if (const Json* r = o.find("runner_up"); r != nullptr && !r->is_null()) {
    e.runner_up = read_timing(Obj(*r, o.at("runner_up")));
  }
  e.default_config = read_timing(Obj(o.get("default", "an object"), o.at("default")));
  e.how = o.str("how");
  e.deterministic = o.boolean("deterministic");
  e.candidates = static_cast<int>(o.integer("candidates", 0, kIntMax));
  e.rejected = o.strings("rejected");
  if (o.find("pruned") != nullptr) e.pruned = o.strings("pruned");
  e.tuned_at = o.str("tuned_at");
  if (!is_timestamp(e.tuned_at)) {
    fail(o.at("tuned_at"),
         fmt::format("expected UTC time like \"2025-06-01T12:34:56Z\", got \"{}\"", e.tuned_at));
  }
  return e;
}

// One entry per key, sorted by key; for a key seen twice the newer tuned_at wins (ties: the
// later one).
void insert_newer(std::map<Key, Entry>& by_key, const Entry& e) {
  auto [it, fresh] = by_key.try_emplace(e.key, e);
  if (!fresh && e.tuned_at >= it->second.tuned_at) it->second = e;
}

std::vector<Entry> values(std::map<Key, Entry>&& by_key) {
  std::vector<Entry> out;
  out.reserve(by_key.size());
  for (auto& [k, e] : by_key) out.push_back(std::move(e));
  return out;
}

Cache read_top(const Json& j) {
  Obj o(j, "");
  const Json& format = o.get("format", "\"kiln-autotune-cache\"");
  if (!format.is_string() || format.get<std::string>() != kFormat) {
    fail("format", fmt::format("expected \"{}\", got {}", kFormat, format.dump()));
  }
  int64_t version = o.integer("version", 0, kInt64Max);
  if (version != kSchemaVersion) {
    fail("", fmt::format("schema version {} is not supported by this kiln ({})", version,
                         kSchemaVersion));
  }
  const Json& entries = o.array("entries");
  std::map<Key, Entry> by_key;
  for (size_t i = 0; i < entries.size(); ++i) {
    insert_newer(by_key, read_entry(Obj(entries[i], index_path("entries", i))));
  }
  Cache c;
  c.entries = values(std::move(by_key));
  return c;
}

// ---- text for people ----

std::string ints_text(const std::map<std::string, int64_t>& m, std::string_view sep,
                      std::string_view op) {
  std::string s;
  for (const auto& [k, v] : m) s += fmt::format("{}{}{}{}", s.empty() ? "" : sep, k, op, v);
  return s;
}

std::string shape_text(const Key& k) {
  if (k.bucket) return "bucket " + ints_text(k.shape, ",", "<=");
  return k.shape.empty() ? "-" : ints_text(k.shape, ",", "=");
}

std::string gpu_text(const GpuKey& g) {
  return fmt::format("{} (cc {}.{}, {} SMs)", g.name, g.cc_major, g.cc_minor, g.sm_count);
}

std::string config_text(const Timing& t) {
  return t.config.empty() ? "-" : ints_text(t.config, " ", "=");
}

std::optional<double> speedup(const Entry& e) {
  if (e.winner.median_us <= 0) return std::nullopt;
  return e.default_config.median_us / e.winner.median_us;
}

std::string label(const Entry& e) {
  return fmt::format("{} step {} {} on {}, driver {}, kiln {}", e.kernel, e.key.step,
                     shape_text(e.key), gpu_text(e.key.gpu), e.key.driver_version,
                     e.key.kiln_version);
}

// ---- files ----

// Closes a descriptor on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The file's bytes; nullopt (with ok status) when it does not exist.
Result<std::optional<std::string>> read_bytes(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return errno_error(path, "cannot read");
  }
  Fd guard(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno_error(path, "cannot read");
  if (S_ISDIR(st.st_mode)) return Status::error(fmt::format("{}: is a directory", path));
  if (st.st_size > kMaxFileBytes) {
    return Status::error(fmt::format("{}: too large ({} bytes)", path, st.st_size));
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(path, "cannot read");
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (static_cast<off_t>(text.size()) > kMaxFileBytes) {
      return Status::error(fmt::format("{}: too large (over {} bytes)", path, kMaxFileBytes));
    }
  }
  return std::optional<std::string>(std::move(text));
}

// Never write what parse() would reject: entries of `c` that are not in `before` (which was
// read from the file, so is valid) go through the JSON text and the reader.
Status check_changed(const Cache& c, const Cache& before, const std::string& path) {
  std::map<Key, const Entry*> old;
  for (const Entry& e : before.entries) old[e.key] = &e;
  for (size_t i = 0; i < c.entries.size(); ++i) {
    const Entry& e = c.entries[i];
    if (auto it = old.find(e.key); it != old.end() && *it->second == e) continue;
    std::string where = index_path("entries", i);
    try {
      Json j = Json::parse(entry_json(e).dump());
      read_entry(Obj(j, where));
    } catch (const Invalid& x) {
      return Status::error(fmt::format("{}: not written: {}: {}", path, x.path, x.reason));
    }
  }
  return Status::ok_status();
}

// Writers through a symlink and through its target must share one lock and one file, and
// the rename must replace the target, not the link (which may dangle until the first store).
std::string resolve(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p = path;
  std::error_code ec;
  for (int hops = 0; hops < 40 && fs::is_symlink(p, ec); ++hops) {
    fs::path target = fs::read_symlink(p, ec);
    if (ec) break;
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return p.string();
}

}  // namespace

int64_t bucket_value(int64_t v) {
  if (v <= 1) return v;
  if (v > (int64_t{1} << 62)) return kInt64Max;  // 2^63 does not fit: the top bucket
  return static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(v)));
}

std::map<std::string, int64_t> bucket_of(const std::map<std::string, int64_t>& shape) {
  std::map<std::string, int64_t> out;
  for (const auto& [k, v] : shape) out[k] = bucket_value(v);
  return out;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string to_json(const Cache& c) {
  OrderedJson entries = OrderedJson::array();
  for (const Entry& e : c.entries) entries.push_back(entry_json(e));
  OrderedJson j = {{"format", kFormat}, {"version", c.version}, {"entries", entries}};
  return j.dump(2) + "\n";
}

Result<Cache> parse(std::string_view json, std::string_view origin) {
  return json::parse_document<Cache>(json, origin, "cache", read_top);
}

Result<Cache> load(const std::string& path) {
  Result<std::optional<std::string>> text = read_bytes(path);
  if (!text.ok()) return text.status();
  if (!*text) return Cache{};
  return parse(**text, path);
}

Result<Cache> load_existing(const std::string& path) {
  Result<std::optional<std::string>> text = read_bytes(path);
  if (!text.ok()) return text.status();
  if (!*text) return Status::error(fmt::format("{}: no such cache file", path));
  return parse(**text, path);
}

Result<Cache> update(const std::string& path_in, const std::function<Status(Cache&)>& edit) {
  std::string path = resolve(path_in);
  Result<files::FileLock> lock = files::FileLock::acquire(path + ".lock");
  if (!lock.ok()) return lock.status();
  Result<Cache> current = load(path);
  if (!current.ok()) return current.status();
  if (::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), W_OK) != 0) {
    return errno_error(path, "not written");
  }
  Cache c = *current;
  if (Status s = edit(c); !s.ok()) return s;
  c = merge(Cache{}, c);
  if (Status s = check_changed(c, *current, path); !s.ok()) return s;
  if (Status s = files::write_atomically(path, to_json(c)); !s.ok()) return s;
  return c;
}

Result<Cache> store(const std::string& path, const std::vector<Entry>& entries) {
  return update(path, [&](Cache& c) {
    Cache fresh;
    fresh.entries = entries;
    c = merge(c, fresh);
    return Status::ok_status();
  });
}

Result<Cache> save(const std::string& path, const Cache& c) {
  return update(path, [&](Cache& old) {
    old = c;
    return Status::ok_status();
  });
}

Cache merge(const Cache& a, const Cache& b) {
  std::map<Key, Entry> by_key;
  for (const Entry& e : a.entries) insert_newer(by_key, e);
  for (const Entry& e : b.entries) insert_newer(by_key, e);
  Cache c;
  c.entries = values(std::move(by_key));
  return c;
}

const Entry* find(const Cache& c, const Key& key) {
  for (const Entry& e : c.entries) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

const Entry* lookup(const Cache& c, Key key, std::string* why) {
  auto say = [&](std::string s) {
    if (why != nullptr) *why = std::move(s);
  };
  std::map<std::string, int64_t> shape = key.shape;
  if (!key.bucket) {
    if (const Entry* e = find(c, key)) {
      say("exact shape " + shape_text(key));
      return e;
    }
    key.shape = bucket_of(shape);
    key.bucket = true;
  }
  if (const Entry* e = find(c, key)) {
    say(fmt::format("{} (shape {})", shape_text(key), ints_text(shape, ",", "=")));
    return e;
  }
  // No match: say which part of the key first has no entry.
  auto any = [&](auto pred) {
    return std::any_of(c.entries.begin(), c.entries.end(), [&](const Entry& e) {
      return e.key.kernel_hash == key.kernel_hash && e.key.step == key.step && pred(e.key);
    });
  };
  auto gpu = [&](const Key& k) { return k.gpu == key.gpu; };
  auto driver = [&](const Key& k) { return gpu(k) && k.driver_version == key.driver_version; };
  if (!any([](const Key&) { return true; })) {
    say(fmt::format("no entry for kernel {} step {}", key.kernel_hash, key.step));
  } else if (!any(gpu)) {
    say(fmt::format("no entry for this GPU ({})", gpu_text(key.gpu)));
  } else if (!any(driver)) {
    say(fmt::format("no entry for driver {} on this GPU", key.driver_version));
  } else if (!any([&](const Key& k) { return driver(k) && k.kiln_version == key.kiln_version; })) {
    say(fmt::format("no entry for kiln {} on this GPU and driver", key.kiln_version));
  } else {
    say(fmt::format("no entry for shape {} or its {}", ints_text(shape, ",", "="),
                    shape_text(key)));
  }
  return nullptr;
}

size_t prune(Cache& c, const std::vector<std::string>& live_hashes,
             const std::vector<GpuKey>& live_gpus) {
  std::set<std::string> hashes(live_hashes.begin(), live_hashes.end());
  std::set<GpuKey> gpus(live_gpus.begin(), live_gpus.end());
  return std::erase_if(c.entries, [&](const Entry& e) {
    return (!hashes.empty() && !hashes.count(e.key.kernel_hash)) ||
           (!gpus.empty() && !gpus.count(e.key.gpu));
  });
}

namespace {

// "+5.0%" for the change from `a` to `b`; "" when `a` is 0.
std::string percent(double a, double b) {
  if (a <= 0) return "";
  return fmt::format(", {:+.1f}%", 100.0 * (b - a) / a);
}

// The meaning of each configuration knob (compiler/config.h), for the legend.
constexpr std::pair<std::string_view, std::string_view> kKnobs[] = {
    {"block", "threads per block"},
    {"vec", "elements per thread per memory access (1: scalar code, any alignment)"},
    {"unroll", "vectors in flight per thread (pointwise)"},
    {"group",
     "threads sharing one row (row reduction) or one column's reduced index (outer); "
     "contractions: tile rows (or columns) per band of the raster order"},
    {"items", "vectors each thread keeps in flight per row or column"},
    {"split",
     "1: each row or column tile spread over several blocks, partial results folded "
     "through a workspace in a later phase (few, long rows)"},
    {"fuse", "1: online max+sum or Welford, one walk fewer over looped rows"},
    {"shift",
     "1: rows whose length is not a multiple of vec take vectors from each row's first "
     "aligned element, with a scalar head and tail"},
    {"stage", "1: a long row's re-read inputs kept in shared memory"},
    {"prefetch",
     "1: outer reductions' scalar loads of the next chunk made before the last one is summed"},
    {"tile_in", "tiled pointwise: the tile's extent along the transposed inputs' rows"},
    {"tile_out", "tiled pointwise: the tile's extent along the output's rows"},
    {"tile_m", "contraction: output rows per tile"},
    {"tile_n", "contraction: output columns per tile"},
    {"tile_k", "contraction: reduced indices per pipeline stage"},
    {"warps_m", "contraction: MMA warps along the tile's rows"},
    {"warps_n", "contraction: MMA warps along the tile's columns"},
    {"stages", "contraction: pipeline stages in shared memory"},
    {"raster", "contraction: 0 walks the tiles down M within a band, 1 along N"},
    {"ctas", "contraction: blocks per SM of the persistent grid"},
    {"wgmma", "1: Hopper warpgroup MMAs (sm_90a images)"},
    {"tma", "1: a producer warpgroup copies the operands with TMA (sm_90a images)"},
    {"pingpong", "1: each MMA warpgroup computes whole tiles of its own, alternately"},
    {"smem_epilogue",
     "1: the accumulators go through shared memory to one copy of the epilogue's code "
     "(long epilogues)"},
};

// Words of `text` on lines of at most `width` columns (a word longer than that stays whole).
std::vector<std::string> wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines(1);
  while (!text.empty()) {
    size_t sp = text.find(' ');
    std::string_view word = text.substr(0, sp);
    text.remove_prefix(sp == std::string_view::npos ? text.size() : sp + 1);
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width)
      lines.emplace_back();
    if (!lines.back().empty()) lines.back() += ' ';
    lines.back() += word;
  }
  return lines;
}

}  // namespace

std::string diff(const Cache& a, const Cache& b) {
  std::map<Key, std::pair<const Entry*, const Entry*>> both;
  for (const Entry& e : a.entries) both[e.key].first = &e;
  for (const Entry& e : b.entries) both[e.key].second = &e;
  std::string out;
  auto result = [](const Entry& e) {
    return fmt::format("{} ({:.2f} us)", config_text(e.winner), e.winner.median_us);
  };
  for (const auto& [key, p] : both) {
    const auto [x, y] = p;
    if (y == nullptr) {
      out += fmt::format("- {}: {}\n", label(*x), result(*x));
    } else if (x == nullptr) {
      out += fmt::format("+ {}: {}\n", label(*y), result(*y));
    } else if (x->winner.config != y->winner.config) {
      out += fmt::format("~ {}: winner {} -> {} ({:.2f} us{})\n", label(*x), result(*x),
                         config_text(y->winner), y->winner.median_us,
                         percent(x->winner.median_us, y->winner.median_us));
    } else if (!(*x == *y)) {
      out +=
          fmt::format("~ {}: same winner {}, retuned: {:.2f} us -> {:.2f} us{} ({} -> {})\n",
                      label(*x), config_text(x->winner), x->winner.median_us, y->winner.median_us,
                      percent(x->winner.median_us, y->winner.median_us), x->tuned_at, y->tuned_at);
    }
  }
  return out;
}

std::string format_table(const Cache& c, const TableOptions& opts) {
  // Groups: one kernel step on one GPU, driver and Kiln; rows: its shapes in key order.
  using Group = std::tuple<std::string, std::string, int, GpuKey, int, std::string>;
  std::map<Group, std::vector<const Entry*>> groups;
  size_t buckets = 0;
  std::set<std::string> kernels, knobs;
  std::set<GpuKey> gpus;
  for (const Entry& e : c.entries) {
    kernels.insert(e.kernel);
    gpus.insert(e.key.gpu);
    auto& rows = groups[{e.kernel, e.key.kernel_hash, e.key.step, e.key.gpu, e.key.driver_version,
                         e.key.kiln_version}];
    if (e.key.bucket) ++buckets;
    if (e.key.bucket && !opts.buckets) continue;
    rows.push_back(&e);
    for (const auto& [k, v] : e.winner.config) knobs.insert(k);
  }
  const size_t width = static_cast<size_t>(std::max(opts.width, 60));
  auto count = [](size_t n, std::string_view one, std::string_view many = "") {
    if (n == 1) return fmt::format("1 {}", one);
    return many.empty() ? fmt::format("{} {}s", n, one) : fmt::format("{} {}", n, many);
  };
  std::string out =
      fmt::format("{}: {}, {}{}; {}, {}\n", count(c.entries.size(), "entry", "entries"),
                  count(c.entries.size() - buckets, "exact shape"), count(buckets, "bucket"),
                  buckets > 0 && !opts.buckets ? " (--buckets lists them)" : "",
                  count(kernels.size(), "kernel"), count(gpus.size(), "GPU"));
  for (auto& [g, rows] : groups) {
    const auto& [kernel, hash, step, gpu, driver, kiln] = g;
    out += fmt::format("\n{} step {} ({})\n  on {}, driver {}, kiln {}\n", kernel, step, hash,
                       gpu_text(gpu), driver, kiln);
    if (rows.empty()) {
      out += "  bucket entries only\n";
      continue;
    }
    std::sort(rows.begin(), rows.end(),
              [](const Entry* a, const Entry* b) { return a->key < b->key; });
    size_t shape_w = 5;
    for (const Entry* e : rows) shape_w = std::max(shape_w, shape_text(e->key).size());
    shape_w = std::min<size_t>(shape_w, 40);
    const std::string head = fmt::format("  {:<{}}  {:>10}  {:>10}  {:>8}  ", "shape", shape_w,
                                         "default us", "winner us", "speed-up");
    const size_t config_w = width > head.size() + 20 ? width - head.size() : 20;
    out += head + "winner config\n";
    for (const Entry* e : rows) {
      std::optional<double> sp = speedup(*e);
      std::string config = config_text(e->winner);
      if (e->winner.config == e->default_config.config) config += " (the default)";
      std::string shape = shape_text(e->key);
      std::string line = fmt::format("  {:<{}}  {:>10.2f}  {:>10.2f}  {:>8}  ", shape, shape_w,
                                     e->default_config.median_us, e->winner.median_us,
                                     sp ? fmt::format("{:.2f}x", *sp) : "-");
      const size_t indent = line.size();
      if (indent > head.size()) {  // a shape wider than its column: the rest on the next line
        out += "  " + shape + "\n";
        line = fmt::format("  {:<{}}  {:>10.2f}  {:>10.2f}  {:>8}  ", "", shape_w,
                           e->default_config.median_us, e->winner.median_us,
                           sp ? fmt::format("{:.2f}x", *sp) : "-");
      }
      std::vector<std::string> parts = wrap(config, config_w);
      for (size_t i = 0; i < parts.size(); ++i) {
        out += (i == 0 ? line : std::string(head.size(), ' ')) + parts[i] + "\n";
      }
    }
  }
  if (!knobs.empty()) {
    out += "\nknobs:\n";
    size_t name_w = 8;  // "speed-up"
    for (const auto& [name, meaning] : kKnobs) {
      if (knobs.count(std::string(name))) name_w = std::max(name_w, name.size());
    }
    for (const auto& [name, meaning] : kKnobs) {
      if (!knobs.count(std::string(name))) continue;
      std::vector<std::string> parts = wrap(meaning, width - 4 - name_w);
      for (size_t i = 0; i < parts.size(); ++i) {
        out += fmt::format("  {:<{}}  {}\n", i == 0 ? std::string(name) : "", name_w, parts[i]);
      }
    }
    out += fmt::format("  {:<{}}  default us / winner us, both timed in the same run\n", "speed-up",
                       name_w);
  }
  return out;
}

std::string entries_json(const Cache& c) {
  OrderedJson a = OrderedJson::array();
  for (const Entry& e : c.entries) {
    OrderedJson j = entry_json(e);
    std::optional<double> s = speedup(e);
    j["speedup"] = s ? OrderedJson(*s) : OrderedJson(nullptr);
    a.push_back(std::move(j));
  }
  return a.dump(2) + "\n";
}

}  // namespace kiln::cache
