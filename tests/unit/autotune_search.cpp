// The autotuner's search against fake timing functions: grid, rejection, coordinate descent,
// noise, and that no configuration is timed twice.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "autotune/harness.h"
#include "autotune/search.h"
#include "autotune/tune.h"

using namespace kiln;

namespace {

std::vector<Config> grid() {
  std::vector<Config> g;
  for (int64_t block : {128, 256, 512}) {
    for (int64_t unroll : {1, 2, 4})
      g.push_back({{"block", block}, {"unroll", unroll}, {"vec", 4}});
  }
  return g;
}

const std::vector<ParamRange> kParams{{"block", 32, 1024}, {"unroll", 1, 16}};

// A bowl in log2 space with its minimum at (block, unroll) = (bx, ux).
std::function<Trial(const Config&)> bowl(int64_t bx, int64_t ux, std::map<Config, int>* calls,
                                         double spread = 0.001) {
  return [=](const Config& c) {
    ++(*calls)[c];
    double db = std::log2(double(c.at("block")) / bx), du = std::log2(double(c.at("unroll")) / ux);
    return Trial{Measurement{100.0 * (1 + 0.1 * db * db + 0.1 * du * du), spread}, ""};
  };
}

}  // namespace

TEST_CASE("the grid finds the best precompiled config", "[autotune]") {
  std::map<Config, int> calls;
  SearchResult r = search(grid(), kParams, bowl(256, 2, &calls), {.descent = false});
  REQUIRE(r.best);
  CHECK(r.best->at("block") == 256);
  CHECK(r.best->at("unroll") == 2);
  CHECK(r.best_time.median_us == Approx(100.0));
  CHECK(r.timed == 9);
  REQUIRE(r.runner_up);
  CHECK(r.runner_up_time.median_us == Approx(110.0));
}

TEST_CASE("coordinate descent leaves the grid when that is faster", "[autotune]") {
  std::map<Config, int> calls;
  SearchResult r = search(grid(), kParams, bowl(1024, 16, &calls), {});
  REQUIRE(r.best);
  CHECK(r.best->at("block") == 1024);
  CHECK(r.best->at("unroll") == 16);
  CHECK(r.descent_moves == 3);  // from (512, 4): block -> 1024, unroll -> 8, then -> 16
  for (const auto& [c, n] : calls) CHECK(n == 1);  // never timed twice
  CHECK_THAT(r.how, Catch::Contains("coordinate descent"));
}

TEST_CASE("descent respects parameter ranges", "[autotune]") {
  std::map<Config, int> calls;
  SearchResult r =
      search(grid(), {{"block", 128, 512}, {"unroll", 1, 4}}, bowl(4096, 64, &calls), {});
  CHECK(r.best->at("block") == 512);
  CHECK(r.best->at("unroll") == 4);
  CHECK(r.descent_moves == 0);
  for (const auto& [c, n] : calls) {
    CHECK(c.at("block") <= 512);
    CHECK(c.at("unroll") <= 4);
  }
}

TEST_CASE("rejected configs never win", "[autotune]") {
  std::map<Config, int> calls;
  auto base = bowl(256, 2, &calls);
  SearchResult r = search(grid(), kParams,
                          [&](const Config& c) {
                            if (c.at("block") == 256 && c.at("unroll") == 2)
                              return Trial{std::nullopt, "wrong result"};
                            return base(c);
                          },
                          {});
  REQUIRE(r.best);
  CHECK_FALSE((r.best->at("block") == 256 && r.best->at("unroll") == 2));
  REQUIRE(r.rejected.size() == 1);
  CHECK(r.rejected[0] == "block=256 unroll=2 vec=4: wrong result");
}

