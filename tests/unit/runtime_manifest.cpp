// Unit tests of the bundle manifest (write, read back, reject hostile input with messages
// that name the file and the JSON path) and of opening the runtime without a GPU.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "bundle/manifest.h"
#include "runtime/runtime.h"

namespace {

using namespace kiln;
using namespace kiln::bundle;
using Json = nlohmann::json;

const char* kOrigin = "bundle/manifest.json";

Variant variant(int id, bool is_default, int vec) {
  Variant v;
  v.id = id;
  v.config = {{"block", 256}, {"vec", vec}};
  v.is_default = is_default;
  v.entry = "softmax_s0_v" + std::to_string(id);
  v.block_threads = 256;
  v.elements_per_block = 256 * vec;
  v.align_bytes = vec * 4;
  if (vec > 1) v.aligned_params = {0, 1};
  v.images = {
      {"sm_80", "softmax_v" + std::to_string(id) + ".sm_80.ptx", "", 20, 0, 0,
       "00112233445566" + std::to_string(10 + id), ""},
      {"sm_90", "softmax_v" + std::to_string(id) + ".sm_90.ptx",
       "softmax_v" + std::to_string(id) + ".sm_90.cubin", 24, 0, 1024,
       "0123456789abcd" + std::to_string(10 + id), "fedcba98765432" + std::to_string(10 + id)}};
  return v;
}

Manifest sample() {
  Manifest m;
  m.kiln_version = "0.1.0";
  m.llvm_version = "19.1.7";
  KernelInfo k;
  k.name = "softmax";
  k.hash = "3f2a9c";
  k.ir = "kernel softmax(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = x[i, j]\n}\n";
  k.symbols = {"M", "N"};
  k.params = {{"x", DType::f32, {Dim::symbol("M"), Dim::symbol("N")}, false},
              {"b", DType::bf16, {Dim::fixed(128)}, false},
              {"y", DType::f16, {Dim::symbol("M"), Dim::symbol("N")}, true}};
  Step s;
  s.name = "main";
  s.kind = StepKind::pointwise;
  s.space = {Dim::symbol("M"), Dim::symbol("N")};
  s.variants = {variant(0, false, 1), variant(1, true, 4), variant(2, false, 2)};
  k.steps = {s};
  m.kernels = {k};
  return m;
}

Json sample_json() {
  return Json::parse(to_json(sample()));
}

// The error parse_manifest reports for manifest `j` (the sample by default) after `edit`.
std::string error_after(const std::function<void(Json&)>& edit, Json j = sample_json()) {
  edit(j);
  Result<Manifest> r = parse_manifest(j.dump(), kOrigin);
  return r.ok() ? "(accepted)" : r.message();
}

Json& variant_json(Json& j, int v) {
  return j["kernels"][0]["steps"][0]["variants"][v];
}

std::string temp_dir() {
  std::string dir =
      (std::filesystem::temp_directory_path() / ("kiln_runtime_test_" + std::to_string(::getpid())))
          .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("manifest round-trips through JSON", "[runtime]") {
  Manifest m = sample();
  std::string text = to_json(m);
  Result<Manifest> back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == m);
  CHECK(to_json(*back) == text);
  CHECK(back->find("softmax") == &back->kernels[0]);
  CHECK(back->find("nope") == nullptr);

  Json j = Json::parse(text);
  CHECK(j["format"] == "kiln-bundle");
  CHECK(j["version"] == 14);
  const Json& k = j["kernels"][0];
  CHECK(k["params"][0]["shape"] == Json::array({"M", "N"}));
  CHECK(k["params"][1]["shape"] == Json::array({128}));
  CHECK(k["params"][1]["dtype"] == "bf16");
  CHECK(k["steps"][0]["variants"][1]["config"]["vec"] == 4);
  CHECK(k["steps"][0]["variants"][1]["images"][1]["cubin"] == "softmax_v1.sm_90.cubin");
  CHECK(k["steps"][0]["variants"][1]["images"][1]["cubin_hash"] == "fedcba9876543211");
  CHECK(k["steps"][0]["variants"][1]["images"][0]["cubin_hash"] == "");
  CHECK(text.rfind("{\n  \"format\": \"kiln-bundle\",\n  \"version\": 14,", 0) == 0);
}

TEST_CASE("manifest fields may come in any order and unknown fields are ignored", "[runtime]") {
  Json j = sample_json();
  j["comment"] = "written by hand";
  Json sorted = Json::parse(j.dump());  // nlohmann::json sorts keys
  Result<Manifest> r = parse_manifest(sorted.dump(), kOrigin);
  REQUIRE(r.ok());
  CHECK(*r == sample());
}

TEST_CASE("manifest validation names the origin and the JSON path", "[runtime]") {
  std::string v2 = "bundle/manifest.json: kernels[0].steps[0].variants[2].";
  std::string k0 = "bundle/manifest.json: kernels[0].";

  CHECK(error_after([](Json& j) { variant_json(j, 2)["block_threads"] = 2048; }) ==
        v2 + "block_threads: expected an integer in 1..1024, got 2048");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["block_threads"] = 0; }) ==
        v2 + "block_threads: expected an integer in 1..1024, got 0");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["block_threads"] = "256"; }) ==
        v2 + "block_threads: expected an integer in 1..1024, got a string");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["block_threads"] = 256.5; }) ==
        v2 + "block_threads: expected an integer in 1..1024, got a number");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["elements_per_block"] = 0; }) ==
        v2 + "elements_per_block: expected an integer >= 1, got 0");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["elements_per_block"] = -5; }) ==
        v2 + "elements_per_block: expected an integer >= 1, got -5");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["id"] = 7; }) ==
        v2 + "id: expected 2 (a variant's id is its index), got 7");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["geometry"] = "tiled2d"; }) ==
        v2 + "geometry: unknown geometry \"tiled2d\" (expected \"flat\")");
  CHECK(error_after([](Json& j) {
          variant_json(j, 2)["aligned_params"] = {0, 3};
        }) == v2 + "aligned_params[1]: expected an integer in 0..2, got 3");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["aligned_params"] = {-1}; }) ==
        v2 + "aligned_params[0]: expected an integer in 0..2, got -1");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["align_bytes"] = 12; }) ==
        v2 + "align_bytes: expected a power of two in 1..256");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["align_bytes"] = 0; }) ==
        v2 + "align_bytes: expected an integer in 1..256, got 0");
  CHECK(error_after([](Json& j) { variant_json(j, 2).erase("entry"); }) ==
        v2 + "entry: missing (expected a string)");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["is_default"] = 1; }) ==
        v2 + "is_default: expected a boolean, got an integer");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["config"]["vec"] = "4"; }) ==
        v2 + "config.vec: expected an integer, got a string");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["config"] = Json::array(); }) ==
        v2 + "config: expected an object, got an array");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["images"] = Json::array(); }) ==
        v2 + "images: expected at least one image");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["images"][0]["registers"] = -1; }) ==
        v2 + "images[0].registers: expected an integer in 0..2147483647, got -1");
  CHECK(error_after([](Json& j) { variant_json(j, 2)["images"][0]["arch"] = "gfx90a"; }) ==
        v2 + "images[0].arch: expected an architecture like \"sm_90\", got \"gfx90a\"");
}

