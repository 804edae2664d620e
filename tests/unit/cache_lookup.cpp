// Unit tests of the autotune cache's keys, buckets, lookup, merge, prune, diff and table
// (bundle/cache.h); no files, no GPU.
#include <catch2/catch.hpp>
#include <limits>
#include <sstream>

#include "tests/unit/cache_fixtures.h"

namespace {

using namespace kiln::cache;
using namespace kiln::cache::testing;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

Cache cache_of(std::vector<Entry> entries) {
  Cache c;
  c.entries = std::move(entries);
  return c;
}

}  // namespace

TEST_CASE("cache keys compare every field", "[cache]") {
  Key k = sample_key();
  CHECK(k == sample_key());
  auto differs = [&](auto change) {
    Key other = k;
    change(other);
    return other != k && (other < k || k < other);
  };
  CHECK(differs([](Key& x) { x.kernel_hash = "fnv1a:ffff"; }));
  CHECK(differs([](Key& x) { x.step = 1; }));
  CHECK(differs([](Key& x) { x.gpu.name = "NVIDIA H100"; }));
  CHECK(differs([](Key& x) { x.gpu.cc_minor = 1; }));
  CHECK(differs([](Key& x) { x.gpu.sm_count = 114; }));
  CHECK(differs([](Key& x) { x.driver_version = 12080; }));
  CHECK(differs([](Key& x) { x.kiln_version = "0.2.0"; }));
  CHECK(differs([](Key& x) { x.shape["N"] = 1025; }));
  CHECK(differs([](Key& x) { x.shape["K"] = 1; }));
  CHECK(differs([](Key& x) { x.bucket = true; }));
}

TEST_CASE("bucket_value rounds up to a power of two without overflow", "[cache]") {
  CHECK(bucket_value(1) == 1);
  CHECK(bucket_value(2) == 2);
  CHECK(bucket_value(3) == 4);
  CHECK(bucket_value(1024) == 1024);
  CHECK(bucket_value(1025) == 2048);
  CHECK(bucket_value(int64_t{1} << 62) == int64_t{1} << 62);
  // Above 2^62 the next power of two does not fit: the top bucket is INT64_MAX.
  CHECK(bucket_value((int64_t{1} << 62) + 1) == kMax);
  CHECK(bucket_value(kMax - 1) == kMax);
  CHECK(bucket_value(kMax) == kMax);
  CHECK(bucket_value(0) == 0);
  CHECK(bucket_value(-5) == -5);
  CHECK(bucket_of({{"M", 30000}, {"N", 1024}}) ==
        std::map<std::string, int64_t>{{"M", 32768}, {"N", 1024}});
}

TEST_CASE("lookup tries the exact shape, then the bucket, and says why", "[cache]") {
  Entry exact = sample_entry(sample_key("h", 30000, 1000));
  Key bucket_key = sample_key("h", 32768, 1024);
  bucket_key.bucket = true;
  Entry bucket = sample_entry(bucket_key);
  bucket.winner.config["block"] = 512;
  Cache c = cache_of({exact, bucket});
  std::string why;

  SECTION("exact") {
    const Entry* e = lookup(c, sample_key("h", 30000, 1000), &why);
    REQUIRE(e != nullptr);
    CHECK(*e == exact);
    CHECK(why == "exact shape M=30000,N=1000");
  }
  SECTION("bucket") {
    const Entry* e = lookup(c, sample_key("h", 20000, 1000), &why);
    REQUIRE(e != nullptr);
    CHECK(*e == bucket);
    CHECK(why == "bucket M<=32768,N<=1024 (shape M=20000,N=1000)");
    CHECK(lookup(c, bucket_key) == &c.entries[1]);  // a bucket key looks up the bucket only
  }
  SECTION("none: another shape") {
    CHECK(lookup(c, sample_key("h", 40000, 1000), &why) == nullptr);
    CHECK(why == "no entry for shape M=40000,N=1000 or its bucket M<=65536,N<=1024");
  }
  SECTION("none: another kernel") {
    CHECK(lookup(c, sample_key("other", 30000, 1000), &why) == nullptr);
    CHECK(why == "no entry for kernel other step 0");
  }
  SECTION("none: another GPU") {
    Key k = sample_key("h", 30000, 1000);
    k.gpu = a100();
    CHECK(lookup(c, k, &why) == nullptr);
    CHECK(why == "no entry for this GPU (NVIDIA A100-SXM4-80GB (cc 8.0, 108 SMs))");
  }
  SECTION("none: another driver or kiln") {
    Key k = sample_key("h", 30000, 1000);
    k.driver_version = 12080;
    CHECK(lookup(c, k, &why) == nullptr);
    CHECK(why == "no entry for driver 12080 on this GPU");
    k = sample_key("h", 30000, 1000);
    k.kiln_version = "0.2.0";
    CHECK(lookup(c, k, &why) == nullptr);
    CHECK(why == "no entry for kiln 0.2.0 on this GPU and driver");
  }
  SECTION("find is exact only") {
    CHECK(find(c, sample_key("h", 30000, 1000)) != nullptr);
    CHECK(find(c, sample_key("h", 20000, 1000)) == nullptr);
  }
}

