// What `kiln tune` tunes: the recorded-shapes file (bundle/shape_record.h) read line by line
// with errors at FILE:LINE, the (kernel, shape) jobs made from it and from --shape, and the
// shards of that list (autotune/jobs.h); with synthesized cache entries, that the shards'
// caches merged hold the keys of one unsharded run.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <set>

#include "autotune/jobs.h"
#include "bundle/cache.h"
#include "bundle/shape_record.h"
#include "tests/unit/cache_fixtures.h"

using namespace kiln;

namespace {

bundle::KernelInfo kernel_info(std::string name, std::string hash,
                               std::vector<std::string> symbols) {
  bundle::KernelInfo k;
  k.name = std::move(name);
  k.hash = std::move(hash);
  k.symbols = std::move(symbols);
  return k;
}

bundle::Manifest manifest() {
  bundle::Manifest m;
  m.kernels.push_back(kernel_info("softmax", "fnv1a:00000000000000aa", {"M", "N"}));
  m.kernels.push_back(kernel_info("add", "fnv1a:00000000000000bb", {"N"}));
  return m;
}

std::string line(const std::string& kernel, const std::string& hash,
                 std::vector<std::string> symbols, std::vector<int64_t> values) {
  return shapes::record_line(kernel, hash, symbols, values);
}

// Recorded lines of both kernels: 3 processes, each with the same 12 shapes of softmax and 5
// of add, in its own order.
std::string recorded_file(unsigned seed) {
  std::vector<std::string> lines;
  for (int64_t m : {1, 7, 4096}) {
    for (int64_t n : {33, 1000, 1024, 32768}) {
      lines.push_back(line("softmax", "fnv1a:00000000000000aa", {"M", "N"}, {m, n}));
    }
  }
  for (int64_t n : {1, 5, 100, 4096, 1 << 20}) {
    lines.push_back(line("add", "fnv1a:00000000000000bb", {"N"}, {n}));
  }
  std::string text;
  std::mt19937 rng(seed);
  for (int process = 0; process < 3; ++process) {
    std::shuffle(lines.begin(), lines.end(), rng);
    for (const std::string& l : lines) text += l;
  }
  return text;
}

JobList jobs_of(const std::string& text) {
  Result<std::vector<shapes::Recorded>> r = shapes::parse(text, "shapes.jsonl");
  INFO(r.message());
  REQUIRE(r.ok());
  return jobs_from_recorded({manifest()}, "", *r, "shapes.jsonl");
}

}  // namespace

TEST_CASE("a recorded line is one JSON object that parses back", "[autotune][shapes]") {
  std::string l = line("softmax", "fnv1a:00000000000000aa", {"M", "N"}, {4096, 1000});
  CHECK(l ==
        "{\"kernel\":\"softmax\",\"hash\":\"fnv1a:00000000000000aa\","
        "\"shape\":{\"M\":4096,\"N\":1000}}\n");
  Result<std::vector<shapes::Recorded>> r = shapes::parse("\n" + l + "  \n" + l, "f.jsonl");
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  CHECK((*r)[0].kernel == "softmax");
  CHECK((*r)[0].hash == "fnv1a:00000000000000aa");
  CHECK((*r)[0].shape == std::map<std::string, int64_t>{{"M", 4096}, {"N", 1000}});
  CHECK((*r)[0].line == 2);
  CHECK((*r)[1].line == 4);
  // A name with a quote is escaped, not broken.
  Result<std::vector<shapes::Recorded>> q = shapes::parse(line("a\"b", "h", {"N"}, {1}), "q.jsonl");
  REQUIRE(q.ok());
  CHECK((*q)[0].kernel == "a\"b");
}

TEST_CASE("a malformed recorded line is an error naming FILE:LINE", "[autotune][shapes]") {
  const std::string good = line("add", "fnv1a:00000000000000bb", {"N"}, {5});
  auto error = [&](const std::string& bad) {
    Result<std::vector<shapes::Recorded>> r =
        shapes::parse(good + good + bad + "\n" + good, "s.jsonl");
    REQUIRE_FALSE(r.ok());
    return r.message();
  };
  CHECK_THAT(error("{\"kernel\":\"add\",\"hash\":\"h\",\"shape\":{\"N\":5}"),
             Catch::StartsWith("s.jsonl:3: invalid JSON: "));
  CHECK(error("{\"hash\":\"h\",\"shape\":{\"N\":5}}") ==
        "s.jsonl:3: kernel: missing (expected a string)");
  CHECK(error("{\"kernel\":\"add\",\"hash\":\"h\",\"shape\":{\"N\":0}}") ==
        "s.jsonl:3: shape.N: expected an integer >= 1, got 0");
  CHECK(error("{\"kernel\":\"add\",\"hash\":\"h\",\"shape\":[5]}") ==
        "s.jsonl:3: shape: expected an object, got an array");
  CHECK(error("[1]") == "s.jsonl:3: expected a JSON object, got an array");
  // A torn line (two writes interleaved) is caught the same way.
  CHECK_THAT(error(good.substr(0, 20) + good), Catch::StartsWith("s.jsonl:3: invalid JSON"));
  Result<std::vector<shapes::Recorded>> missing = shapes::read("/nonexistent/shapes.jsonl");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.message(), Catch::StartsWith("/nonexistent/shapes.jsonl: cannot open"));
}