TEST_CASE("manifest rejects file names that leave the bundle directory", "[runtime]") {
  std::string at = "bundle/manifest.json: kernels[0].steps[0].variants[0].images[1].";
  for (const char* name : {"../evil.cubin", "/etc/passwd", "sub/x.ptx", "..", ".", "a\\b"}) {
    CAPTURE(name);
    CHECK(error_after([&](Json& j) { variant_json(j, 0)["images"][1]["cubin"] = name; }) ==
          at + "cubin: file name \"" + name + "\" must name a file inside the bundle directory");
  }
  CHECK(error_after([](Json& j) { variant_json(j, 0)["images"][1]["ptx"] = ""; }) ==
        at + "ptx: expected a file name");
  CHECK(error_after([](Json& j) { variant_json(j, 0)["images"][1]["cubin"] = ""; }) ==
        "(accepted)");  // no cubin: the runtime JIT-compiles the PTX
}

TEST_CASE("manifest images need the content hash of every file they name", "[runtime]") {
  std::string at = "bundle/manifest.json: kernels[0].steps[0].variants[0].images[1].";
  CHECK(error_after([](Json& j) { variant_json(j, 0)["images"][1].erase("ptx_hash"); }) ==
        at + "ptx_hash: missing (expected a string)");
  CHECK(error_after([](Json& j) { variant_json(j, 0)["images"][1]["cubin_hash"] = ""; }) ==
        at + "cubin_hash: expected a content hash (16 hex digits), got \"\"");
  CHECK(error_after([](Json& j) {
          variant_json(j, 0)["images"][1]["ptx_hash"] = "0123456789ABCDEF";
        }) == at + "ptx_hash: expected a content hash (16 hex digits), got \"0123456789ABCDEF\"");
  CHECK(error_after([](Json& j) { variant_json(j, 0)["images"][1]["ptx_hash"] = "0123"; }) ==
        at + "ptx_hash: expected a content hash (16 hex digits), got \"0123\"");
  CHECK(error_after([](Json& j) { variant_json(j, 0)["images"][1]["cubin_hash"] = 7; }) ==
        at + "cubin_hash: expected a string, got an integer");
  // Without a cubin its hash means nothing and is dropped.
  Json j = sample_json();
  variant_json(j, 0)["images"][1]["cubin"] = "";
  Result<Manifest> r = parse_manifest(j.dump(), kOrigin);
  REQUIRE(r.ok());
  CHECK(r->kernels[0].steps[0].variants[0].images[1].cubin_hash.empty());
}

TEST_CASE("manifest steps need variants and exactly one default", "[runtime]") {
  std::string s0 = "bundle/manifest.json: kernels[0].steps[0].";
  CHECK(error_after([](Json& j) { j["kernels"][0]["steps"][0]["variants"] = Json::array(); }) ==
        s0 + "variants: expected at least one variant");
  CHECK(error_after([](Json& j) { variant_json(j, 1)["is_default"] = false; }) ==
        s0 + "variants: expected exactly one variant with is_default, found 0");
  CHECK(error_after([](Json& j) { variant_json(j, 0)["is_default"] = true; }) ==
        s0 + "variants: expected exactly one variant with is_default, found 2");
  CHECK(error_after([](Json& j) { j["kernels"][0]["steps"] = Json::array(); }) ==
        "bundle/manifest.json: kernels[0].steps: expected at least one step");
  CHECK(error_after([](Json& j) { j["kernels"][0]["steps"][0]["space"][1] = "K"; }) ==
        s0 + "space[1]: symbol \"K\" is not listed in the kernel's symbols");
}

TEST_CASE("manifest kernels: params, symbols and shapes", "[runtime]") {
  std::string k0 = "bundle/manifest.json: kernels[0].";
  CHECK(error_after([](Json& j) { j["kernels"][0]["params"][0]["shape"][1] = "K"; }) ==
        k0 + "params[0].shape[1]: symbol \"K\" is not listed in the kernel's symbols");
  CHECK(error_after([](Json& j) { j["kernels"][0]["params"][1]["shape"][0] = 0; }) ==
        k0 + "params[1].shape[0]: expected an integer >= 1, got 0");
  CHECK(error_after([](Json& j) { j["kernels"][0]["params"][1]["shape"][0] = -3; }) ==
        k0 + "params[1].shape[0]: expected an integer >= 1, got -3");
  CHECK(error_after([](Json& j) { j["kernels"][0]["params"][1]["shape"][0] = 1.5; }) ==
        k0 + "params[1].shape[0]: expected a dimension (an integer >= 1 or a symbol), got a "
             "number");
  CHECK(error_after([](Json& j) {
          j["kernels"][0]["params"][1]["shape"][0] = 18446744073709551615ull;
        }) == k0 + "params[1].shape[0]: expected an integer >= 1");
  CHECK(error_after([](Json& j) { j["kernels"][0]["params"][1]["dtype"] = "f64"; }) ==
        k0 + "params[1].dtype: expected f32, f16, bf16, i32, i64 or u32, got \"f64\"");
  CHECK(error_after([](Json& j) { j["kernels"][0]["params"][1]["dtype"] = "bool"; }) ==
        k0 + "params[1].dtype: expected f32, f16, bf16, i32, i64 or u32, got \"bool\"");
  CHECK(error_after([](Json& j) { j["kernels"][0]["params"][1]["name"] = "x"; }) ==
        k0 + "params[1].name: tensor \"x\" is declared twice");
  CHECK(error_after([](Json& j) { j["kernels"][0]["params"][0]["output"] = true; }) ==
        k0 + "params[1]: inputs must precede outputs");
  CHECK(error_after([](Json& j) {
          j["kernels"][0]["symbols"] = {"M", "N", "M"};
        }) == k0 + "symbols[2]: symbol \"M\" is listed twice");
  CHECK(error_after([](Json& j) {
          j["kernels"][0]["symbols"] = {"M", 3};
        }) == k0 + "symbols[1]: expected a symbol name, got an integer");
  CHECK(error_after([](Json& j) { j["kernels"][0]["name"] = ""; }) ==
        k0 + "name: expected a non-empty string");
  CHECK(error_after([](Json& j) { j["kernels"][0].erase("params"); }) ==
        k0 + "params: missing (expected an array)");
  CHECK(error_after([](Json& j) { j["kernels"].push_back(j["kernels"][0]); }) ==
        "bundle/manifest.json: kernels[1].name: kernel \"softmax\" is defined twice");
}