TEST_CASE("an improvement within the noise is not a move", "[autotune]") {
  std::map<Config, int> calls;
  // Spread of 50%: no neighbour of the grid's best is "really" faster, so the descent stops
  // after one sweep; the winner is still the fastest configuration timed.
  SearchResult r = search(grid(), kParams, bowl(1024, 16, &calls, 0.5), {});
  CHECK(r.descent_moves == 0);
  REQUIRE(r.best);
  // (512, 8), timed by the descent at 120 us, beats the grid's best (512, 4) at 150 us.
  CHECK(r.best->at("block") == 512);
  CHECK(r.best->at("unroll") == 8);
  CHECK(r.best_time.median_us == Approx(120.0));
  REQUIRE(r.runner_up);
  CHECK(r.runner_up_time.median_us >= r.best_time.median_us);
}

TEST_CASE("the runner-up is never faster than the winner", "[autotune]") {
  // Times that the descent's 1% threshold would not move to: the winner is still the fastest.
  std::map<Config, double> times{
      {{{"block", 128}}, 10.0}, {{{"block", 256}}, 9.95}, {{{"block", 512}}, 10.2}};
  SearchResult r = search({{{"block", 128}}}, {{"block", 32, 1024}},
                          [&](const Config& c) {
                            return Trial{Measurement{times.count(c) ? times.at(c) : 50.0, 0.0}, ""};
                          },
                          {});
  REQUIRE(r.best);
  CHECK(r.best->at("block") == 256);
  CHECK(r.best_time.median_us == 9.95);
  REQUIRE(r.runner_up);
  CHECK(r.runner_up->at("block") == 128);
  CHECK(r.runner_up_time.median_us == 10.0);
}

TEST_CASE("the default stays the winner unless a candidate is faster than it", "[autotune]") {
  const Config def{{"block", 128}}, fast{{"block", 256}}, slow{{"block", 512}};
  auto searched = [&] {
    SearchResult r;
    r.times = {{def, {10.0, 0.01}}, {fast, {9.0, 0.01}}, {slow, {12.0, 0.01}}};
    r.best = fast;
    r.best_time = {9.0, 0.01};
    r.runner_up = def;
    r.runner_up_time = {10.0, 0.01};
    return r;
  };
  SECTION("the default, timed again, is faster than the search's best: the default wins") {
    SearchResult r = searched();
    std::string note = keep_default_unless_faster(r, def, {8.5, 0.02});
    CHECK(*r.best == def);
    CHECK(r.best_time.median_us == 8.5);
    CHECK(*r.runner_up == fast);
    CHECK(r.runner_up_time.median_us == 9.0);
    CHECK(note ==
          "default kept: the fastest candidate, block=256, took 9.00 us, not below the "
          "default's 8.50 us");
  }
  SECTION("a tie goes to the default") {
    SearchResult r = searched();
    CHECK_FALSE(keep_default_unless_faster(r, def, {9.0, 0.0}).empty());
    CHECK(*r.best == def);
    CHECK(*r.runner_up == fast);
  }
  SECTION("a faster candidate wins; the default's new time is the one recorded") {
    SearchResult r = searched();
    CHECK(keep_default_unless_faster(r, def, {11.0, 0.0}).empty());
    CHECK(*r.best == fast);
    CHECK(*r.runner_up == def);
    CHECK(r.runner_up_time.median_us == 11.0);
  }
  SECTION("the default was the search's best: it wins with its new time") {
    SearchResult r = searched();
    r.times[def] = {8.0, 0.0};
    r.best = def;
    CHECK(keep_default_unless_faster(r, def, {9.5, 0.0}).empty());
    // 9.5 us now: the candidate timed at 9.0 us is faster, and wins.
    CHECK(*r.best == fast);
    CHECK(r.runner_up_time.median_us == 9.5);
  }
  SECTION("nothing but the default was timed") {
    SearchResult r;
    CHECK(keep_default_unless_faster(r, def, {7.0, 0.0}).empty());
    CHECK(*r.best == def);
    CHECK_FALSE(r.runner_up);
  }
}

