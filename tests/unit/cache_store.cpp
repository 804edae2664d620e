// Unit tests of the autotune cache's files: load, store's locked merge and atomic write,
// refusal to overwrite corrupt, foreign, read-only or unreachable files (as an unprivileged
// child process when the tests run as root), a full disk (a file size limit in a child
// process), and several processes storing into one file at once.
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>

#include "tests/unit/cache_fixtures.h"

namespace {

using namespace kiln::cache;
using namespace kiln::cache::testing;
namespace fs = std::filesystem;

// Files in `dir` other than the cache and its lock: a leftover temporary would show here.
std::vector<std::string> strays(const TempDir& dir) {
  std::vector<std::string> out;
  for (const auto& f : fs::directory_iterator(dir.path())) {
    std::string name = f.path().filename().string();
    if (name != "cache.json" && name != "cache.json.lock") out.push_back(name);
  }
  return out;
}

// Runs `body` in a child process and returns the text it returns. As root (where file modes
// do not apply) the child first becomes nobody (uid and gid 65534), so that a read-only file
// or directory stops it the way it stops a user.
std::string as_unprivileged(const std::function<std::string()>& body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out = "cannot drop root privileges";
    if (::geteuid() != 0 ||
        (::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0)) {
      out = body();
    }
    ssize_t n = ::write(fds[1], out.data(), out.size());
    ::_exit(n == static_cast<ssize_t>(out.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  return out;
}

// Runs `body` in a child process and returns its exit status (-1 if it did not exit).
int in_child(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("a missing cache file loads as empty, a directory does not", "[cache]") {
  TempDir dir;
  kiln::Result<Cache> c = load(dir.file("cache.json"));
  REQUIRE(c.ok());
  CHECK(c->entries.empty());
  CHECK(load(dir.path()).message() == dir.path() + ": is a directory");
}

TEST_CASE("store creates, merges and replaces entries", "[cache]") {
  TempDir dir;
  std::string path = dir.file("cache.json");
  Entry a = sample_entry(sample_key("a"));
  Entry b = sample_entry(sample_key("b"));
  REQUIRE(store(path, {a}).ok());
  kiln::Result<Cache> written = store(path, {b});
  REQUIRE(written.ok());
  CHECK(written->entries == std::vector<Entry>{a, b});
  CHECK(load(path).value() == *written);

  Entry a2 = sample_entry(sample_key("a"), "2025-06-02T00:00:00Z");
  a2.winner.median_us = 9;
  Entry stale = sample_entry(sample_key("b"), "2025-05-01T00:00:00Z");
  REQUIRE(store(path, {a2, stale}).ok());
  CHECK(load(path).value().entries == std::vector<Entry>{a2, b});  // the older b lost
  CHECK((fs::status(path).permissions() & fs::perms::all) != fs::perms::none);
  CHECK(strays(dir).empty());
}

TEST_CASE("store refuses entries it could not read back", "[cache]") {
  TempDir dir;
  std::string path = dir.file("cache.json");
  Entry bad = sample_entry(sample_key(), "yesterday");
  kiln::Result<Cache> r = store(path, {bad});
  CHECK(r.message() == path +
                           ": not written: entries[0].tuned_at: expected UTC time like "
                           "\"2025-06-01T12:34:56Z\", got \"yesterday\"");
  CHECK(!fs::exists(path));
}

TEST_CASE("corrupt and foreign cache files are reported and never overwritten", "[cache]") {
  TempDir dir;
  std::string path = dir.file("cache.json");
  Cache one;
  one.entries = {sample_entry()};
  std::string good = to_json(one);
  std::string v2 = good;
  v2.replace(v2.find("\"version\": 1"), 12, "\"version\": 2");
  std::string foreign = good;
  foreign.replace(foreign.find("kiln-autotune-cache"), 19, "kiln-bundle");
  std::string wrong_type = good;
  wrong_type.replace(wrong_type.find("\"median_us\": 10.5"), 17, "\"median_us\": \"10\"");

  struct Case {
    const char* name;
    std::string text, message;
  };
  std::vector<Case> cases = {
      {"not JSON", "garbage\n", path + ": invalid JSON: "},
      {"truncated", good.substr(0, good.size() / 2), path + ": invalid JSON: "},
      {"empty", "", path + ": invalid JSON: "},
      {"wrong types", wrong_type, path + ": entries[0].winner.median_us: expected a number >= 0"},
      {"foreign format", foreign,
       path + ": format: expected \"kiln-autotune-cache\", got \"kiln-bundle\""},
      {"version 2", v2, path + ": schema version 2 is not supported by this kiln (1)"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      write_text(path, c.text);
      CHECK(load(path).message().rfind(c.message, 0) == 0);
      kiln::Result<Cache> r = store(path, {sample_entry(sample_key("new"))});
      REQUIRE(!r.ok());
      CHECK(r.message().rfind(c.message, 0) == 0);
      CHECK(read_text(path) == c.text);  // byte-identical
      CHECK(!save(path, Cache{}).ok());
      CHECK(read_text(path) == c.text);
      CHECK(strays(dir).empty());
    }
  }
}

TEST_CASE("read-only and unreachable cache files are errors", "[cache]") {
  TempDir dir;
  std::string path = dir.file("cache.json");
  REQUIRE(store(path, {sample_entry()}).ok());
  std::string before = read_text(path);

  // Always checkable, even as root: a directory that does not exist.
  std::string nowhere = dir.file("missing/cache.json");
  CHECK(store(nowhere, {sample_entry()}).message() ==
        nowhere + ".lock: cannot create lock file: No such file or directory");

  // The stores below run in a child process, as nobody when the tests run as root.
  const fs::perms read_exec = fs::perms::owner_read | fs::perms::owner_exec |
                              fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(dir.path(), read_exec | fs::perms::owner_write);
  auto store_x = [&] {
    return as_unprivileged([&] { return store(path, {sample_entry(sample_key("x"))}).message(); });
  };
  SECTION("read-only file") {
    fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    CHECK(store_x() == path + ": not written: Permission denied");
    CHECK(read_text(path) == before);
  }
  SECTION("read-only directory") {
    fs::remove(path + ".lock");
    fs::permissions(dir.path(), read_exec);
    CHECK(store_x() == path + ".lock: cannot create lock file: Permission denied");
    CHECK(read_text(path) == before);
  }
  SECTION("read-only directory with a lock file already there") {
    fs::permissions(path, fs::perms::all);  // the file may be written, its directory not
    fs::permissions(dir.path(), read_exec);
    std::string message = store_x();
    CHECK(message.rfind(path + ".tmp.", 0) == 0);
    CHECK(message.find("cannot create (" + path + " not written): Permission denied") !=
          std::string::npos);
    CHECK(read_text(path) == before);
  }
  fs::permissions(dir.path(), fs::perms::owner_all);
  CHECK(strays(dir).empty());
}

TEST_CASE("a full disk leaves the old cache file intact", "[cache]") {
  TempDir dir;
  std::string path = dir.file("cache.json");
  REQUIRE(store(path, {sample_entry()}).ok());
  std::string before = read_text(path);
  std::vector<Entry> many;
  for (int i = 0; i < 50; ++i) many.push_back(sample_entry(sample_key(fmt::format("k{}", i))));
  // A file size limit makes write() fail with EFBIG the way a full disk fails with ENOSPC.
  int rc = in_child([&] {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{before.size() + 100, before.size() + 100};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 3;
    kiln::Result<Cache> r = store(path, many);
    if (r.ok()) return 1;
    bool named = r.message().rfind(path + ".tmp.", 0) == 0 &&
                 r.message().find("cannot write (" + path + " unchanged)") != std::string::npos;
    return named ? 0 : 2;
  });
  CHECK(rc == 0);
  CHECK(read_text(path) == before);
  CHECK(strays(dir).empty());
}

TEST_CASE("concurrent writers lose nothing", "[cache]") {
  TempDir dir;
  std::string path = dir.file("cache.json");
  constexpr int kWriters = 8, kEach = 25;
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int rc = 0;
      for (int i = 0; i < kEach && rc == 0; ++i) {
        Entry e = sample_entry(sample_key("writer" + std::to_string(w), i + 1));
        if (!store(path, {e}).ok()) rc = 1;
      }
      ::_exit(rc);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  kiln::Result<Cache> c = load(path);
  REQUIRE(c.ok());
  CHECK(c->entries.size() == kWriters * kEach);
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < kEach; ++i) {
      CHECK(find(*c, sample_key("writer" + std::to_string(w), i + 1)) != nullptr);
    }
  }
  CHECK(strays(dir).empty());
}

TEST_CASE("store through a symlink updates its target", "[cache]") {
  TempDir dir;
  std::string target = dir.file("cache.json");
  std::string link = dir.file("link.json");
  fs::create_symlink(target, link);
  REQUIRE(store(link, {sample_entry()}).ok());
  CHECK(fs::is_symlink(link));
  CHECK(load(target).value().entries.size() == 1);
}