TEST_CASE("manifest top level: format, version and hostile JSON", "[runtime]") {
  CHECK(error_after([](Json& j) { j["version"] = 15; }) ==
        "bundle/manifest.json: version: unsupported format version 15 (this runtime reads "
        "versions 3 to 14)");
  // Version 1 had no image hashes, version 2 no split variants: such a bundle is compiled
  // again, never loaded unchecked.
  CHECK(error_after([](Json& j) { j["version"] = 1; }) ==
        "bundle/manifest.json: version: unsupported format version 1 (this runtime reads "
        "versions 3 to 14; recompile the bundle)");
  CHECK(error_after([](Json& j) { j["version"] = 2; }) ==
        "bundle/manifest.json: version: unsupported format version 2 (this runtime reads "
        "versions 3 to 14; recompile the bundle)");
  // Version 3 had no buffers: it reads as version 4 without them.
  Json v3 = sample_json();
  v3["version"] = 3;
  v3["kernels"][0].erase("buffers");
  Result<Manifest> old = parse_manifest(v3.dump(), kOrigin);
  REQUIRE(old.ok());
  CHECK(*old == sample());
  CHECK(error_after([](Json& j) { j["version"] = "1"; }) ==
        "bundle/manifest.json: version: expected an integer >= 0, got a string");
  CHECK(error_after([](Json& j) { j["format"] = "zip"; }) ==
        "bundle/manifest.json: format: expected \"kiln-bundle\"");
  CHECK(error_after([](Json& j) { j.erase("kernels"); }) ==
        "bundle/manifest.json: kernels: missing (expected an array)");
  CHECK(error_after([](Json& j) { j["kernels"] = Json::object(); }) ==
        "bundle/manifest.json: kernels: expected an array, got an object");
  CHECK(error_after([](Json& j) { j["kernels"][0] = 5; }) ==
        "bundle/manifest.json: kernels[0]: expected an object, got an integer");
  CHECK(error_after([](Json& j) { j = Json::array(); }) ==
        "bundle/manifest.json: expected an object, got an array");

  for (std::string text : {"", "{", "{\"format\": \"kiln-bundle\",}", "nul", "\xff\xfe"}) {
    CAPTURE(text);
    Result<Manifest> r = parse_manifest(text, kOrigin);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.message(), Catch::StartsWith("bundle/manifest.json: invalid JSON: parse error"));
  }
  std::string deep(200000, '[');
  CHECK_FALSE(parse_manifest(deep + std::string(200000, ']'), kOrigin).ok());
  CHECK_FALSE(parse_manifest(deep, kOrigin).ok());

  Json empty = sample_json();
  empty["kernels"] = Json::array();
  Result<Manifest> r = parse_manifest(empty.dump(), kOrigin);
  REQUIRE(r.ok());
  CHECK(r->kernels.empty());
}

TEST_CASE("read_manifest reads DIR/manifest.json", "[runtime]") {
  Result<Manifest> missing = read_manifest("/nonexistent/kiln.bundle");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.message() == "/nonexistent/kiln.bundle: bundle directory not found");

  std::string dir = temp_dir();
  Result<Manifest> none = read_manifest(dir);
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.message(), Catch::StartsWith(dir + "/manifest.json: cannot read: "));

  std::ofstream(dir + "/manifest.json") << to_json(sample());
  Result<Manifest> r = read_manifest(dir);
  REQUIRE(r.ok());
  CHECK(*r == sample());

  std::ofstream(dir + "/manifest.json") << "{\"format\": \"kiln-bundle\", \"version\": 4}";
  Result<Manifest> bad = read_manifest(dir);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.message() == dir + "/manifest.json: kiln_version: missing (expected a string)");
  std::filesystem::remove_all(dir);
}

TEST_CASE("Runtime::open reports a missing driver instead of crashing", "[runtime]") {
  Result<std::unique_ptr<Runtime>> rt = Runtime::open();
  if (rt.ok()) {
    CHECK_FALSE((*rt)->device().name.empty());
    CHECK((*rt)->device().cc_major >= 5);
    Result<std::unique_ptr<Bundle>> b = Bundle::load(**rt, "/nonexistent/kiln.bundle");
    REQUIRE_FALSE(b.ok());
    CHECK(b.message() == "/nonexistent/kiln.bundle: bundle directory not found");
  } else {
    INFO(rt.message());
    // Either no libcuda at all, or a driver without a usable device.
    CHECK((rt.message().find("libcuda") != std::string::npos ||
           rt.message().find("CUDA") != std::string::npos));
    if (rt.message().rfind("no CUDA driver", 0) == 0) {
      CHECK_THAT(rt.message(),
                 Catch::StartsWith("no CUDA driver: libcuda.so.1 could not be loaded ("));
    }
  }
}