TEST_CASE("nothing usable gives no winner", "[autotune]") {
  SearchResult r = search(grid(), kParams,
                          [](const Config&) {
                            return Trial{std::nullopt, "spills"};
                          },
                          {});
  CHECK_FALSE(r.best);
  CHECK(r.rejected.size() == 9);
}

TEST_CASE("a pruned candidate never wins, is no runner-up, and is listed", "[autotune]") {
  // block=512 looks fastest in the few repetitions it got before it was pruned (a pruned
  // median says little): it must not win nor be the runner-up.
  SearchResult r = search({{{"block", 128}}, {{"block", 256}}, {{"block", 512}}}, {},
                          [](const Config& c) {
                            Measurement m{c.at("block") == 128 ? 10.0 : 12.0, 0.0};
                            if (c.at("block") != 512) return Trial{m, ""};
                            m.median_us = 1.0;
                            m.pruned = true;
                            return Trial{m, "", "pruned after 5 repetitions"};
                          },
                          {});
  REQUIRE(r.best);
  CHECK(r.best->at("block") == 128);
  REQUIRE(r.runner_up);
  CHECK(r.runner_up->at("block") == 256);
  CHECK(r.pruned == std::vector<std::string>{"block=512: pruned after 5 repetitions"});
  CHECK(r.timed == 3);
  CHECK_THAT(r.how, Catch::EndsWith("3 timed, 0 rejected, 1 pruned"));
}

TEST_CASE("pruning stops a candidate only when its fastest of 5 runs is 1.5x the best",
          "[autotune]") {
  const std::vector<double> slow{16.0, 15.5, 17.0, 15.1, 16.2}, noisy{16.0, 14.9, 40.0, 30, 31};
  CHECK(KernelHarness::clearly_slower(slow, 10.0));         // even its fastest, 15.1 > 15
  CHECK_FALSE(KernelHarness::clearly_slower(noisy, 10.0));  // one run at 14.9: not clearly
  CHECK_FALSE(KernelHarness::clearly_slower(slow, 0.0));    // nothing timed yet
  CHECK_FALSE(KernelHarness::clearly_slower(std::vector<double>(slow.begin(), slow.end() - 1),
                                            10.0));        // only after 5 repetitions
  CHECK_FALSE(KernelHarness::clearly_slower(slow, 10.1));  // 15.1 < 15.15
}

TEST_CASE("the progress bar estimates the time left and fits a terminal", "[autotune]") {
  CHECK(progress_line(0, 4, 0.0, 0.2, "add N=5 step 0: block=128 (1/9+)") ==
        "[....................] 0/4 -- left  add N=5 step 0: block=128 (1/9+)");
  // A quarter done in 30 s: 90 s left.
  CHECK(progress_line(1, 4, 0.0, 30, "x") == "[#####...............] 1/4 1m30s left  x");
  CHECK(progress_line(3, 4, 0.5, 35, "x") == "[#################...] 3/4 5s left  x");
  CHECK(progress_line(2, 3, 0.0, 10, std::string(300, 'y')).size() == 99);
}

TEST_CASE("the descent announces every configuration before it times it", "[autotune]") {
  std::map<Config, int> calls;
  std::set<Config> announced, grid_set;
  for (const Config& c : grid()) grid_set.insert(c);
  std::vector<Config> order;
  auto base = bowl(1024, 16, &calls);
  SearchOptions o;
  o.upcoming = [&](const std::vector<Config>& next) {
    for (const Config& c : next) {
      CHECK(calls.count(c) == 0);  // never one already timed
      announced.insert(c);
    }
  };
  SearchResult r = search(
      grid(), kParams,
      [&](const Config& c) {
        if (!grid_set.count(c)) {
          INFO(config_text(c));
          CHECK(announced.count(c) == 1);  // announced before it is timed
        }
        return base(c);
      },
      o);
  CHECK(r.descent_moves == 3);
  CHECK(announced.size() >= 3);
}
