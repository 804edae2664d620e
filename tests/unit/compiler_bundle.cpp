// Unit tests of the bundle writer (compiler/compile.h): write_bundle records a content hash of
// every image that the runtime's image reader accepts, and add_variant, which `kiln tune` uses,
// lets several processes and threads add variants to one bundle at once without losing one
// or giving two configs one id. No GPU needed; add_variant assembles cubins with nvJitLink.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <thread>
#include <vector>

#include "bundle/image.h"
#include "bundle/manifest.h"
#include "compiler/compile.h"
#include "ir/text.h"
#include "tests/unit/cache_fixtures.h"

using namespace kiln;
using kiln::cache::testing::TempDir;

namespace {

const char* kAdd = "kernel add(x: f32[N], y: f32[N]) -> (z: f32[N]) { z[i] = x[i] + y[i] }";

// Every image of every variant of `dir` passes read_image; returns the first failure.
std::string check_images(const std::string& dir, const bundle::Manifest& m) {
  for (const bundle::KernelInfo& k : m.kernels) {
    for (const bundle::Step& s : k.steps) {
      for (const bundle::Variant& v : s.variants) {
        for (const bundle::ArchImage& im : v.images) {
          for (bool cubin : {false, true}) {
            if (cubin && im.cubin.empty()) continue;
            Result<std::string> r = bundle::read_image(dir, im, cubin);
            if (!r.ok()) return r.message();
            if (r->find(v.entry) == std::string::npos) {
              return im.ptx + ": does not hold entry " + v.entry;
            }
          }
        }
      }
    }
  }
  return "";
}

// Names in `dir` that are neither bundle files nor the lock: leftover temporaries.
std::vector<std::string> strays(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().filename().string().find(".tmp.") != std::string::npos) {
      out.push_back(f.path().filename().string());
    }
  }
  return out;
}

// True when `b` has its cubins. Without nvJitLink the compiler builds PTX only and says so in
// one way, per architecture ("no cubin for sm_90: libnvJitLink not found at ..."): that is
// the only warning a test may pass over (with a WARN saying what it did not test); any other
// (nvJitLink rejecting the PTX, an assembler error) fails the test.
bool has_cubins(const CompiledBundle& b) {
  for (const std::string& w : b.warnings) {
    INFO("compile warning: " << w);
    CHECK(w.rfind("no cubin for sm_", 0) == 0);
    CHECK(w.find(": libnvJitLink not found at ") != std::string::npos);
  }
  return b.warnings.empty();
}

}  // namespace

TEST_CASE("write_bundle records a hash of every image that read_image accepts", "[compiler]") {
  Program p = parse_program(kAdd);
  CompileOptions opts;
  opts.all_variants = false;
  opts.jobs = 2;
  CompiledBundle b = compile_program(p, opts);
  TempDir dir;
  std::string out = dir.file("add.bundle");
  REQUIRE(write_bundle(b, out).ok());
  Result<bundle::Manifest> m = bundle::read_manifest(out);
  REQUIRE(m.ok());
  CHECK(*m == b.manifest);
  for (const bundle::ArchImage& im : m->kernels[0].steps[0].variants[0].images) {
    CHECK(im.ptx_hash == content_hash(b.files.at(im.ptx)));
    if (!im.cubin.empty()) CHECK(im.cubin_hash == content_hash(b.files.at(im.cubin)));
  }
  CHECK(check_images(out, *m) == "");
  CHECK(std::filesystem::exists(out + "/manifest.json.lock"));
  CHECK(strays(out).empty());
}

TEST_CASE("add_variant from several processes and threads at once loses nothing", "[compiler]") {
  Program p = parse_program(kAdd);
  const KernelDef& k = p.kernels[0];
  CompileOptions opts;
  opts.all_variants = false;
  opts.jobs = 2;
  CompiledBundle b = compile_program(p, opts);
  if (!has_cubins(b)) {
    WARN("no cubins (" << b.warnings[0] << "): add_variant not tested");
    return;
  }
  TempDir dir;
  std::string out = dir.file("add.bundle");
  REQUIRE(write_bundle(b, out).ok());

  // 2 processes x 2 threads; each worker adds a config every worker adds (only one may
  // compile it), then two of its own.
  constexpr int kProcesses = 2, kThreads = 2;
  auto configs_of = [](int worker) {
    return std::vector<PointwiseConfig>{{64, 1, 1}, {32, 1, worker + 1}, {64, 4, worker + 3}};
  };
  std::vector<pid_t> pids;
  for (int proc = 0; proc < kProcesses; ++proc) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      std::vector<int> failed(kThreads, 0);
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          try {
            for (const PointwiseConfig& c : configs_of(proc * kThreads + t)) {
              failed[t] |= !add_variant(out, k, 0, c).ok();
            }
          } catch (...) {
            failed[t] = 1;
          }
        });
      }
      for (std::thread& t : threads) t.join();
      ::_exit(std::count(failed.begin(), failed.end(), 1));
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }

  Result<bundle::Manifest> m = bundle::read_manifest(out);
  REQUIRE(m.ok());
  std::map<std::map<std::string, int64_t>, int> count;
  for (const bundle::Variant& v : m->kernels[0].steps[0].variants) ++count[v.config];
  for (int w = 0; w < kProcesses * kThreads; ++w) {
    for (const PointwiseConfig& c : configs_of(w)) {
      INFO("block=" << c.block << " vec=" << c.vec << " unroll=" << c.unroll);
      CHECK(count[c.as_map()] == 1);
    }
  }
  CHECK(m->kernels[0].steps[0].variants.size() == 1 + 1 + 2 * kProcesses * kThreads);
  CHECK(check_images(out, *m) == "");
  CHECK(strays(out).empty());

  // Adding a config the bundle has returns its id and writes nothing.
  auto before = std::filesystem::last_write_time(out + "/manifest.json");
  Result<int> again = add_variant(out, k, 0, {64, 1, 1});
  REQUIRE(again.ok());
  CHECK(m->kernels[0].steps[0].variants[*again].config == PointwiseConfig{64, 1, 1}.as_map());
  CHECK(std::filesystem::last_write_time(out + "/manifest.json") == before);
}