TEST_CASE("buffers round-trip, share the parameters' names and bound aligned_params", "[runtime]") {
  Manifest m = sample();
  KernelInfo& k = m.kernels[0];
  k.buffers = {{"r", DType::f32, {Dim::symbol("M")}, false}, {"g", DType::f32, {}, false}};
  k.steps[0].variants[1].aligned_params = {0, 3};  // x and the first buffer
  std::string text = to_json(m);
  Result<Manifest> back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == m);
  Json j = Json::parse(text);
  CHECK(j["kernels"][0]["buffers"] == Json::parse(R"([{"name": "r", "dtype": "f32", "shape": ["M"]},
                        {"name": "g", "dtype": "f32", "shape": []}])"));

  auto error_with = [&](const std::function<void(Json&)>& edit) { return error_after(edit, j); };
  const std::string k0 = "bundle/manifest.json: kernels[0]";
  CHECK(error_with([](Json& e) { e["kernels"][0]["buffers"][1]["name"] = "x"; }) ==
        k0 + ".buffers[1].name: tensor \"x\" is declared twice");
  CHECK(error_with([](Json& e) { e["kernels"][0]["buffers"][0]["shape"] = {"K"}; }) ==
        k0 + ".buffers[0].shape[0]: symbol \"K\" is not listed in the kernel's symbols");
  CHECK(error_with([](Json& e) { e["kernels"][0]["buffers"][0]["dtype"] = "bool"; }) ==
        k0 + ".buffers[0].dtype: expected f32, f16, bf16, i32, i64 or u32, got \"bool\"");
  CHECK(error_with([](Json& e) { e["kernels"][0]["buffers"] = 1; }) ==
        k0 + ".buffers: expected an array, got an integer");
  // Three parameters and two buffers: arguments 0..4 may be aligned.
  CHECK(error_with([](Json& e) { variant_json(e, 1)["aligned_params"] = {5}; }) ==
        k0 + ".steps[0].variants[1].aligned_params[0]: expected an integer in 0..4, got 5");
}

TEST_CASE("a split variant round-trips and only a row reduction step may have one", "[runtime]") {
  Manifest m = sample();
  Step& s = m.kernels[0].steps[0];
  s.kind = StepKind::row_reduction;
  s.space = {Dim::symbol("M")};
  s.reduced = {Dim::symbol("N")};
  s.variants[2].split = {3, 2, 8192};
  std::string text = to_json(m);
  Result<Manifest> back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == m);
  Json j = Json::parse(text);
  CHECK(variant_json(j, 2)["split"] == Json({{"phases", 3}, {"slots", 2}, {"chunk", 8192}}));
  CHECK_FALSE(variant_json(j, 1).contains("split"));  // present only for split variants

  auto error_with = [&](const std::function<void(Json&)>& edit) { return error_after(edit, j); };
  const std::string v2 = "bundle/manifest.json: kernels[0].steps[0].variants[2]";
  CHECK(error_with([](Json& e) { variant_json(e, 2)["split"]["phases"] = 1; }) ==
        v2 + ".split.phases: expected an integer in 2..64, got 1");
  CHECK(error_with([](Json& e) { variant_json(e, 2)["split"]["slots"] = 0; }) ==
        v2 + ".split.slots: expected an integer in 1..1024, got 0");
  CHECK(error_with([](Json& e) { variant_json(e, 2)["split"].erase("chunk"); }) ==
        v2 + ".split.chunk: missing (expected an integer)");
  CHECK(error_with([](Json& e) { variant_json(e, 2)["split"] = 3; }) ==
        v2 + ".split: expected an object, got an integer");
  CHECK(error_with([](Json& e) { e["kernels"][0]["steps"][0]["kind"] = "pointwise"; }) ==
        v2 + ": a split variant in a step of kind \"pointwise\" (only reduction, scan and "
             "contraction steps split)");

  // lead_last: in JSON only when true (a reader before it launches every phase on the full
  // grid, which the kernel also serves), and only in a row reduction step.
  m.kernels[0].steps[0].variants[2].split.lead_last = true;
  text = to_json(m);
  back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == m);
  j = Json::parse(text);
  CHECK(variant_json(j, 2)["split"]["lead_last"] == true);
  CHECK(error_with([](Json& e) { variant_json(e, 2)["split"]["lead_last"] = 1; }) ==
        v2 + ".split.lead_last: expected a boolean, got an integer");
  CHECK(error_with([](Json& e) { e["kernels"][0]["steps"][0]["kind"] = "outer_reduction"; }) ==
        v2 + ": a split variant with lead_last in a step of kind \"outer_reduction\" (only "
             "row_reduction steps run their last phase one block per row)");
}

TEST_CASE("step kinds: one enum, spelled as before in the manifest", "[runtime]") {
  for (StepKind k : {StepKind::pointwise, StepKind::row_reduction, StepKind::outer_reduction,
                     StepKind::contraction, StepKind::scan}) {
    CHECK(bundle::parse_step_kind(to_string(k)) == k);
  }
  CHECK(to_string(StepKind::contraction) == "contraction");
  CHECK(to_string(StepKind::scan) == "scan");
  CHECK(to_string(StepKind::row_reduction) == "row_reduction");
  CHECK_FALSE(bundle::parse_step_kind("reduction").has_value());
  CHECK_FALSE(bundle::parse_step_kind("").has_value());

  Json j = Json::parse(to_json(sample()));
  CHECK(j["kernels"][0]["steps"][0]["kind"] == "pointwise");
  CHECK(error_after([](Json& e) { e["kernels"][0]["steps"][0]["kind"] = "Pointwise"; }, j) ==
        "bundle/manifest.json: kernels[0].steps[0].kind: unknown step kind \"Pointwise\" "
        "(expected \"pointwise\", \"row_reduction\", \"outer_reduction\", \"contraction\" or "
        "\"scan\")");
}

