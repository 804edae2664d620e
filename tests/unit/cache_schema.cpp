// Unit tests of the autotune cache file format: round-trip, the JSON layout, and hostile or
// foreign input rejected with messages that name the file and the JSON path.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/unit/cache_fixtures.h"

namespace {

using namespace kiln::cache;
using namespace kiln::cache::testing;
using Json = nlohmann::json;

const char* kOrigin = "cache.json";

Cache sample_cache() {
  Cache c;
  Entry plain = sample_entry();
  Key bucket_key = sample_key("fnv1a:feed", 32768, 1024);
  bucket_key.bucket = true;
  bucket_key.step = 2;
  Entry bucket = sample_entry(bucket_key);
  bucket.runner_up.reset();
  bucket.rejected.clear();
  bucket.winner.median_us = 0.1 + 0.2;  // not exactly representable in decimal
  c.entries = {plain, bucket};
  return merge(Cache{}, c);  // sorted
}

// Parses sample_cache() after `edit` changed its JSON; returns the error message or "ok".
std::string parse_edited(const std::function<void(Json&)>& edit) {
  Json j = Json::parse(to_json(sample_cache()));
  edit(j);
  kiln::Result<Cache> r = parse(j.dump(), kOrigin);
  return r.ok() ? "ok" : r.message();
}

}  // namespace

TEST_CASE("cache JSON round-trips", "[cache]") {
  Cache c = sample_cache();
  std::string text = to_json(c);
  kiln::Result<Cache> back = parse(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == c);
  CHECK(to_json(*back) == text);  // stable text
  CHECK(parse(to_json(Cache{}), kOrigin).value() == Cache{});
}

TEST_CASE("what was pruned round-trips, and is written only when something was", "[cache]") {
  Cache c = sample_cache();
  c.entries[0].pruned = {
      "block=1024 unroll=8 vec=8: pruned after 5 repetitions: its fastest, "
      "31.00 us, > 1.5 x the best so far, 10.50 us"};
  Json j = Json::parse(to_json(c));
  CHECK(j["entries"][0]["pruned"].size() == 1);
  CHECK(!j["entries"][1].contains("pruned"));  // files without it read as before
  kiln::Result<Cache> back = parse(to_json(c), kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == c);
  CHECK(parse_edited([](Json& j) { j["entries"][1]["pruned"] = Json::array({2}); }) ==
        "cache.json: entries[1].pruned[0]: expected a string, got an integer");
}

TEST_CASE("cache JSON has the documented layout", "[cache]") {
  Json j = Json::parse(to_json(sample_cache()));
  CHECK(j["format"] == "kiln-autotune-cache");
  CHECK(j["version"] == 1);
  REQUIRE(j["entries"].size() == 2);
  const Json& e = j["entries"][0];
  CHECK(e["kernel"] == "bias_gelu");
  CHECK(e["key"]["kernel_hash"] == "fnv1a:0123456789abcdef");
  CHECK(e["key"]["gpu"] == Json{{"name", "NVIDIA H200"}, {"cc", "9.0"}, {"sm_count", 132}});
  CHECK(e["key"]["driver_version"] == 13000);
  CHECK(e["key"]["kiln_version"] == "0.1.0");
  CHECK(e["key"]["shape"] == Json{{"M", 4096}, {"N", 1024}});
  CHECK(e["key"]["bucket"] == false);
  CHECK(e["winner"]["config"] == Json{{"block", 256}, {"unroll", 2}, {"vec", 8}});
  CHECK(e["winner"]["median_us"] == 10.5);
  CHECK(e["runner_up"]["median_us"] == 10.75);
  CHECK(e["default"]["spread"] == 0.03);
  CHECK(e["how"] == "grid 18");
  CHECK(e["deterministic"] == true);
  CHECK(e["candidates"] == 18);
  CHECK(e["rejected"].size() == 1);
  CHECK(e["tuned_at"] == "2025-06-01T12:00:00Z");
  CHECK(!j["entries"][1].contains("runner_up"));
}

TEST_CASE("a file with a key twice keeps the newer entry", "[cache]") {
  Json j = Json::parse(to_json(sample_cache()));
  Json newer = j["entries"][0];
  newer["tuned_at"] = "2026-01-01T00:00:00Z";
  newer["how"] = "newer";
  Json older = j["entries"][0];
  older["tuned_at"] = "2024-01-01T00:00:00Z";
  j["entries"] = Json::array({newer, j["entries"][0], older});
  kiln::Result<Cache> c = parse(j.dump(), kOrigin);
  REQUIRE(c.ok());
  REQUIRE(c->entries.size() == 1);
  CHECK(c->entries[0].how == "newer");
}