TEST_CASE("add_variant refuses a bundle whose kernel changed", "[compiler]") {
  Program p = parse_program(kAdd);
  CompileOptions opts;
  opts.all_variants = false;
  opts.assemble = false;
  CompiledBundle b = compile_program(p, opts);
  TempDir dir;
  std::string out = dir.file("add.bundle");
  REQUIRE(write_bundle(b, out).ok());
  Program other =
      parse_program("kernel add(x: f32[N], y: f32[N]) -> (z: f32[N]) { z[i] = x[i] - y[i] }");
  Result<int> r = add_variant(out, other.kernels[0], 0, {64, 1, 1});
  CHECK(r.message() == out + ": kernel add changed while a variant was being added");
  CHECK(add_variant(dir.file("none"), p.kernels[0], 0, {64, 1, 1}).message() ==
        dir.file("none") +
            "/manifest.json.lock: cannot create lock file: No such file or directory");
}

TEST_CASE("a compiled cubin's entries declare the manifest's parameter bytes", "[compiler]") {
  // What Bundle::load compares (bundle/image.h cubin_param_bytes): every entry of the
  // compiler's own cubins must declare 8 bytes per parameter and per symbol.
  Program p = parse_program(kAdd);
  CompileOptions opts;
  opts.jobs = 2;
  CompiledBundle b = compile_program(p, opts);
  if (!has_cubins(b)) {
    WARN("no cubins (" << b.warnings[0] << "): not tested");
    return;
  }
  const bundle::KernelInfo& k = b.manifest.kernels[0];
  const int64_t expected = 8 * static_cast<int64_t>(k.params.size() + k.symbols.size());
  int checked = 0;
  for (const bundle::Variant& v : k.steps[0].variants) {
    for (const bundle::ArchImage& im : v.images) {
      if (im.cubin.empty()) continue;
      std::map<std::string, int64_t> bytes = bundle::cubin_param_bytes(b.files.at(im.cubin));
      REQUIRE(bytes.count(v.entry) == 1);
      CHECK(bytes.at(v.entry) == expected);
      ++checked;
    }
  }
  CHECK(checked == static_cast<int>(k.steps[0].variants.size() * opts.archs.size()));
}

TEST_CASE("add_variant never overwrites the files of a variant it did not number", "[compiler]") {
  // A bundle cut down to one variant that keeps its files (entry add_s0_v2, now id 0), as
  // tests/gpu/concurrent_tune.sh makes: the second variant added must not take the name v2.
  Program p = parse_program(kAdd);
  CompileOptions opts;
  opts.jobs = 2;
  CompiledBundle b = compile_program(p, opts);
  if (!has_cubins(b)) {
    WARN("no cubins (" << b.warnings[0] << "): add_variant not tested");
    return;
  }
  std::vector<bundle::Variant>& variants = b.manifest.kernels[0].steps[0].variants;
  REQUIRE(variants.size() > 2);
  bundle::Variant kept = variants[2];
  kept.id = 0;
  kept.is_default = true;
  variants = {kept};
  TempDir dir;
  std::string out = dir.file("add.bundle");
  REQUIRE(write_bundle(b, out).ok());

  const KernelDef& k = p.kernels[0];
  Result<int> first = add_variant(out, k, 0, {96, 1, 3});
  Result<int> second = add_variant(out, k, 0, {160, 1, 5});
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(*first == 1);
  CHECK(*second == 2);
  Result<bundle::Manifest> m = bundle::read_manifest(out);
  REQUIRE(m.ok());
  const std::vector<bundle::Variant>& now = m->kernels[0].steps[0].variants;
  REQUIRE(now.size() == 3);
  CHECK(now[0] == kept);
  CHECK(now[1].entry == "add_s0_v1");
  CHECK(now[2].entry == "add_s0_v3");
  CHECK(check_images(out, *m) == "");  // the kept variant's files still match its hashes
}