TEST_CASE("a staging variant round-trips and only a plain row reduction variant may stage",
          "[runtime]") {
  Manifest m = sample();
  Step& s = m.kernels[0].steps[0];
  s.kind = StepKind::row_reduction;
  s.space = {Dim::symbol("M")};
  s.reduced = {Dim::symbol("N")};
  s.variants[2].stage = {4, 1, 8};
  std::string text = to_json(m);
  Result<Manifest> back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == m);
  Json j = Json::parse(text);
  CHECK(variant_json(j, 2)["stage"] ==
        Json({{"bytes_per_element", 4}, {"rows_per_block", 1}, {"vec", 8}}));
  CHECK_FALSE(variant_json(j, 1).contains("stage"));  // present only for staging variants
  // A bundle without staging variants (every bundle before them) reads as before.
  Json old = j;
  variant_json(old, 2).erase("stage");
  Result<Manifest> plain = parse_manifest(old.dump(), kOrigin);
  REQUIRE(plain.ok());
  CHECK(plain->kernels[0].steps[0].variants[2].stage == bundle::StageInfo{});

  auto error_with = [&](const std::function<void(Json&)>& edit) { return error_after(edit, j); };
  const std::string v2 = "bundle/manifest.json: kernels[0].steps[0].variants[2]";
  CHECK(error_with([](Json& e) { variant_json(e, 2)["stage"]["bytes_per_element"] = 0; }) ==
        v2 + ".stage.bytes_per_element: expected an integer in 1..1024, got 0");
  CHECK(error_with([](Json& e) { variant_json(e, 2)["stage"]["rows_per_block"] = 2048; }) ==
        v2 + ".stage.rows_per_block: expected an integer in 1..1024, got 2048");
  CHECK(error_with([](Json& e) { variant_json(e, 2)["stage"].erase("vec"); }) ==
        v2 + ".stage.vec: missing (expected an integer)");
  CHECK(error_with([](Json& e) { variant_json(e, 2)["stage"] = "yes"; }) ==
        v2 + ".stage: expected an object, got a string");
  CHECK(error_with([](Json& e) { e["kernels"][0]["steps"][0]["kind"] = "outer_reduction"; }) ==
        v2 + ": a staging variant in a step of kind \"outer_reduction\" (only row_reduction "
             "steps stage)");
  CHECK(error_with([](Json& e) {
          variant_json(e, 2)["split"] = {{"phases", 3}, {"slots", 2}, {"chunk", 8192}};
        }) == v2 + ": a variant that both stages and splits its rows");
}

TEST_CASE("stage_bytes: the dynamic shared memory a staged launch gets", "[runtime]") {
  const bundle::StageInfo bf16_row{2, 1, 8};  // a softmax of bf16, one row per block
  const int64_t hopper = 232448 - 64;         // opt-in maximum less the combines' words
  CHECK(bundle::stage_bytes(bf16_row, 65536, hopper) == 131072);
  CHECK(bundle::stage_bytes(bf16_row, 20000, hopper) == 40000);
  CHECK(bundle::stage_bytes(bf16_row, 20001, hopper) == 0);      // scalar rows run unstaged
  CHECK(bundle::stage_bytes(bf16_row, 131072, hopper) == 0);     // 256 KB: more than a block has
  CHECK(bundle::stage_bytes(bf16_row, 65536, 0) == 0);           // no shared memory allowed
  CHECK(bundle::stage_bytes({6, 2, 4}, 1000, hopper) == 12000);  // two inputs, two rows
  CHECK(bundle::stage_bytes(bf16_row, int64_t{1} << 62, int64_t{1} << 62) == 0);  // overflow
  CHECK(bundle::stage_bytes({}, 1024, hopper) == 0);  // not a staging variant
  // A strided variant's tile (format 9): each row's area rounded up to row_align bytes.
  const bundle::StageInfo tile{2, 8, 1, 128};
  CHECK(bundle::stage_bytes(tile, 4096, hopper) == 65536);
  CHECK(bundle::stage_bytes(tile, 1001, hopper) == 8 * 2048);  // 2002 bytes -> 2048 a row
  CHECK(bundle::stage_bytes(tile, 1, hopper) == 8 * 128);
  CHECK(bundle::stage_bytes(tile, 16384, hopper) == 0);                       // 256 KB
  CHECK(bundle::stage_bytes(tile, int64_t{1} << 61, int64_t{1} << 62) == 0);  // overflow
}

TEST_CASE("manifest: scalar parameters (format 7) round-trip, older bundles have none",
          "[runtime]") {
  Manifest m = sample();
  ParamInfo eps;
  eps.name = "eps";
  eps.dtype = DType::f32;
  eps.scalar = true;
  m.kernels[0].params.insert(m.kernels[0].params.begin() + 1, eps);
  const std::string text = to_json(m);
  Result<Manifest> back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == m);
  CHECK(back->kernels[0].params[1].scalar);
  CHECK_FALSE(back->kernels[0].params[0].scalar);
  Json j = Json::parse(text);
  CHECK(j["kernels"][0]["params"][1]["scalar"] == true);
  CHECK(j["kernels"][0]["params"][0]["scalar"] == false);
  // A version 6 bundle has no "scalar": every parameter is a pointer.
  Json v6 = sample_json();
  v6["version"] = 6;
  for (Json& p : v6["kernels"][0]["params"]) p.erase("scalar");
  Result<Manifest> old = parse_manifest(v6.dump(), kOrigin);
  REQUIRE(old.ok());
  CHECK(*old == sample());
  // A scalar is an input of rank 0.
  const std::string p0 = "bundle/manifest.json: kernels[0].params[0].scalar: ";
  CHECK(error_after([](Json& j) { j["kernels"][0]["params"][0]["scalar"] = true; }) ==
        p0 + "a scalar parameter is an input of rank 0");
  const std::string last = "bundle/manifest.json: kernels[0].params[" +
                           std::to_string(sample().kernels[0].params.size() - 1) + "].scalar: ";
  CHECK(error_after([](Json& j) {
          Json& p = j["kernels"][0]["params"].back();
          p["shape"] = Json::array();
          p["scalar"] = true;
        }) == last + "a scalar parameter is an input of rank 0");
  CHECK(error_after([](Json& j) { j["kernels"][0]["params"][0]["scalar"] = 1; }) ==
        p0 + "expected a boolean, got an integer");
}

