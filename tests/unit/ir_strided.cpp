// Strided inputs (`x: f32[M, N] strided`, docs/language.md "Strided inputs"): parsing, the
// canonical printer's round trip, located errors, the kernel plan's strided variant and its
// rule, the compiled entries' stride parameters, and the launch's pure checks and choice
// (runtime/launch.h) on a compiled manifest, without a GPU.
#include <catch2/catch.hpp>

#include "bundle/rule.h"
#include "compiler/compile.h"
#include "compiler/kernel_plan.h"
#include "ir/text.h"
#include "runtime/launch.h"
#include "test_support.h"

using namespace kiln;
using kiln::testing::check_parse_error;

namespace {

std::string plan_error(const std::string& src) {
  Program p = parse_program(src);
  try {
    plan_kernel(p.kernels[0]);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(planned)";
}

const char* kLayernorm =
    "kernel ln(x: f32[M, N] strided, w: f32[N]) -> (y: f32[M, N]) {\n"
    "  mean[i] = sum(x[i, j], j) / N\n"
    "  d[i, j] = x[i, j] - mean[i]\n"
    "  var[i] = sum(d[i, j] * d[i, j], j) / N\n"
    "  y[i, j] = d[i, j] * rsqrt(var[i] + 1e-05) * w[j]\n"
    "}\n";

}  // namespace

TEST_CASE("strided inputs parse, print after the shape and round-trip", "[ir]") {
  const std::string src =
      "kernel k(x: f32[M, N] strided, b: bf16[N] strided, c: f32[N]) -> (y: f32[M, N]) {\n"
      "  y[i, j] = x[i, j] + b[j] + c[j]\n"
      "}\n";
  Program p = parse_program(src);
  const KernelDef& k = p.kernels[0];
  CHECK(k.inputs[0].strided);
  CHECK(k.inputs[1].strided);
  CHECK_FALSE(k.inputs[2].strided);
  CHECK_FALSE(k.outputs[0].strided);
  CHECK(print(p) == src);
  CHECK(parse_program(print(p)) == p);
  // The flag is part of the kernel (and of its content hash).
  Program plain = parse_program(
      "kernel k(x: f32[M, N], b: bf16[N] strided, c: f32[N]) -> (y: f32[M, N]) {\n"
      "  y[i, j] = x[i, j] + b[j] + c[j]\n"
      "}\n");
  CHECK_FALSE(plain == p);
  CHECK(content_hash(plain.kernels[0]) != content_hash(k));
  // `strided` is a word only after a shape: a tensor may still be called strided.
  CHECK_NOTHROW(parse_program("kernel k(strided: f32[N]) -> (y: f32[N]) { y[i] = strided[i] }"));
}

TEST_CASE("strided on a scalar, an output or a rank-0 tensor is a located error", "[ir]") {
  check_parse_error("kernel k(x: f32[N], eps: f32 strided) -> (y: f32[N]) { y[i] = x[i] * eps }",
                    "scalar 'eps' cannot be strided: only tensors have strides", 1, 30);
  check_parse_error("kernel k(x: f32[N]) -> (y: f32[N] strided) { y[i] = x[i] }",
                    "output 'y' cannot be strided (not supported yet): outputs are written "
                    "contiguously",
                    1, 35);
  check_parse_error("kernel k(c: f32[] strided) -> (y: f32[N]) { y[i] = c[] }",
                    "'c' has rank 0: it has no strides", 1, 19);
}

TEST_CASE("the verifier refuses strided outputs and scalars built through the API", "[ir]") {
  Program p = parse_program("kernel k(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] }");
  p.kernels[0].outputs[0].strided = true;
  try {
    verify(p.kernels[0]);
    FAIL("expected an error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) ==
          "'y' cannot be strided: only tensor inputs of rank 1 or more take strides");
  }
}

TEST_CASE("a step that reads a strided input gets its strided variants, last, and a rule line",
          "[compiler]") {
  Program p = parse_program(kLayernorm);
  std::unique_ptr<KernelPlan> plan = plan_kernel(p.kernels[0]);
  REQUIRE(plan->steps.size() == 1);
  const StepPlan& st = plan->steps[0];
  REQUIRE(st.strided_variant == static_cast<int>(st.variants.size()) - 1);
  // x[i, j] is read at an element of the row: rows the scalar variant holds (256 elements) run
  // it; longer ones a tile (4 rows of f32 a block, 16 bytes a column), read with vectors, of
  // 256 threads for rows of up to kTileShortRows elements, 512 for any other. The manifest
  // gives the tile's memory.
  REQUIRE(std::count_if(st.variants.begin(), st.variants.end(),
                        [](const PlannedVariant& v) { return v.strided; }) == 3);
  const int longer = st.strided_variant, shorter = longer - 1, shortest = longer - 2;
  const PlannedVariant& scalar = st.variants[static_cast<size_t>(shortest)];
  const PlannedVariant& tile_short = st.variants[static_cast<size_t>(shorter)];
  const PlannedVariant& sv = st.variants.back();
  CHECK(scalar.strided);
  CHECK(std::get<ReductionConfig>(scalar.config).vec == 1);
  CHECK_FALSE(std::get<ReductionConfig>(scalar.config).stage);
  CHECK(scalar.max_reduced == 256);
  CHECK(scalar.stage == bundle::StageInfo{});
  for (const PlannedVariant* v : {&tile_short, &sv}) {
    CHECK(v->strided);
    CHECK_FALSE(v->is_default);
    const auto& c = std::get<ReductionConfig>(v->config);
    CHECK(c.strided);
    CHECK(c.stage);
    CHECK(c.vec == 4);
    CHECK(c.block / c.group == 4);
    CHECK_FALSE(c.split);
    CHECK(v->stage == bundle::StageInfo{4, 4, 1, 128});
  }
  CHECK(std::get<ReductionConfig>(tile_short.config).block == 256);
  CHECK(std::get<ReductionConfig>(sv.config).block == 512);
  CHECK(tile_short.max_reduced == kTileShortRows);  // the strided variants' own tiers
  CHECK(sv.max_reduced == 0);
  CHECK(st.tile.bytes_per_element == 4);
  CHECK(st.tile.narrowest == 4);
  CHECK_THAT(
      explain_rule(*plan, 0, ""),
      Catch::StartsWith("strides of x not the contiguous ones:\n  N <= 256: variant " +
                        std::to_string(shortest) +
                        " (block=128 group=32 items=8 strided=1 vec=1), 4 rows per block: scalar "
                        "loads at sum(index * stride) in 64 bits, the row on chip\n  N <= 2048: "
                        "variant " +
                        std::to_string(shorter) +
                        " (block=256 group=64 items=2 stage=1 strided=1 vec=4), 4 rows per block, "
                        "tiled\n  else: variant " +
                        std::to_string(longer) + " (block=512 group=128"));
  // The manifest carries them; the runtime's rule finds them, apart from the usual tiers.
  const bundle::Step written = manifest_step(*plan, 0, {"sm_90"});
  CHECK(written.variants.back().strided);
  const bundle::StepRule rule =
      bundle::step_rule(written, std::vector<bool>(written.variants.size(), true), {132, true});
  CHECK(rule.reads_strided);
  CHECK(rule.strided == longer);
  CHECK(rule.strided_tiers ==
        std::vector<std::pair<int64_t, int>>{{256, shortest}, {kTileShortRows, shorter}});
  for (const auto& [limit, v] : rule.tiers) CHECK(v < shortest);
  CHECK(bundle::strided_variant(rule, 1) == shortest);
  CHECK(bundle::strided_variant(rule, 256) == shortest);
  CHECK(bundle::strided_variant(rule, 257) == shorter);
  CHECK(bundle::strided_variant(rule, kTileShortRows) == shorter);
  CHECK(bundle::strided_variant(rule, kTileShortRows + 1) == longer);
  CHECK(rule.chosen == st.default_variant);
  // --default-only keeps the strided variants beside the default and its odd-row twin.
  const bundle::Step lean = manifest_step(*plan, 0, {"sm_90"}, true);
  REQUIRE(lean.variants.size() == 5);
  CHECK(lean.variants[0].is_default);
  CHECK(lean.variants[0].odd_rows == 1);
  CHECK(lean.variants[1].config.at("shift") == 1);
  CHECK(lean.variants[2].strided);
  CHECK(lean.variants[2].max_reduced == 256);
  CHECK(lean.variants[3].strided);
  CHECK(lean.variants[3].max_reduced == kTileShortRows);
  CHECK(lean.variants[4].strided);
}

TEST_CASE("steps that do not read a strided input get no strided variant", "[compiler]") {
  Program p = parse_program(
      "kernel k(x: f32[M, N] strided, z: f32[M]) -> (y: f32[M, N], s: f32[M]) {\n"
      "  y[i, j] = x[i, j] * 2.0\n"
      "  s[i] = z[i] + 1.0\n"
      "}\n");
  std::unique_ptr<KernelPlan> plan = plan_kernel(p.kernels[0]);
  int with = 0;
  for (const StepPlan& st : plan->steps) with += st.strided_variant >= 0;
  CHECK(with == 1);
}

TEST_CASE("contractions and scans refuse strided inputs at the parameter", "[compiler]") {
  CHECK(plan_error("kernel mm(a: f16[M, K] strided, b: f16[K, N]) -> (c: f32[M, N]) {\n"
                   "  c[i, j] = sum(f32(a[i, k]) * f32(b[k, j]), k)\n"
                   "}\n") ==
        "strided input 'a' in a kernel with a contraction (not supported yet): declare it "
        "without 'strided'");
  CHECK(plan_error("kernel cs(x: f32[M, N] strided) -> (y: f32[M, N]) {\n"
                   "  y[i, j] = cumsum(x[i, j], j)\n"
                   "}\n") ==
        "strided input 'x' in a kernel with a scan (not supported yet): declare it without "
        "'strided'");
}

TEST_CASE("every entry of a kernel with strided inputs takes their strides, last", "[compiler]") {
  Program p = parse_program(kLayernorm);
  CompileOptions opts;
  opts.archs = {"sm_90"};
  opts.all_variants = false;
  opts.assemble = false;
  opts.jobs = 1;
  CompiledBundle b = compile_program(p, opts);
  const bundle::KernelInfo& k = b.manifest.kernels[0];
  CHECK(k.params[0].strided);
  CHECK_FALSE(k.params[1].strided);
  // The default, its odd-row twin and the strided variants (short rows, longer, any rows).
  REQUIRE(k.steps[0].variants.size() == 5);
  for (const bundle::Variant& v : k.steps[0].variants) {
    const std::string& ptx = b.files.at(v.images[0].ptx);
    // x, w, y, M, N, then x's two strides.
    CHECK(ptx.find(v.entry + "_param_6") != std::string::npos);
    CHECK(ptx.find(v.entry + "_param_7") == std::string::npos);
  }
  for (int v : {2, 3, 4}) {
    CHECK(k.steps[0].variants[v].strided);
    CHECK(k.steps[0].variants[v].align_bytes == 1);
  }
}

TEST_CASE("launch checks: stride counts, negative strides, footprints, the strided choice",
          "[runtime]") {
  Program p = parse_program(kLayernorm);
  std::unique_ptr<KernelPlan> plan = plan_kernel(p.kernels[0]);
  bundle::KernelInfo info;
  info.name = "ln";
  info.params = {{"x", DType::f32, p.kernels[0].inputs[0].shape, false, false, true},
                 {"w", DType::f32, p.kernels[0].inputs[1].shape, false},
                 {"y", DType::f32, p.kernels[0].outputs[0].shape, true}};
  info.symbols = {"M", "N"};
  info.steps = {manifest_step(*plan, 0, {"sm_90"})};
  const launch::EncodedKernel enc = launch::encode(info);
  CHECK(launch::stride_count(info) == 2);
  const std::vector<CUdeviceptr> ptrs = {0x10000, 0x90000, 0xa0000};
  const std::vector<int64_t> syms = {7, 33};  // M = 7, N = 33
  auto check = [&](std::vector<int64_t> strides) {
    Status s = launch::check_arguments(info, enc, ptrs, syms, strides);
    return s.ok() ? std::string("ok") : s.message();
  };
  CHECK(check({}) == "ok");
  CHECK(check({33, 1}) == "ok");
  CHECK(check({1, 7}) == "ok");  // x.t() of a [33, 7] tensor
  CHECK(check({0, 1}) == "ok");  // a row expanded over M
  CHECK(check({0, 0}) == "ok");  // one element everywhere
  CHECK(check({33}) == "ln: expected 2 strides (2 of x), or none for contiguous tensors, got 1");
  CHECK(check({33, -1}) ==
        "ln: argument 1 (x): stride -1 of dimension 1 is negative; negative strides are not "
        "supported (pass the flipped view's base and its absolute strides through a "
        "contiguous copy)");
  CHECK(check({int64_t{1} << 61, 1}) ==
        "ln: argument 1 (x): strides [2305843009213693952, 1] of shape [M, N] = [7, 33] reach "
        "past int64 bytes");
  // The footprint is what the overlap check uses: y right after x's footprint is fine, inside
  // it is not (x spans (7 - 1) * 40 + 32 + 1 = 273 floats with rows padded to 40).
  std::vector<CUdeviceptr> near = ptrs;
  near[2] = ptrs[0] + 273 * 4;
  CHECK(launch::check_arguments(info, enc, near, syms, std::vector<int64_t>{40, 1}).ok());
  near[2] = ptrs[0] + 272 * 4;
  CHECK(launch::check_arguments(info, enc, near, syms, std::vector<int64_t>{40, 1}).message() ==
        "ln: argument 3 (y) overlaps argument 1 (x); outputs may not alias other arguments");

  // Contiguous strides (extent-1 dimensions take any) keep the usual choice; others run the
  // strided variant, and an explicit other choice is refused.
  std::vector<int64_t> out(2);
  CHECK(launch::effective_strides(info, enc, syms, {}, out));
  CHECK(out == std::vector<int64_t>{33, 1});
  CHECK(launch::effective_strides(info, enc, syms, std::vector<int64_t>{33, 1}, out));
  CHECK_FALSE(launch::effective_strides(info, enc, syms, std::vector<int64_t>{1, 7}, out));
  CHECK(out == std::vector<int64_t>{1, 7});
  const std::vector<int64_t> one_row = {1, 33};
  CHECK(launch::effective_strides(info, enc, one_row, std::vector<int64_t>{12345, 1}, out));
  CHECK_FALSE(launch::effective_strides(info, enc, syms, std::vector<int64_t>{0, 1}, out));
  const std::vector<bundle::StepRule> rules = {bundle::step_rule(
      info.steps[0], std::vector<bool>(info.steps[0].variants.size(), true), {132, true})};
  // Rows of 33: the strided variant for the shortest rows (scalar); of 1000: the 256-thread
  // tile; of 4096: the one for any rows.
  const int longer = plan->steps[0].strided_variant, shorter = longer - 2;
  std::vector<int> v = {rules[0].chosen};
  REQUIRE(launch::choose_strided(info, enc, rules, syms, v, false).ok());
  CHECK(v[0] == shorter);
  const std::vector<int64_t> long_rows = {7, 4096};
  v = {rules[0].chosen};
  REQUIRE(launch::choose_strided(info, enc, rules, long_rows, v, false).ok());
  CHECK(v[0] == longer);
  const std::vector<int64_t> mid_rows = {7, 1000};
  v = {rules[0].chosen};
  REQUIRE(launch::choose_strided(info, enc, rules, mid_rows, v, false).ok());
  CHECK(v[0] == longer - 1);
  std::vector<int> explicit_choice = {0};
  CHECK(launch::choose_strided(info, enc, rules, syms, explicit_choice, true).message() ==
        "ln: step 0 (ln_s0): variant 0 reads the strided inputs as contiguous tensors, but their "
        "strides are not the contiguous ones (variant " +
            std::to_string(shorter) + " reads them through strides)");
  explicit_choice = {longer};  // another strided variant: taken as chosen
  CHECK(launch::choose_strided(info, enc, rules, syms, explicit_choice, true).ok());
  CHECK(explicit_choice[0] == longer);
  std::vector<bool> loadable(info.steps[0].variants.size(), true);
  loadable.back() = false;
  const std::vector<bundle::StepRule> missing = {bundle::step_rule(info.steps[0], loadable, {})};
  v = {rules[0].chosen};
  CHECK(launch::choose_strided(info, enc, missing, syms, v, false).ok());  // the short one loaded
  CHECK(launch::choose_strided(info, enc, missing, long_rows, v, false).message() ==
        "ln: step 0 (ln_s0): strides that are not the contiguous ones need the step's strided "
        "variant, which cannot run here");
}

TEST_CASE("the strided example plans and prints a strided rule for every kernel", "[compiler]") {
  Program p = parse_program(testing::read_example("strided"));
  for (const KernelDef& k : p.kernels) {
    std::unique_ptr<KernelPlan> plan = plan_kernel(k);
    for (const StepPlan& st : plan->steps) {
      INFO(k.name);
      CHECK(st.strided_variant >= 0);
    }
    CHECK_THAT(print_plan(*plan), Catch::Contains("strided=1"));
  }
}