TEST_CASE("recorded shapes become sorted, deduplicated jobs, foreign lines are skipped",
          "[autotune][shapes]") {
  std::string text = recorded_file(1);
  text += line("gone", "fnv1a:0000000000000000", {"N"}, {5});         // not in bundle
  text += line("add", "fnv1a:00000000000000ff", {"N"}, {5});          // edited since
  text += line("add", "fnv1a:00000000000000ff", {"N"}, {6});          // (twice)
  text += line("add", "fnv1a:00000000000000bb", {"M", "N"}, {5, 5});  // other symbols
  JobList j = jobs_of(text);
  CHECK(j.jobs.size() == 17);  // 12 softmax + 5 add, each once although recorded 3 times
  CHECK(std::is_sorted(j.jobs.begin(), j.jobs.end()));
  CHECK(job_text(j.jobs.front()) == "add N=1");
  CHECK(job_text(j.jobs.back()) == "softmax M=4096,N=32768");  // by value, not text
  REQUIRE(j.skipped.size() == 3);
  CHECK(j.skipped[0] == "shapes.jsonl:52: skipped: kernel gone is not in the bundle (1 line)");
  CHECK(j.skipped[1] ==
        "shapes.jsonl:53: skipped: kernel add was recorded with hash fnv1a:00000000000000ff, the "
        "bundle's is fnv1a:00000000000000bb (another version of the kernel) (2 lines)");
  CHECK(j.skipped[2] ==
        "shapes.jsonl:55: skipped: kernel add: the recorded symbols (M,N) are not the kernel's "
        "(N) (1 line)");
  // --kernel: only that kernel's lines.
  Result<std::vector<shapes::Recorded>> r = shapes::parse(text, "shapes.jsonl");
  REQUIRE(r.ok());
  JobList adds = jobs_from_recorded({manifest()}, "add", *r, "shapes.jsonl");
  CHECK(adds.jobs.size() == 5);
  CHECK(adds.skipped.size() == 2);
}

TEST_CASE("jobs from --shape: each kernel whose symbols a shape binds", "[autotune][shapes]") {
  JobList j = jobs_from_shapes({manifest()}, "", {{{"M", 4}, {"N", 8}}, {{"N", 3}}});
  std::vector<std::string> got;
  for (const TuneJob& t : j.jobs) got.push_back(job_text(t));
  CHECK(got == std::vector<std::string>{"add N=3", "add N=8", "softmax M=4,N=8"});
  CHECK(j.skipped == std::vector<std::string>{"softmax N=3: skipped, no value for M"});
}

TEST_CASE(
    "jobs over several bundles: each recorded line goes to the first bundle with its "
    "kernel at that hash",
    "[autotune][shapes]") {
  bundle::Manifest other;  // another spec's bundle: a new add and a kernel of its own
  other.kernels.push_back(kernel_info("add", "fnv1a:00000000000000ff", {"N"}));
  other.kernels.push_back(kernel_info("scale", "fnv1a:00000000000000cc", {"N"}));
  const std::string text = line("add", "fnv1a:00000000000000ff", {"N"}, {9}) +  // other's
                           line("add", "fnv1a:00000000000000bb", {"N"}, {9}) +  // the first's
                           line("scale", "fnv1a:00000000000000cc", {"N"}, {5}) +
                           line("softmax", "fnv1a:00000000000000aa", {"M", "N"}, {2, 3}) +
                           line("gone", "fnv1a:0000000000000001", {"N"}, {1}) +
                           line("scale", "fnv1a:00000000000000dd", {"N"}, {5});
  Result<std::vector<shapes::Recorded>> r = shapes::parse(text, "app.jsonl");
  REQUIRE(r.ok());
  JobList j = jobs_from_recorded({manifest(), other}, "", *r, "app.jsonl");
  std::vector<std::pair<int, std::string>> got;
  for (const TuneJob& t : j.jobs) got.emplace_back(t.bundle, job_text(t));
  CHECK(got == std::vector<std::pair<int, std::string>>{
                   {0, "add N=9"}, {0, "softmax M=2,N=3"}, {1, "add N=9"}, {1, "scale N=5"}});
  CHECK(j.skipped ==
        std::vector<std::string>{
            "app.jsonl:5: skipped: kernel gone is not in the bundles (1 line)",
            "app.jsonl:6: skipped: kernel scale was recorded with hash fnv1a:00000000000000dd, "
            "the bundle's is fnv1a:00000000000000cc (another version of the kernel) (1 line)"});
  // --shape: every bundle's kernels that the shape binds, in bundle order.
  JobList s = jobs_from_shapes({manifest(), other}, "add", {{{"N", 4}}});
  REQUIRE(s.jobs.size() == 2);
  CHECK(s.jobs[0].bundle == 0);
  CHECK(s.jobs[1].bundle == 1);
}