TEST_CASE("manifest: a many-rows tier round-trips, absent means an ordinary tier", "[runtime]") {
  Manifest m = sample();
  Variant& v = m.kernels[0].steps[0].variants[2];
  v.max_reduced = std::numeric_limits<int64_t>::max();
  v.min_rows_per_sm = 8;
  std::string text = to_json(m);
  CHECK(Json::parse(text)["kernels"][0]["steps"][0]["variants"][2]["min_rows_per_sm"] == 8);
  CHECK_FALSE(
      Json::parse(text)["kernels"][0]["steps"][0]["variants"][1].contains("min_rows_per_sm"));
  Result<Manifest> back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(back->kernels[0].steps[0].variants[2].min_rows_per_sm == 8);
  CHECK(*back == m);
  Json j = Json::parse(text);
  j["kernels"][0]["steps"][0]["variants"][2]["min_rows_per_sm"] = 0;
  Result<Manifest> bad = parse_manifest(j.dump(), kOrigin);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.message(), Catch::Contains("min_rows_per_sm"));
}

TEST_CASE("manifest: few-row tiers round-trip, absent means none", "[runtime]") {
  Manifest m = sample();
  Step& s = m.kernels[0].steps[0];
  s.kind = StepKind::row_reduction;
  s.space = {Dim::symbol("M")};
  s.reduced = {Dim::symbol("N")};
  s.variants[0].max_reduced = 1024;
  s.variants[1].max_reduced = 4096;
  s.few_rows = {{1024, 2}, {4096, 2}};
  std::string text = to_json(m);
  CHECK(Json::parse(text)["kernels"][0]["steps"][0]["few_rows"] ==
        Json::array({Json::array({1024, 2}), Json::array({4096, 2})}));
  Result<Manifest> back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == m);
  CHECK_FALSE(Json::parse(to_json(sample()))["kernels"][0]["steps"][0].contains("few_rows"));

  const Json j = Json::parse(text);
  auto error_with = [&](const std::function<void(Json&)>& edit) { return error_after(edit, j); };
  auto few = [](Json& e) -> Json& { return e["kernels"][0]["steps"][0]["few_rows"]; };
  const std::string f = "bundle/manifest.json: kernels[0].steps[0].few_rows";
  const std::string why =
      ": expected a tier's limit (ascending) and a variant of a row reduction step that neither "
      "splits, stages, shifts nor reads strides";
  CHECK(error_with([&](Json& e) { few(e) = 3; }) == f + ": expected an array, got an integer");
  CHECK(error_with([&](Json& e) { few(e)[0] = Json::array({1024}); }) ==
        f + "[0]: expected [limit, variant]");
  CHECK(error_with([&](Json& e) { few(e)[0][1] = 3; }) ==
        f + "[0][1]: expected an integer in 0..2, got 3");
  CHECK(error_with([&](Json& e) { few(e)[0][0] = 0; }) ==
        f + "[0][0]: expected an integer in 1..2147483647, got 0");
  CHECK(error_with([&](Json& e) { few(e)[0][0] = 2048; }) == f + "[0]" + why);  // not a tier's
  CHECK(error_with([&](Json& e) { few(e)[1][0] = 1024; }) == f + "[1]" + why);  // not ascending
  CHECK(error_with([&](Json& e) { variant_json(e, 2)["config"]["shift"] = 1; }) == f + "[0]" + why);
  CHECK(error_with([&](Json& e) { e["kernels"][0]["steps"][0]["kind"] = "outer_reduction"; }) ==
        f + "[0]" + why);
}

TEST_CASE("manifest: a tiled step's dimensions round-trip, absent means none", "[runtime]") {
  Manifest m = sample();
  Step& s = m.kernels[0].steps[0];
  s.space = {Dim::symbol("M"), Dim::symbol("N"), Dim::fixed(3), Dim::fixed(5)};
  s.tile_across = {1, 2};
  s.tile_inner = {3};
  std::string text = to_json(m);
  CHECK(Json::parse(text)["kernels"][0]["steps"][0]["tiles"] ==
        Json::parse(R"({"across": [1, 2], "inner": [3]})"));
  Result<Manifest> back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == m);
  CHECK_FALSE(Json::parse(to_json(sample()))["kernels"][0]["steps"][0].contains("tiles"));

  const Json j = Json::parse(text);
  auto error_with = [&](const std::function<void(Json&)>& edit) { return error_after(edit, j); };
  auto tiles = [](Json& e) -> Json& { return e["kernels"][0]["steps"][0]["tiles"]; };
  const std::string f = "bundle/manifest.json: kernels[0].steps[0].tiles";
  const std::string why =
      ": expected a pointwise step's across positions before its innermost ones, which end the "
      "space";
  CHECK(error_with([&](Json& e) { tiles(e)["across"] = Json::array(); }) ==
        f + ".across: expected at least one position");
  CHECK(error_with([&](Json& e) {
          tiles(e)["across"] = Json::array({0, 2});
        }) == f + ".across[1]: expected consecutive positions");
  CHECK(error_with([&](Json& e) { tiles(e)["inner"] = Json::array({4}); }) ==
        f + ".inner[0]: expected an integer in 0..3, got 4");
  CHECK(error_with([&](Json& e) { tiles(e)["inner"] = Json::array({2}); }) == f + why);
  CHECK(error_with([&](Json& e) { tiles(e)["across"] = Json::array({3}); }) == f + why);
  CHECK(error_with([&](Json& e) { e["kernels"][0]["steps"][0]["kind"] = "row_reduction"; }) ==
        f + why);
  CHECK_THAT(error_with([&](Json& e) { tiles(e).erase("inner"); }), Catch::Contains("inner"));
  CHECK_THAT(error_with([&](Json& e) { tiles(e)["elementwise"] = 1; }),
             Catch::Contains("elementwise"));

  // Odd extents that run element by element: written only when so.
  s.tile_elementwise = true;
  text = to_json(m);
  CHECK(Json::parse(text)["kernels"][0]["steps"][0]["tiles"] ==
        Json::parse(R"({"across": [1, 2], "inner": [3], "elementwise": true})"));
  back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(back->kernels[0].steps[0].tile_elementwise);
  CHECK(*back == m);
}