TEST_CASE("merge keeps one entry per key, the newer one", "[cache]") {
  Entry old_e = sample_entry(sample_key("h"), "2025-01-01T00:00:00Z");
  Entry new_e = sample_entry(sample_key("h"), "2025-02-01T00:00:00Z");
  new_e.winner.median_us = 9.0;
  Entry only_a = sample_entry(sample_key("a"));
  Entry only_b = sample_entry(sample_key("b"));

  Cache m = merge(cache_of({new_e, only_a}), cache_of({old_e, only_b}));
  REQUIRE(m.entries.size() == 3);
  CHECK(m.entries[0] == only_a);  // sorted by key
  CHECK(m.entries[1] == only_b);
  CHECK(m.entries[2] == new_e);  // newer wins even from a
  CHECK(merge(cache_of({old_e}), cache_of({new_e})).entries == std::vector<Entry>{new_e});

  Entry tie = old_e;
  tie.how = "coordinate descent";
  CHECK(merge(cache_of({old_e}), cache_of({tie})).entries == std::vector<Entry>{tie});  // ties: b
  CHECK(merge(cache_of({tie}), cache_of({old_e})).entries == std::vector<Entry>{old_e});
  CHECK(merge(Cache{}, cache_of({only_b, only_a, only_b})).entries.size() == 2);
}

TEST_CASE("prune drops kernels and GPUs no longer present", "[cache]") {
  Key on_a100 = sample_key("k1");
  on_a100.gpu = a100();
  Cache c = cache_of(
      {sample_entry(sample_key("k1")), sample_entry(sample_key("k2")), sample_entry(on_a100)});
  Cache all = c;
  CHECK(prune(all, {}, {}) == 0);
  CHECK(all == c);

  Cache by_hash = c;
  CHECK(prune(by_hash, {"k1", "unrelated"}, {}) == 1);
  REQUIRE(by_hash.entries.size() == 2);
  for (const Entry& e : by_hash.entries) CHECK(e.key.kernel_hash == "k1");

  Cache by_gpu = c;
  CHECK(prune(by_gpu, {}, {h200()}) == 1);
  for (const Entry& e : by_gpu.entries) CHECK(e.key.gpu == h200());

  Cache both = c;
  CHECK(prune(both, {"k1"}, {h200()}) == 2);
  REQUIRE(both.entries.size() == 1);
  CHECK(both.entries[0].key == sample_key("k1"));
}

TEST_CASE("diff lists added, removed and retuned entries", "[cache]") {
  Entry kept = sample_entry(sample_key("kept"));
  Entry gone = sample_entry(sample_key("gone"));
  Entry changed = sample_entry(sample_key("changed"));
  Entry changed2 = changed;
  changed2.winner.config["block"] = 512;
  changed2.winner.median_us = 9.5;
  Entry retimed = sample_entry(sample_key("retimed"));
  Entry retimed2 = retimed;
  retimed2.winner.median_us = 10.0;
  retimed2.tuned_at = "2025-07-01T00:00:00Z";
  Entry added = sample_entry(sample_key("added"));

  CHECK(diff(cache_of({kept}), cache_of({kept})).empty());
  std::string d =
      diff(cache_of({kept, gone, changed, retimed}), cache_of({kept, changed2, retimed2, added}));
  std::string where = " on NVIDIA H200 (cc 9.0, 132 SMs), driver 13000, kiln 0.1.0";
  CHECK(d.find("+ bias_gelu step 0 M=4096,N=1024" + where +
               ": block=256 unroll=2 vec=8 (10.50 us)\n") != std::string::npos);
  CHECK(d.find("- bias_gelu step 0 M=4096,N=1024" + where) != std::string::npos);
  CHECK(d.find(": winner block=256 unroll=2 vec=8 (10.50 us) -> block=512 unroll=2 vec=8 "
               "(9.50 us, -9.5%)\n") != std::string::npos);
  CHECK(d.find(": same winner block=256 unroll=2 vec=8, retuned: 10.50 us -> 10.00 us, -4.8% "
               "(2025-06-01T12:00:00Z -> 2025-07-01T00:00:00Z)\n") != std::string::npos);
  CHECK(std::count(d.begin(), d.end(), '\n') == 4);
}