TEST_CASE("shards are disjoint, cover the list and do not depend on the input's order",
          "[autotune][shard]") {
  const std::vector<TuneJob> all = jobs_of(recorded_file(1)).jobs;
  REQUIRE(all.size() == 17);
  for (int n = 1; n <= 6; ++n) {
    INFO("n = " << n);
    std::multiset<TuneJob> covered;
    for (int i = 0; i < n; ++i) {
      std::vector<TuneJob> s = shard(all, i, n);
      // Same shard from a file written in another order (other processes, other machine).
      CHECK(s == shard(jobs_of(recorded_file(7 + i)).jobs, i, n));
      CHECK(s.size() >= all.size() / n);  // balanced: sizes differ by at most one
      CHECK(s.size() <= all.size() / n + 1);
      covered.insert(s.begin(), s.end());
    }
    CHECK(covered.size() == all.size());  // disjoint (a multiset counts repeats) ...
    CHECK(std::set<TuneJob>(covered.begin(), covered.end()) ==
          std::set<TuneJob>(all.begin(), all.end()));  // ... and covering
  }
  std::string why;
  CHECK(parse_shard("2/4", &why) == std::pair{2, 4});
  for (const char* bad : {"4/4", "-1/4", "1/0", "1", "a/b", "1/4x", ""}) {
    INFO(bad);
    CHECK_FALSE(parse_shard(bad, &why));
    CHECK_THAT(why, Catch::Contains("expected I/N with 0 <= I < N"));
  }
}

TEST_CASE("two shard caches merged hold the keys of one unsharded run", "[autotune][shard]") {
  using namespace cache::testing;
  const std::vector<TuneJob> all = jobs_of(recorded_file(3)).jobs;
  // What a tune of `jobs` stores (autotune/tune.cpp): per job an exact entry and its bucket's.
  auto tuned = [&](const std::vector<TuneJob>& jobs, const std::string& at) {
    std::vector<cache::Entry> out;
    for (const TuneJob& j : jobs) {
      cache::Entry e = sample_entry(
          sample_key(j.kernel == "add" ? "fnv1a:00000000000000bb" : "fnv1a:00000000000000aa"), at);
      e.kernel = j.kernel;
      e.key.shape = std::map<std::string, int64_t>(j.shape.begin(), j.shape.end());
      cache::Entry b = e;
      b.key.bucket = true;
      b.key.shape = cache::bucket_of(e.key.shape);
      out.push_back(e);
      out.push_back(b);
    }
    return out;
  };
  TempDir dir;
  Result<cache::Cache> whole =
      cache::store(dir.file("whole.json"), tuned(all, "2025-06-01T12:00:00Z"));
  Result<cache::Cache> s0 =
      cache::store(dir.file("s0.json"), tuned(shard(all, 0, 2), "2025-06-01T12:00:01Z"));
  Result<cache::Cache> s1 =
      cache::store(dir.file("s1.json"), tuned(shard(all, 1, 2), "2025-06-01T12:00:02Z"));
  REQUIRE(whole.ok());
  REQUIRE(s0.ok());
  REQUIRE(s1.ok());
  auto keys = [](const cache::Cache& c) {
    std::vector<cache::Key> k;
    for (const cache::Entry& e : c.entries) k.push_back(e.key);
    return k;
  };
  cache::Cache merged = cache::merge(*s0, *s1);
  CHECK(keys(merged) == keys(*whole));
  // Shards of one bundle share bucket entries (add N=4096 and N=100 fall in other buckets, but
  // softmax M=4096,N=1000 and N=1024 share one): the newer wins, as in one run.
  CHECK(merged.entries.size() == whole->entries.size());
  CHECK(merged.entries.size() < s0->entries.size() + s1->entries.size());
}