TEST_CASE("manifest: a step's approximation error round-trips, absent means none", "[runtime]") {
  Manifest m = sample();
  m.kernels[0].steps[0].approx_error = 0x1p-10;
  std::string text = to_json(m);
  CHECK(Json::parse(text)["kernels"][0]["steps"][0]["approx_error"] == 0x1p-10);
  Result<Manifest> back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == m);
  CHECK_FALSE(Json::parse(to_json(sample()))["kernels"][0]["steps"][0].contains("approx_error"));
  for (double bad_value : {-0.5, 1.0}) {
    Json j = Json::parse(text);
    j["kernels"][0]["steps"][0]["approx_error"] = bad_value;
    Result<Manifest> bad = parse_manifest(j.dump(), kOrigin);
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(bad.message(), Catch::Contains("approx_error"));
  }
}

TEST_CASE("manifest: pointwise general entries (format 11) round-trip and are checked",
          "[runtime]") {
  Manifest m = sample();
  Variant& v = m.kernels[0].steps[0].variants[1];
  v.general = {"softmax_s0_v1_general", 4};
  const std::string text = to_json(m);
  Result<Manifest> back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == m);
  Json j = Json::parse(text);
  CHECK(variant_json(j, 1)["general"] ==
        Json({{"entry", "softmax_s0_v1_general"}, {"row_multiple", 4}}));
  CHECK_FALSE(variant_json(j, 0).contains("general"));  // written only when there is one
  // A version 10 bundle has none: each variant's one entry serves every launch.
  Json v10 = sample_json();
  v10["version"] = 10;
  Result<Manifest> old = parse_manifest(v10.dump(), kOrigin);
  REQUIRE(old.ok());
  CHECK(old->kernels[0].steps[0].variants[1].general.entry.empty());
  const std::string g1 = "bundle/manifest.json: kernels[0].steps[0].variants[1].general";
  auto with_general = [](Json& j, Json g) { variant_json(j, 1)["general"] = std::move(g); };
  CHECK(error_after([&](Json& j) {
          with_general(j, {{"entry", "softmax_s0_v1"}, {"row_multiple", 4}});
        }) == g1 + ".entry: expected an entry other than the variant's own (softmax_s0_v1)");
  CHECK(error_after([&](Json& j) {
          with_general(j, {{"entry", "g"}, {"row_multiple", -1}});
        }).rfind(g1 + ".row_multiple: ", 0) == 0);
  CHECK(error_after([&](Json& j) {
          with_general(j, {{"entry", ""}, {"row_multiple", 4}});
        }).rfind(g1 + ".entry: ", 0) == 0);
  CHECK(error_after([&](Json& j) {
          with_general(j, {{"entry", "g"}, {"row_multiple", 4}});
          j["kernels"][0]["steps"][0]["kind"] = "scan";
        }).find(g1 + ": expected a general entry only on a pointwise variant") !=
        std::string::npos);
  // Format 14: an outer reduction variant's (32-bit indices in its own entry, any rows).
  Manifest outer = sample();
  outer.kernels[0].steps[0].kind = StepKind::outer_reduction;
  outer.kernels[0].steps[0].variants[1].general = {"softmax_s0_v1_general", 0};
  Result<Manifest> outer_back = parse_manifest(to_json(outer), kOrigin);
  REQUIRE(outer_back.ok());
  CHECK(*outer_back == outer);
  const std::string why =
      ": expected a general entry only on a pointwise variant that neither tiles nor is strided, "
      "or on an outer reduction variant that is not strided, with any rows";
  for (const char* kind : {"outer_reduction", "row_reduction"}) {
    CHECK(error_after([&](Json& j) {
            with_general(j, {{"entry", "g"}, {"row_multiple", 4}});
            j["kernels"][0]["steps"][0]["kind"] = kind;
          }) == g1 + why);
  }
  CHECK(error_after([&](Json& j) {
          with_general(j, {{"entry", "g"}, {"row_multiple", 0}});
          j["kernels"][0]["steps"][0]["kind"] = "row_reduction";
        }) == g1 + why);
}

TEST_CASE(
    "a launch runs a variant's general entry past 32-bit indices (a reduction's rows x reduced "
    "or workspace words) or on rows that are not a multiple of its vectors",
    "[runtime]") {
  const GeneralForm none;
  CHECK_FALSE(runs_general(none, int64_t{1} << 40, 3));
  const GeneralForm rows{"e_general", 8};
  CHECK_FALSE(runs_general(rows, 2147483647, 8));
  CHECK(runs_general(rows, 2147483648, 8));
  CHECK(runs_general(rows, 4095, 4095));
  CHECK_FALSE(runs_general(rows, 4096 * 3, 4096));
  const GeneralForm any{"e_general", 0};
  CHECK_FALSE(runs_general(any, 4095, 4095));
  CHECK(runs_general(any, 2147483648, 1));
  // A reduction's elements: rows x reduced, or its workspace's 32-bit words, whichever is more.
  CHECK(launch_elements(7, 1, 0) == 7);
  CHECK(launch_elements(65536, 32768, 0) == 2147483648);
  CHECK(launch_elements(65535, 32768, 0) == 2147450880);
  CHECK(launch_elements(3, 5, 4 * 2147483648LL) == 2147483648);
  CHECK(launch_elements(int64_t{1} << 40, int64_t{1} << 40, 0) ==
        std::numeric_limits<int64_t>::max());
  CHECK_FALSE(runs_general(any, launch_elements(65535, 32768, 4096), 1));
  CHECK(runs_general(any, launch_elements(65536, 32768, 0), 1));
  CHECK(runs_general(any, launch_elements(16, 16, 4 * 2147483648LL), 1));
}

