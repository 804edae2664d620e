// The `kiln` command line as a user drives it: the real binary (KILN_BINARY), run as a child
// process with its stdout and stderr captured. Two kinds of test:
//  - what a user sees for each bad input of issue 17 (message and exit code);
//  - a property test over every verb: command lines built from valid ones by mutating,
//    dropping, duplicating and inserting tokens (a fixed seed, a few hundred runs, about 10 s).
//    Whatever the arguments, kiln never dies of a signal and exits 0, 1 or 77 (3 is an
//    internal error: a bug); an exit of 1 comes with a one-line reason (or a spec
//    diagnostic: "FILE:LINE:COL: error: ...", the line, a caret); the valid command lines exit
//    0 (77 for `run` and `tune`: the children get KILN_CUDA_DRIVER naming no library, so
//    there is no driver even on a GPU machine), and the mutations that make a command line
//    invalid (an unknown verb or option, a bad --shape, a missing file) never exit 0.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <random>

#include "bundle/manifest.h"
#include "tests/unit/cache_fixtures.h"

namespace kiln {
namespace {

using cache::testing::read_text;
using cache::testing::TempDir;
using cache::testing::write_text;

struct Outcome {
  int code = -1;    // exit code, or -1 when killed by a signal
  int signal = 0;   // the signal that killed it
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs kiln with `args` in directory `dir` (relative paths a command line names land there).
Outcome run_kiln(const std::vector<std::string>& args, const std::string& dir) {
  std::vector<std::string> argv{KILN_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  static TempDir capture;  // apart from `dir`, which the command lines may write to
  const std::string out = capture.file("stdout"), err = capture.file("stderr");
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int in = ::open("/dev/null", O_RDONLY);
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || o < 0 || e < 0 || ::chdir(dir.c_str()) != 0) ::_exit(126);
    // No driver, on a GPU machine too: run and tune answer 77 instead of launching.
    ::setenv("KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    ::dup2(in, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execv(KILN_BINARY, cargv.data());
    ::_exit(127);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  Outcome r;
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

size_t lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')) +
         (!s.empty() && s.back() != '\n');
}

// A temporary directory with the files the command lines name.
struct Files {
  TempDir dir;
  std::string spec, empty, bad_spec, w_spec, cache, bundle, missing;
  Files() {
    spec = dir.file("add.kiln");
    write_text(spec,
               "kernel add(x: f32[N], y: f32[N]) -> (z: f32[N]) {\n  z[i] = x[i] + y[i]\n}\n");
    empty = dir.file("empty.kiln");
    write_text(empty, "# nothing here\n");
    bad_spec = dir.file("bad.kiln");
    write_text(bad_spec, "kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i] +\n}\n");
    w_spec = dir.file("w.kiln");
    write_text(w_spec,
               "kernel k(t: f32[B, C, H], w: f32[W]) -> (y: f32[B, C], v: f32[W]) {\n"
               "  y[b, c] = sum(t[b, c, h], h) / W\n  v[i] = w[i]\n}\n");
    cache = dir.file("two.json");
    write_text(cache, read_text(std::string(KILN_SOURCE_DIR) +
                                "/tests/golden/diagnostics/Inputs/two_gpus.cache.json"));
    missing = dir.file("missing.kiln");
    bundle = dir.file("add.bundle");
  }
  // A bundle of add, for run, tune and cache prune (compiled once: a few seconds).
  void make_bundle() {
    if (std::filesystem::exists(bundle + "/manifest.json")) return;
    Outcome o =
        run_kiln({"compile", spec, "-o", bundle, "--default-only", "--arch", "sm_90"}, dir.path());
    REQUIRE(o.code == 0);
  }
};

void check_error(const Outcome& o, int code) {
  INFO("stderr: " << o.err);
  CHECK(o.signal == 0);
  CHECK(o.code == code);
  CHECK(lines(o.err) == 1);
}

TEST_CASE("kiln compile refuses a spec without kernels and a directory", "[cli]") {
  Files f;
  Outcome o = run_kiln({"compile", f.empty, "-o", f.bundle}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("empty.kiln: error: no kernels in this file"));
  CHECK(!std::filesystem::exists(f.bundle));
  o = run_kiln({"compile", f.dir.path(), "-o", f.bundle}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err,
             Catch::Contains("cannot read spec file '" + f.dir.path() + "': Is a directory"));
  o = run_kiln({"compile", f.missing, "-o", f.bundle}, f.dir.path());
  CHECK_THAT(o.err, Catch::Contains("missing.kiln': No such file or directory"));
  o = run_kiln({"explain", f.empty}, f.dir.path());
  check_error(o, 1);
  o = run_kiln({"compile", "/dev/zero", "--emit=ir"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("cannot read spec file '/dev/zero': larger than 64 MiB"));
}

TEST_CASE("kiln compile refuses archs it cannot target, with the list", "[cli]") {
  Files f;
  for (const char* arch : {"sm_100", "sm_75", "sm_90,sm_100", "sm_120a"}) {
    Outcome o = run_kiln({"compile", f.spec, "-o", f.bundle, "--arch", arch}, f.dir.path());
    check_error(o, 1);
    CHECK_THAT(o.err, Catch::Contains("unsupported architecture") &&
                          Catch::Contains("sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a"));
    CHECK_THAT(o.err, !Catch::Contains("not a recognized processor"));
    CHECK(!std::filesystem::exists(f.bundle));
  }
  Outcome o = run_kiln({"compile", f.spec, "--emit=ptx", "--arch", "sm_100"}, f.dir.path());
  check_error(o, 1);
  o = run_kiln({"compile", f.spec, "--emit=ptx", "--arch", "sm_90,sm_90"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("architecture 'sm_90' is given twice"));
}

TEST_CASE("kiln explain --shape names the symbol that is missing, unknown or not positive",
          "[cli]") {
  Files f;
  auto explain = [&](const std::string& shape) {
    return run_kiln({"explain", f.spec, "--shape", shape}, f.dir.path());
  };
  Outcome o = explain("n=4096");
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("kernel add has no symbol 'n' (its symbols: N); did you "
                                    "mean N?"));
  o = explain("N=4096,Q=3");
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("has no symbol 'Q'") && !Catch::Contains("did you mean"));
  o = explain("N=-5");
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("--shape: N must be > 0, got -5"));
  o = explain("N=0");
  check_error(o, 1);
  o = explain("N=3,N=4");
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("--shape: N is given twice"));
  o = run_kiln({"explain", f.w_spec, "--shape", "B=4,C=8"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err,
             Catch::Contains("kernel k needs a value for H and W (its symbols: B, C, H, W)"));
  o = explain("N=4096");
  CHECK(o.code == 0);
  o = run_kiln({"explain", f.spec, "--kernel", "ad"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("has no kernel 'ad' (it has: add); did you mean add?"));
}

TEST_CASE("kiln run and kiln tune check --shape against the bundle before the GPU", "[cli]") {
  Files f;
  f.make_bundle();
  Outcome o = run_kiln({"run", f.bundle, "add", "--shape", "M=3"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("kiln run: --shape: kernel add has no symbol 'M'"));
  o = run_kiln({"run", f.bundle, "add"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("kiln run: --shape: kernel add needs a value for N"));
  o = run_kiln({"run", f.bundle, "addd", "--shape", "N=3"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("has no kernel 'addd' (it has: add); did you mean add?"));
  o = run_kiln({"tune", f.bundle, "--shape", "N=0", "-c", f.cache}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("--shape: N must be > 0, got 0"));
  o = run_kiln({"tune", f.bundle, "--shape", "Q=4", "-c", f.cache}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("kernel add has no symbol 'Q'"));
}

TEST_CASE("kiln run and kiln tune read their cache files before the GPU", "[cli]") {
  Files f;
  f.make_bundle();
  write_text(f.dir.file("garbage.json"), "not json");
  Outcome o = run_kiln({"tune", f.bundle, "--shape", "N=64", "-c", f.dir.file("garbage.json")},
                       f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err,
             Catch::Contains("kiln tune: ") && Catch::Contains("garbage.json: invalid JSON"));
  CHECK(read_text(f.dir.file("garbage.json")) == "not json");
  o = run_kiln({"run", f.bundle, "add", "--shape", "N=64", "-c", f.dir.file("nope.json")},
               f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err,
             Catch::Contains("kiln run: -c: ") && Catch::Contains("nope.json: no such cache file"));
}

TEST_CASE("kiln compile --emit=ptx with several --arch is refused", "[cli]") {
  Files f;
  Outcome o = run_kiln({"compile", f.spec, "--emit=ptx", "--arch", "sm_80,sm_90"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("--emit=ptx prints the PTX of one architecture; give one "
                                    "--arch (got sm_80, sm_90)"));
  o = run_kiln({"compile", f.spec, "--emit=ptx", "--arch", "sm_90"}, f.dir.path());
  CHECK(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains(".target sm_90"));
}

TEST_CASE("kiln tune and kiln run without a CUDA driver exit 77", "[cli]") {
  Files f;
  f.make_bundle();
  Outcome o =
      run_kiln({"tune", f.bundle, "--shape", "N=4096", "-c", f.dir.file("c.json")}, f.dir.path());
  INFO(o.err);
  CHECK(o.code == 77);
  CHECK_THAT(o.err, Catch::Contains("kiln tune: skipped, needs a GPU"));
  CHECK(!std::filesystem::exists(f.dir.file("c.json")));
  o = run_kiln({"run", f.bundle, "add", "--shape", "N=4096"}, f.dir.path());
  CHECK(o.code == 77);
}

TEST_CASE("misspelled verbs and options get a suggestion", "[cli]") {
  Files f;
  Outcome o = run_kiln({"compile", f.spec, "--emt=ptx"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("kiln compile: unknown option '--emt=ptx'; did you mean "
                                    "--emit?"));
  o = run_kiln({"compiel", f.spec}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("kiln: unknown command 'compiel'") &&
                        Catch::Contains("did you mean compile?"));
  o = run_kiln({"cache", "prnue", f.cache, "--gpu", "x"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("kiln cache: unknown command 'prnue'") &&
                        Catch::Contains("did you mean prune?"));
  o = run_kiln({"explain", f.spec, "--shap", "N=3"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("did you mean --shape?"));
  o = run_kiln({"cache", "prune", f.cache, "--gpus", "NVIDIA H200"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("kiln cache prune: unknown option '--gpus'; did you mean "
                                    "--gpu?"));
  o = run_kiln({"run", "b", "k", "--sede", "3"}, f.dir.path());
  CHECK_THAT(o.err, Catch::Contains("did you mean --seed?"));
  o = run_kiln({}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("kiln: a command is required"));
}

TEST_CASE("kiln cache prune --gpu naming no GPU of the file is refused and writes nothing",
          "[cli]") {
  Files f;
  const std::string before = read_text(f.cache);
  Outcome o = run_kiln({"cache", "prune", f.cache, "--gpu", "NVIDIA H100"}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("--gpu \"NVIDIA H100\" matches no entry of") &&
                        Catch::Contains("(its GPUs: \"NVIDIA A100-SXM4-80GB\", \"NVIDIA H200\"); "
                                        "nothing written"));
  CHECK(read_text(f.cache) == before);
  // Also with -o, and with one good name among them.
  o = run_kiln({"cache", "prune", f.cache, "--gpu", "NVIDIA H200", "--gpu", "H200", "-o",
                f.dir.file("out.json")},
               f.dir.path());
  check_error(o, 1);
  CHECK(!std::filesystem::exists(f.dir.file("out.json")));
  CHECK(read_text(f.cache) == before);
  // A bundle without kernels would drop everything: refused too.
  std::filesystem::create_directory(f.dir.file("nokernels"));
  write_text(
      f.dir.file("nokernels/manifest.json"),
      R"({"format": "kiln-bundle", "version": 4, "kiln_version": "x", "llvm_version": "19", "kernels": []})");
  o = run_kiln({"cache", "prune", f.cache, "--bundle", f.dir.file("nokernels")}, f.dir.path());
  INFO(o.err);
  CHECK(o.code == 1);
  CHECK(read_text(f.cache) == before);
  o = run_kiln({"cache", "prune", f.cache, "--gpu", "NVIDIA H200"}, f.dir.path());
  CHECK(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("dropped 1 of 2 entries, 1 left"));
}

TEST_CASE("kiln cache diff exits like diff: 0 equal, 1 different, 2 on errors", "[cli]") {
  Files f;
  Outcome o = run_kiln({"cache", "diff", f.cache, f.cache}, f.dir.path());
  CHECK(o.code == 0);
  CHECK(o.out == "no differences\n");
  o = run_kiln({"cache", "prune", f.cache, "--gpu", "NVIDIA H200", "-o", f.dir.file("one.json")},
               f.dir.path());
  REQUIRE(o.code == 0);
  o = run_kiln({"cache", "diff", f.cache, f.dir.file("one.json")}, f.dir.path());
  INFO(o.err);
  CHECK(o.code == 1);
  CHECK(o.err.empty());
  CHECK_THAT(o.out, Catch::StartsWith("- add step 0 N=1000003 on NVIDIA A100-SXM4-80GB"));
  o = run_kiln({"cache", "diff", f.cache, f.dir.file("nope.json")}, f.dir.path());
  check_error(o, 2);
  CHECK_THAT(o.err, Catch::Contains("nope.json: no such cache file"));
}

TEST_CASE("kiln cache merge joins any number of shard caches", "[cli][shard]") {
  Files f;
  Outcome o =
      run_kiln({"cache", "prune", f.cache, "--gpu", "NVIDIA H200", "-o", f.dir.file("h.json")},
               f.dir.path());
  REQUIRE(o.code == 0);
  o = run_kiln(
      {"cache", "prune", f.cache, "--gpu", "NVIDIA A100-SXM4-80GB", "-o", f.dir.file("a.json")},
      f.dir.path());
  REQUIRE(o.code == 0);
  o = run_kiln({"cache", "merge", f.dir.file("h.json"), f.dir.file("a.json"), f.dir.file("h.json"),
                "-o", f.dir.file("all.json")},
               f.dir.path());
  INFO(o.err);
  CHECK(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains(": 2 entries (1 from ") && Catch::Contains("h.json, 1 from "));
  o = run_kiln({"cache", "diff", f.cache, f.dir.file("all.json")}, f.dir.path());
  CHECK(o.code == 0);  // the two GPUs' entries, split and merged back
  o = run_kiln({"cache", "merge", f.cache, "-o", f.dir.file("one.json")}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("cache merge: give two or more cache files to merge"));
}

TEST_CASE("kiln tune --shapes-from reads the recorded shapes before the GPU", "[cli][shapes]") {
  Files f;
  f.make_bundle();
  Result<bundle::Manifest> m = bundle::read_manifest(f.bundle);
  REQUIRE(m.ok());
  const std::string hash = m->kernels.at(0).hash;
  const std::string rec = f.dir.file("shapes.jsonl");
  auto line = [&](const std::string& kernel, const std::string& h, int64_t n) {
    return fmt::format("{{\"kernel\":\"{}\",\"hash\":\"{}\",\"shape\":{{\"N\":{}}}}}\n", kernel, h,
                       n);
  };
  // A malformed line: an error naming FILE:LINE, before the GPU (no 77).
  write_text(rec, line("add", hash, 5) + line("add", hash, 6) + "{\"kernel\":\"add\"\n");
  Outcome o =
      run_kiln({"tune", f.bundle, "--shapes-from", rec, "-c", f.dir.file("c.json")}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::StartsWith("kiln tune: " + rec + ":3: invalid JSON"));
  // Good lines, repeated by three processes, and lines the bundle cannot tune: reported and
  // skipped, the rest deduplicated; without a driver it then skips (77).
  std::string text;
  for (int p = 0; p < 3; ++p) text += line("add", hash, 5) + line("add", hash, 4096);
  text += line("gone", hash, 5) + line("add", "fnv1a:ffffffffffffffff", 5);
  write_text(rec, text);
  o = run_kiln({"tune", f.bundle, "--shapes-from", rec, "-c", f.dir.file("c.json")}, f.dir.path());
  INFO(o.out << o.err);
  CHECK(o.code == 77);
  CHECK_THAT(o.out, Catch::Contains(rec + ": 8 lines, 2 distinct (kernel, shape) pairs to tune"));
  CHECK_THAT(o.out,
             Catch::Contains(rec + ":7: skipped: kernel gone is not in the bundle (1 line)"));
  CHECK_THAT(o.out, Catch::Contains(rec + ":8: skipped: kernel add was recorded with hash "
                                          "fnv1a:ffffffffffffffff"));
  // Several bundles in one tune: each line goes to the first with its kernel and hash.
  o = run_kiln({"tune", f.bundle, f.bundle, "--shapes-from", rec, "-c", f.dir.file("c.json")},
               f.dir.path());
  CHECK(o.code == 77);
  CHECK_THAT(o.out, Catch::Contains(rec + ": 8 lines, 2 distinct (kernel, shape) pairs to tune"));
  CHECK_THAT(o.out,
             Catch::Contains(rec + ":7: skipped: kernel gone is not in the bundles (1 line)"));
  o = run_kiln({"tune", f.bundle, f.bundle, "--kernel", "nope", "--shape", "N=4", "-c",
                f.dir.file("c.json")},
               f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("kiln tune: none of the 2 bundles has a kernel 'nope'"));
  // A shard: 1/2 of the 2 pairs is one.
  o = run_kiln(
      {"tune", f.bundle, "--shapes-from", rec, "--shard", "1/2", "-c", f.dir.file("c.json")},
      f.dir.path());
  CHECK(o.code == 77);
  CHECK_THAT(o.out, Catch::Contains("shard 1/2: 1 of 2 (kernel, shape) pairs"));
  o = run_kiln(
      {"tune", f.bundle, "--shapes-from", rec, "--shard", "2/2", "-c", f.dir.file("c.json")},
      f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("--shard 2/2: expected I/N with 0 <= I < N"));
  o = run_kiln(
      {"tune", f.bundle, "--shapes-from", f.dir.file("none.jsonl"), "-c", f.dir.file("c.json")},
      f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("none.jsonl: cannot open the recorded shapes"));
  o = run_kiln({"tune", f.bundle, "-c", f.dir.file("c.json")}, f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("kiln tune: give --shape M=..,N=.. or --shapes-from FILE"));
}

TEST_CASE("kiln compile --emit -o: errno reasons, and the file is replaced atomically", "[cli]") {
  Files f;
  const std::string out = f.dir.file("ir.txt");
  write_text(out, "old");
  Outcome o = run_kiln({"compile", f.spec, "--emit=ir", "-o", out}, f.dir.path());
  CHECK(o.code == 0);
  CHECK_THAT(read_text(out), Catch::StartsWith("kernel add("));
  for (const auto& entry : std::filesystem::directory_iterator(f.dir.path())) {
    CHECK_THAT(entry.path().string(), !Catch::Contains(".tmp."));
  }
  o = run_kiln({"compile", f.spec, "--emit=ir", "-o", f.dir.file("no/such/dir/ir.txt")},
               f.dir.path());
  check_error(o, 1);
  CHECK_THAT(o.err, Catch::Contains("kiln compile: ") &&
                        Catch::Contains("ir.txt not written): No such file or directory"));
}

TEST_CASE("the scheduler keeps a symbol that only a parameter it does not read declares", "[cli]") {
  Files f;
  f.make_bundle();  // unused; keeps the files' lifetime simple
  Outcome o = run_kiln(
      {"compile", f.w_spec, "-o", f.dir.file("w.bundle"), "--default-only", "--arch", "sm_90"},
      f.dir.path());
  INFO(o.err);
  CHECK(o.code == 0);
}

// ---- the property test -------------------------------------------------------------------

TEST_CASE("kiln never crashes and explains every refusal in one line, whatever the arguments",
          "[cli][property]") {
  Files f;
  f.make_bundle();
  const std::string out = f.dir.file("out.txt");
  // Valid command lines (exit 0, or 77 for the GPU verbs) to start from.
  const std::vector<std::pair<std::vector<std::string>, int>> valid{
      {{"compile", f.spec, "--emit=ir"}, 0},
      {{"compile", f.spec, "--emit", "schedule", "-o", out}, 0},
      {{"compile", f.spec, "--emit=header"}, 0},
      {{"compile", f.w_spec, "--emit=schedule"}, 0},
      {{"explain", f.spec}, 0},
      {{"explain", f.spec, "--shape", "N=4096"}, 0},
      {{"explain", f.w_spec, "--shape", "B=2,C=3", "--shape", "H=5,W=7", "--kernel", "k"}, 0},
      {{"cache", "show", f.cache}, 0},
      {{"cache", "show", f.cache, "--json"}, 0},
      {{"cache", "diff", f.cache, f.cache}, 0},
      {{"cache", "merge", f.cache, f.cache, "-o", f.dir.file("merged.json")}, 0},
      {{"cache", "prune", f.cache, "--gpu", "NVIDIA H200", "-o", f.dir.file("pruned.json")}, 0},
      {{"run", f.bundle, "add", "--shape", "N=1000", "--reps", "3"}, 77},
      {{"tune", f.bundle, "--shape", "N=1000", "-c", f.dir.file("t.json")}, 77},
      {{"--version"}, 0},
      {{"compile", "--help"}, 0},
  };
  // Tokens a mutation may put in; those in `bad` make any command line they replace an option
  // or a value with invalid.
  const std::vector<std::string> noise{"--emit",
                                       "--emit=ptx",
                                       "--arch",
                                       "sm_90",
                                       "sm_100",
                                       "--shape",
                                       "N=5",
                                       "N=",
                                       "=5",
                                       "N=5,,M=3",
                                       "N=99999999999999999999",
                                       "-o",
                                       out,
                                       "--json",
                                       "--gpu",
                                       "NVIDIA H200",
                                       "--bundle",
                                       f.bundle,
                                       f.spec,
                                       f.empty,
                                       f.bad_spec,
                                       f.missing,
                                       f.dir.path(),
                                       f.cache,
                                       "-j",
                                       "0",
                                       "-j300",
                                       "--kernel",
                                       "add",
                                       "--",
                                       "-",
                                       "",
                                       "\xff\xfe",
                                       "--variant",
                                       "all",
                                       "7",
                                       "--seed",
                                       "-1",
                                       "--reps",
                                       "0",
                                       "--rtol",
                                       "2.5",
                                       "-c",
                                       "-q",
                                       "--force",
                                       "compile",
                                       "cache",
                                       "show"};
  const std::vector<std::string> bad{"--emt",   "-x",    "--shape=N=-3", "--shape=n=3",
                                     "--archh", "--zzz", "frobnicate",   f.missing};
  std::mt19937 rng(17);
  auto pick = [&](const std::vector<std::string>& v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  int runs = 0;
  for (const auto& [args, code] : valid) {
    Outcome o = run_kiln(args, f.dir.path());
    INFO(fmt::format("kiln {}\nstderr: {}", fmt::join(args, " "), o.err));
    CHECK(o.code == code);
    ++runs;
  }
  for (int round = 0; round < 40; ++round) {
    for (const auto& [args, code] : valid) {
      std::vector<std::string> a = args;
      bool must_fail = false;
      int edits = std::uniform_int_distribution<int>(1, 3)(rng);
      for (int e = 0; e < edits; ++e) {
        size_t at = std::uniform_int_distribution<size_t>(0, a.size())(rng);
        switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
          case 0:  // insert a token
            a.insert(a.begin() + static_cast<long>(at), pick(noise));
            break;
          case 1:  // drop one
            if (at < a.size()) a.erase(a.begin() + static_cast<long>(at));
            break;
          case 2:  // replace one
            if (at < a.size()) a[at] = pick(noise);
            break;
          case 3:  // duplicate one
            if (at < a.size()) a.insert(a.begin() + static_cast<long>(at), a[at]);
            break;
        }
      }
      // Last, in a third of the runs: a token that makes it invalid, after the verb.
      if (round % 3 == 0) {
        size_t at = std::uniform_int_distribution<size_t>(1, std::max<size_t>(a.size(), 1))(rng);
        a.insert(a.begin() + static_cast<long>(std::min(at, a.size())), pick(bad));
        must_fail = true;
      }
      if (must_fail && std::find(a.begin(), a.end(), "--") != a.end()) must_fail = false;
      if (must_fail && (std::find(a.begin(), a.end(), "--help") != a.end() ||
                        std::find(a.begin(), a.end(), "--version") != a.end())) {
        must_fail = false;
      }
      Outcome o = run_kiln(a, f.dir.path());
      ++runs;
      INFO(fmt::format("kiln {}\nexit {} signal {}\nstderr: {}", fmt::join(a, " "), o.code,
                       o.signal, o.err));
      REQUIRE(o.signal == 0);
      CHECK((o.code == 0 || o.code == 1 || o.code == 2 || o.code == 77));
      // `cache diff` exits 1, saying nothing on stderr, when the caches differ (2: errors).
      const bool differ =
          o.code == 1 && o.err.empty() && std::find(a.begin(), a.end(), "diff") != a.end();
      if ((o.code == 1 && !differ) || o.code == 2) {
        REQUIRE(!o.err.empty());
        bool diagnostic = o.err.find(": error: ") != std::string::npos;
        CHECK((lines(o.err) == 1 || diagnostic));
        CHECK_THAT(o.err, Catch::StartsWith("kiln") || Catch::Contains(": error: "));
      }
      if (must_fail) CHECK(o.code != 0);
    }
  }
  CHECK(runs > 600);
}

}  // namespace
}  // namespace kiln