TEST_CASE("cache files that are not JSON or not ours are rejected", "[cache]") {
  CHECK(parse("", kOrigin).message().rfind("cache.json: invalid JSON: ", 0) == 0);
  CHECK(parse("not json", kOrigin).message().rfind("cache.json: invalid JSON: ", 0) == 0);
  std::string text = to_json(sample_cache());
  CHECK(parse(text.substr(0, text.size() / 2), kOrigin)
            .message()
            .rfind("cache.json: invalid JSON: ", 0) == 0);
  CHECK(parse("[]", kOrigin).message() == "cache.json: expected an object, got an array");
  CHECK(parse_edited([](Json& j) { j["format"] = "kiln-bundle"; }) ==
        "cache.json: format: expected \"kiln-autotune-cache\", got \"kiln-bundle\"");
  CHECK(parse_edited([](Json& j) { j.erase("format"); }) ==
        "cache.json: format: missing (expected \"kiln-autotune-cache\")");
  CHECK(parse_edited([](Json& j) { j["version"] = 2; }) ==
        "cache.json: schema version 2 is not supported by this kiln (1)");
  CHECK(parse_edited([](Json& j) { j["version"] = "1"; }) ==
        "cache.json: version: expected an integer >= 0, got a string");
}

TEST_CASE("cache entries are checked field by field", "[cache]") {
  auto entry = [](auto f) { return [f](Json& j) { f(j["entries"][1]); }; };
  CHECK(parse_edited([](Json& j) { j["entries"] = Json::object(); }) ==
        "cache.json: entries: expected an array, got an object");
  CHECK(parse_edited(entry([](Json& e) { e["winner"]["median_us"] = -1; })) ==
        "cache.json: entries[1].winner.median_us: expected a number >= 0");
  CHECK(parse_edited(entry([](Json& e) { e["winner"]["median_us"] = "fast"; })) ==
        "cache.json: entries[1].winner.median_us: expected a number >= 0");
  CHECK(parse_edited(entry([](Json& e) { e.erase("default"); })) ==
        "cache.json: entries[1].default: missing (expected an object)");
  CHECK(parse_edited(entry([](Json& e) { e["runner_up"] = 3; })) ==
        "cache.json: entries[1].runner_up: expected an object, got an integer");
  CHECK(parse_edited(entry([](Json& e) { e["winner"]["config"]["block"] = 1.5; })) ==
        "cache.json: entries[1].winner.config.block: expected an integer, got a number");
  CHECK(parse_edited(entry([](Json& e) { e["key"]["gpu"]["cc"] = "nine"; })) ==
        "cache.json: entries[1].key.gpu.cc: expected a compute capability like \"9.0\", got "
        "\"nine\"");
  CHECK(parse_edited(entry([](Json& e) { e["key"]["gpu"]["sm_count"] = 0; })) ==
        "cache.json: entries[1].key.gpu.sm_count: expected an integer in 1..2147483647, got 0");
  CHECK(parse_edited(entry([](Json& e) { e["key"]["shape"]["M"] = 0; })) ==
        "cache.json: entries[1].key.shape.M: expected an integer >= 1, got 0");
  CHECK(parse_edited(entry([](Json& e) { e["key"]["shape"]["M"] = 1000; })) ==
        "cache.json: entries[1].key.shape.M: expected a bucket value (a power of two or "
        "9223372036854775807), got 1000");
  CHECK(parse_edited(entry([](Json& e) { e["key"]["bucket"] = "yes"; })) ==
        "cache.json: entries[1].key.bucket: expected a boolean, got a string");
  CHECK(parse_edited(entry([](Json& e) { e["key"].erase("kernel_hash"); })) ==
        "cache.json: entries[1].key.kernel_hash: missing (expected a string)");
  CHECK(parse_edited(entry([](Json& e) { e["rejected"] = Json::array({1}); })) ==
        "cache.json: entries[1].rejected[0]: expected a string, got an integer");
  CHECK(parse_edited(entry([](Json& e) { e["tuned_at"] = "yesterday"; })) ==
        "cache.json: entries[1].tuned_at: expected UTC time like \"2025-06-01T12:34:56Z\", "
        "got \"yesterday\"");
  CHECK(parse_edited(entry([](Json& e) { e["candidates"] = -1; })) ==
        "cache.json: entries[1].candidates: expected an integer in 0..2147483647, got -1");
  // Unknown fields are ignored; a null runner_up is no runner-up.
  CHECK(parse_edited(entry([](Json& e) { e["note"] = "hi"; })) == "ok");
  CHECK(parse_edited(entry([](Json& e) { e["runner_up"] = nullptr; })) == "ok");
}

TEST_CASE("utc_now is a valid tuned_at", "[cache]") {
  Entry e = sample_entry(sample_key(), utc_now());
  Cache c;
  c.entries = {e};
  CHECK(parse(to_json(c), kOrigin).ok());
}