TEST_CASE("manifest: strided inputs and variants (format 8) round-trip, older bundles have none",
          "[runtime]") {
  Manifest m = sample();
  m.kernels[0].params[0].strided = true;
  Variant sv = variant(3, false, 1);
  sv.strided = true;
  sv.align_bytes = 1;
  m.kernels[0].steps[0].variants.push_back(sv);
  const std::string text = to_json(m);
  Result<Manifest> back = parse_manifest(text, kOrigin);
  REQUIRE(back.ok());
  CHECK(*back == m);
  Json j = Json::parse(text);
  CHECK(j["kernels"][0]["params"][0]["strided"] == true);
  CHECK_FALSE(j["kernels"][0]["params"][1].contains("strided"));  // written only when set
  CHECK(j["kernels"][0]["steps"][0]["variants"][3]["strided"] == true);
  CHECK_FALSE(j["kernels"][0]["steps"][0]["variants"][0].contains("strided"));
  // A version 7 bundle has no "strided": every tensor is contiguous.
  Json v7 = sample_json();
  v7["version"] = 7;
  Result<Manifest> old = parse_manifest(v7.dump(), kOrigin);
  REQUIRE(old.ok());
  CHECK(*old == sample());
  // A strided parameter is a tensor input of rank 1 or more.
  const std::string p2 = "bundle/manifest.json: kernels[0].params[2].strided: ";
  CHECK(error_after([](Json& j) { j["kernels"][0]["params"][2]["strided"] = true; }) ==
        p2 + "a strided parameter is a tensor input of rank 1 or more");
  CHECK(error_after([](Json& j) {
          Json& p = j["kernels"][0]["params"][0];
          p["shape"] = Json::array();
          p["strided"] = true;
        }) ==
        "bundle/manifest.json: kernels[0].params[0].strided: a strided parameter is a "
        "tensor input of rank 1 or more");
  // A strided variant needs strided parameters, and is scalar, alone in its step, not a tier.
  const std::string v0 = "bundle/manifest.json: kernels[0].steps[0].variants[0].strided: ";
  CHECK(error_after([](Json& j) {
          j["kernels"][0]["steps"][0]["variants"][0]["strided"] = true;
        }) == v0 + "a strided variant in a kernel without strided parameters");
  auto strided_kernel = [](Json& j) { j["kernels"][0]["params"][0]["strided"] = true; };
  CHECK(error_after([&](Json& j) {
          strided_kernel(j);
          j["kernels"][0]["steps"][0]["variants"][1]["strided"] = true;  // align_bytes 16
        }) ==
        "bundle/manifest.json: kernels[0].steps[0].variants[1].strided: a strided variant is "
        "scalar (align_bytes 1), neither split nor staged but as a tile (stage.row_align, "
        "stage.vec 1), in a pointwise or reduction step");
  CHECK(error_after([&](Json& j) {
          strided_kernel(j);
          Json& vs = j["kernels"][0]["steps"][0]["variants"];
          vs[0]["strided"] = true;
          vs[0]["align_bytes"] = 1;
          Json again = vs[0];
          again["id"] = 3;
          again["is_default"] = false;
          vs.push_back(again);
        }) ==
        "bundle/manifest.json: kernels[0].steps[0].variants[3].strided: a step has at most one "
        "strided variant without a row limit (max_reduced)");
}

TEST_CASE("manifest: a strided variant that tiles (format 9) round-trips, staging otherwise fails",
          "[runtime]") {
  // A row reduction's step (staging is theirs only).
  auto as_rows = [](Manifest m) {
    Step& s = m.kernels[0].steps[0];
    s.kind = StepKind::row_reduction;
    s.space = {Dim::symbol("M")};
    s.reduced = {Dim::symbol("N")};
    return m;
  };
  auto rows_json = [&] { return Json::parse(to_json(as_rows(sample()))); };
  Manifest m = as_rows(sample());
  m.kernels[0].params[0].strided = true;
  Variant sv = variant(3, false, 1);
  sv.strided = true;
  sv.align_bytes = 1;
  sv.stage = {2, 8, 1, 128};
  m.kernels[0].steps[0].variants.push_back(sv);
  const std::string text = to_json(m);
  Result<Manifest> back = parse_manifest(text, kOrigin);
  INFO(back.message());
  REQUIRE(back.ok());
  CHECK(*back == m);
  Json j = Json::parse(text);
  CHECK(j["kernels"][0]["steps"][0]["variants"][3]["stage"]["row_align"] == 128);
  // A version 8 bundle reads as before (no tiles).
  Json v8 = sample_json();
  v8["version"] = 8;
  Result<Manifest> old = parse_manifest(v8.dump(), kOrigin);
  REQUIRE(old.ok());
  CHECK(*old == sample());
  // A strided variant stages only as a tile: row_align set, vec 1.
  auto tiled = [](Json& j, int64_t row_align, int64_t vec) {
    j["kernels"][0]["params"][0]["strided"] = true;
    Json& v = j["kernels"][0]["steps"][0]["variants"][0];
    v["strided"] = true;
    v["align_bytes"] = 1;
    v["stage"] = {{"bytes_per_element", 2}, {"rows_per_block", 8}, {"vec", vec}};
    if (row_align > 0) v["stage"]["row_align"] = row_align;
  };
  const std::string v0 = "bundle/manifest.json: kernels[0].steps[0].variants[0].strided: ";
  const std::string why =
      "a strided variant is scalar (align_bytes 1), neither split nor staged but as a tile "
      "(stage.row_align, stage.vec 1), in a pointwise or reduction step";
  CHECK(error_after([&](Json& j) { tiled(j, 0, 1); }, rows_json()) == v0 + why);
  CHECK(error_after([&](Json& j) { tiled(j, 128, 8); }, rows_json()) == v0 + why);
  CHECK(error_after([&](Json& j) { tiled(j, 128, 1); }, rows_json()) == "(accepted)");
  // Strided variants for rows of up to max_reduced elements, beside exactly one for any rows.
  auto strided_at = [](Json& j, int v, int64_t max_reduced) {
    Json& x = j["kernels"][0]["steps"][0]["variants"][v];
    x["strided"] = true;
    x["align_bytes"] = 1;
    x["max_reduced"] = max_reduced;
  };
  CHECK(error_after(
            [&](Json& j) {
              tiled(j, 128, 1);
              strided_at(j, 1, 2048);
            },
            rows_json()) == "(accepted)");
  const std::string vs = "bundle/manifest.json: kernels[0].steps[0].variants";
  CHECK(error_after(
            [&](Json& j) {
              tiled(j, 128, 1);
              j["kernels"][0]["steps"][0]["variants"][0]["max_reduced"] = 2048;
            },
            rows_json()) ==
        vs + ": strided variants without one for rows of any length (max_reduced 0)");
  CHECK(error_after(
            [&](Json& j) {
              tiled(j, 128, 1);
              strided_at(j, 1, 0);
            },
            rows_json()) ==
        vs + "[1].strided: a step has at most one strided variant without a row limit "
             "(max_reduced)");
}