TEST_CASE("the table groups by kernel, sorts shapes, shows both times and a legend", "[cache]") {
  Key bucket_key = sample_key("b", 32768, 1024);
  bucket_key.bucket = true;
  Entry b = sample_entry(bucket_key);
  b.kernel = "rmsnorm";
  Entry small = sample_entry(sample_key("fnv1a:0123456789abcdef", 64, 1024));
  small.winner = small.default_config;  // the default won
  Entry zero = sample_entry(sample_key("b", 4096, 1024));
  zero.kernel = "rmsnorm";
  zero.winner.median_us = 0;  // no speed-up to show
  std::string t = format_table(cache_of({sample_entry(), b, small, zero}));
  INFO(t);
  CHECK(
      t ==
      "4 entries: 3 exact shapes, 1 bucket (--buckets lists them); 2 kernels, 1 GPU\n"
      "\n"
      "bias_gelu step 0 (fnv1a:0123456789abcdef)\n"
      "  on NVIDIA H200 (cc 9.0, 132 SMs), driver 13000, kiln 0.1.0\n"
      "  shape          default us   winner us  speed-up  winner config\n"
      "  M=64,N=1024         10.75       10.75     1.00x  block=128 unroll=2 vec=8 (the default)\n"
      "  M=4096,N=1024       10.75       10.50     1.02x  block=256 unroll=2 vec=8\n"
      "\n"
      "rmsnorm step 0 (b)\n"
      "  on NVIDIA H200 (cc 9.0, 132 SMs), driver 13000, kiln 0.1.0\n"
      "  shape          default us   winner us  speed-up  winner config\n"
      "  M=4096,N=1024       10.75        0.00         -  block=256 unroll=2 vec=8\n"
      "\n"
      "knobs:\n"
      "  block     threads per block\n"
      "  vec       elements per thread per memory access (1: scalar code, any alignment)\n"
      "  unroll    vectors in flight per thread (pointwise)\n"
      "  speed-up  default us / winner us, both timed in the same run\n");
  TableOptions with_buckets;
  with_buckets.buckets = true;
  CHECK_THAT(format_table(cache_of({sample_entry(), b}), with_buckets),
             Catch::Contains("  bucket M<=32768,N<=1024       10.75       10.50     1.02x  "));
}

TEST_CASE("the table fits 100 columns on a realistic cache", "[cache]") {
  // Every example kernel's kind of config at two shapes, exact and bucket, on two GPUs.
  std::vector<Entry> entries;
  const std::vector<std::pair<std::string, Timing>> kernels{
      {"bias_gelu", {{{"block", 256}, {"unroll", 2}, {"vec", 8}}, 10.5, 0.02}},
      {"softmax_online_bf16_looong_name",
       {{{"block", 1024}, {"group", 1024}, {"items", 4}, {"vec", 8}, {"fuse", 1}, {"stage", 1}},
        30.25,
        0.01}},
      {"colsum_split",
       {{{"block", 256}, {"group", 4}, {"items", 8}, {"vec", 4}, {"split", 1}}, 1234.5, 0.01}},
  };
  for (const GpuKey& gpu : {h200(), a100()}) {
    for (const auto& [name, winner] : kernels) {
      for (auto [m, n] : {std::pair<int64_t, int64_t>{4097, 33}, {1, 9223372036854775807}}) {
        Key k = sample_key("fnv1a:" + name, m, n);
        k.gpu = gpu;
        k.shape["BATCH_SIZE_WITH_A_LONG_NAME"] = 123456789;
        Entry e = sample_entry(k);
        e.kernel = name;
        e.winner = winner;
        e.how = std::string(300, 'h');  // long texts stay out of the table
        entries.push_back(e);
        e.key.bucket = true;
        e.key.shape = bucket_of(e.key.shape);
        entries.push_back(e);
      }
    }
  }
  for (bool buckets : {false, true}) {
    TableOptions o;
    o.buckets = buckets;
    std::string t = format_table(cache_of(entries), o);
    INFO(t);
    std::istringstream in(t);
    size_t widest = 0, count = 0;
    for (std::string line; std::getline(in, line); ++count) widest = std::max(widest, line.size());
    CHECK(widest <= 100);
    CHECK(count > 20);
    CHECK_THAT(t, Catch::Contains("split     1: each row or column tile spread over several"));
    CHECK_THAT(t, Catch::Contains("group "));
    CHECK_THAT(t, Catch::Contains("items "));
  }
}

TEST_CASE("entries_json adds the speed-up", "[cache]") {
  std::string j = entries_json(cache_of({sample_entry()}));
  CHECK(j.find("\"speedup\": 1.0238095238095237") != std::string::npos);
  CHECK(j.front() == '[');
}
