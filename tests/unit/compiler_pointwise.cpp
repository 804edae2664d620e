// Unit tests of the compiler's pointwise path: planning (inlining, grouping by iteration
// space), the config space, vector widths, and whole-program compilation into a manifest that
// the runtime's reader accepts.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <functional>
#include <set>

#include "bundle/manifest.h"
#include "bundle/rule.h"
#include "compiler/codegen.h"
#include "compiler/compile.h"
#include "compiler/config.h"
#include "compiler/kernel_plan.h"
#include "compiler/plan.h"
#include "ir/text.h"

using namespace kiln;

namespace {

// Names of the tensors an expression loads.
std::set<std::string> loaded(const Expr& e) {
  std::set<std::string> out;
  std::function<void(const Expr&)> visit = [&](const Expr& x) {
    if (const Load* ld = x.as<Load>()) out.insert(ld->tensor);
    for_each_child(x, visit);
  };
  visit(e);
  return out;
}

const char* kDropoutBf16 = R"(
kernel dropout(x: bf16[M, N], p: f32, seed: i64, offset: i64) -> (y: bf16[M, N]) {
  y[i, j] = x[i, j] * f32(rand(seed, offset) >= p) * (1.0 / (1.0 - p))
}
)";

const char* kBiasGelu = R"(
kernel bias_gelu(x: bf16[M, N], b: bf16[N]) -> (y: bf16[M, N]) {
  h[i, j] = x[i, j] + b[j]
  y[i, j] = 0.5 * h[i, j] * (1.0 + erf(h[i, j] * 0.70710678))
}
)";

}  // namespace

TEST_CASE("temporaries are inlined and never loaded", "[compiler]") {
  Program p = parse_program(kBiasGelu);
  std::vector<PointwiseStep> steps = plan_pointwise(p.kernels[0]);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].vars == std::vector<std::string>{"s0", "s1"});
  CHECK(steps[0].space == std::vector<Dim>{Dim::symbol("M"), Dim::symbol("N")});
  REQUIRE(steps[0].stores.size() == 1);
  CHECK(steps[0].stores[0].param == 2);
  CHECK(loaded(steps[0].stores[0].value) == std::set<std::string>{"x", "b"});
}

TEST_CASE("tanh and erf are approximate only where every output of the step is 16-bit",
          "[compiler]") {
  auto approx = [](const char* src) {
    Program p = parse_program(src);
    std::vector<PointwiseStep> steps = plan_pointwise(p.kernels[0]);
    REQUIRE(steps.size() == 1);
    return steps[0].fast_functions;
  };
  CHECK(approx("kernel k(x: f32[N]) -> (y: bf16[N]) { y[i] = tanh(x[i]) }"));
  CHECK(
      approx("kernel k(x: bf16[N]) -> (y: f16[N], z: bf16[N]) {\n"
             "  y[i] = tanh(x[i])\n  z[i] = x[i] * 2.0\n}"));
  // An f32 output beside it, an f32 output, or no tanh: libdevice (or nothing to approximate).
  CHECK_FALSE(
      approx("kernel k(x: bf16[N]) -> (y: bf16[N], z: f32[N]) {\n"
             "  y[i] = tanh(x[i])\n  z[i] = x[i] * 2.0\n}"));
  CHECK_FALSE(approx("kernel k(x: bf16[N]) -> (y: f32[N]) { y[i] = tanh(x[i]) }"));
  CHECK_FALSE(approx("kernel k(x: bf16[N]) -> (y: bf16[N]) { y[i] = exp(x[i]) }"));
  // erf as tanh of a polynomial, under the same rule.
  CHECK(approx(kBiasGelu));
  CHECK_FALSE(approx("kernel k(x: bf16[N]) -> (y: f32[N]) { y[i] = erf(x[i]) }"));
  CHECK(approximated_functions({parse_program("kernel k(x: f32[N]) -> (y: f32[N]) {\n"
                                              "  y[i] = erf(x[i]) + tanh(x[i])\n}")
                                    .kernels[0]
                                    .body[0]
                                    .value}) == "tanh and erf");
}

TEST_CASE("explain names the approximated functions of a step and of a contraction epilogue",
          "[compiler]") {
  auto explained = [](const char* src) {
    Program p = parse_program(src);
    std::unique_ptr<KernelPlan> plan = plan_kernel(p.kernels[0]);
    std::string text;
    for (size_t si = 0; si < plan->steps.size(); ++si) {
      text += explain_rule(*plan, si, "") +
              fmt::format("approx_error={}\n", manifest_step(*plan, si, {}).approx_error);
    }
    return text;
  };
  using Catch::Contains;
  const std::string gelu = explained(kBiasGelu);
  CHECK_THAT(gelu, Contains("erf runs as tanh.approx.f32 of an odd polynomial"));
  CHECK_THAT(gelu, !Contains("tanh runs"));
  CHECK_THAT(gelu, Contains(fmt::format("approx_error={}", kApproxError)));
  // A contraction's epilogue: bf16 out approximates, f32 out does not.
  const char* linear =
      "kernel k(x: bf16[M, K], w: bf16[K, N]) -> (y: {}[M, N]) {{\n"
      "  h[i, j] = sum(x[i, k] * w[k, j], k)\n"
      "  y[i, j] = h[i, j] * (1.0 + tanh(h[i, j]))\n}}";
  const std::string bf16 = explained(fmt::format(fmt::runtime(linear), "bf16").c_str());
  CHECK_THAT(bf16, Contains("tanh runs on tanh.approx.f32"));
  CHECK_THAT(bf16, Contains(fmt::format("approx_error={}", kApproxError)));
  const std::string f32 = explained(fmt::format(fmt::runtime(linear), "f32").c_str());
  CHECK_THAT(f32, !Contains("tanh.approx"));
  CHECK_THAT(f32, Contains("approx_error=0"));
}

TEST_CASE("the work estimate counts each distinct node per element over the bytes moved",
          "[compiler]") {
  auto work = [](const char* src) {
    Program p = parse_program(src);
    std::vector<PointwiseStep> steps = plan_pointwise(p.kernels[0]);
    REQUIRE(steps.size() == 1);
    return steps[0].work_per_byte;
  };
  // Loads of x and b, the add, the store (4 instructions) over x's and y's 8 bytes: the bias is
  // a broadcast, read from cache.
  CHECK(work("kernel k(x: f32[M, N], b: f32[N]) -> (y: f32[M, N]) { y[i, j] = x[i, j] + b[j] }") ==
        0.5);
  // erf is 20, 7 approximated into a 16-bit output; x * x written twice is one node.
  CHECK(work("kernel k(x: f32[N]) -> (y: f32[N]) { y[i] = erf(x[i]) }") == 22.0 / 8);
  CHECK(work("kernel k(x: bf16[N]) -> (y: bf16[N]) { y[i] = erf(x[i]) }") == 11.0 / 4);
  CHECK(work("kernel k(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] * x[i] + x[i] * x[i] }") == 4.0 / 8);
  // A scale the same at every point (1 / (1 - p)) costs nothing per element; a division by a
  // loaded value costs 10.
  CHECK(work("kernel k(x: f32[N], p: f32) -> (y: f32[N]) { y[i] = x[i] * (1.0 / (1.0 - p)) }") ==
        3.0 / 8);
  CHECK(work("kernel k(x: f32[N], z: f32[N]) -> (y: f32[N]) { y[i] = x[i] / z[i] }") == 13.0 / 12);
  // 16-bit loads and stores count their conversions.
  CHECK(work("kernel k(x: bf16[N]) -> (y: bf16[N]) { y[i] = x[i] * 2.0 }") == 5.0 / 4);
  // Dropout in bf16 is heavy, its f32 form is not, nor (erf approximated) bias + erf-GELU in
  // bf16, nor its tanh form.
  CHECK(work(kBiasGelu) < kHeavyWorkPerByte);
  CHECK(work(kDropoutBf16) >= kHeavyWorkPerByte);
  const char* dropout =
      "kernel k(x: {0}[M, N], p: f32, seed: i64, offset: i64) -> (y: {0}[M, N]) {{\n"
      "  y[i, j] = x[i, j] * f32(rand(seed, offset) >= p) * (1.0 / (1.0 - p))\n}}";
  CHECK(work(fmt::format(fmt::runtime(dropout), "f32").c_str()) < kHeavyWorkPerByte);
  CHECK(work("kernel k(x: bf16[M, N], b: bf16[N]) -> (y: bf16[M, N]) {\n"
             "  h[i, j] = x[i, j] + b[j]\n"
             "  y[i, j] = 0.5 * h[i, j] * (1.0 + tanh(0.79788456 * (h[i, j] + 0.044715 * h[i, j] "
             "* h[i, j] * h[i, j])))\n}") < kHeavyWorkPerByte);
}

TEST_CASE("heavy flat steps run four vectors in flight from many elements per SM", "[compiler]") {
  auto rule_of = [](const char* src, const bundle::DeviceFacts& device, int64_t elements) {
    Program p = parse_program(src);
    std::unique_ptr<KernelPlan> plan = plan_kernel(p.kernels[0]);
    REQUIRE(plan->steps.size() == 1);
    const bundle::Step s = manifest_step(*plan, 0, {"sm_90"});
    const bundle::StepRule rule =
        bundle::step_rule(s, std::vector<bool>(s.variants.size(), true), device);
    return std::pair{static_cast<int>(rule.tiers.size()),
                     bundle::heuristic_variant(s, rule, elements, 1, device)};
  };
  const bundle::DeviceFacts h200{132, true};
  const int64_t many = kHeavyMinElementsPerSm * 132;
  const auto variant_of = [](const char* src, const PointwiseConfig& c) {
    Program p = parse_program(src);
    std::unique_ptr<KernelPlan> plan = plan_kernel(p.kernels[0]);
    const std::vector<PlannedVariant>& vs = plan->steps[0].variants;
    for (size_t v = 0; v < vs.size(); ++v) {
      if (std::get<PointwiseConfig>(vs[v].config) == c) return static_cast<int>(v);
    }
    return -1;
  };
  const int two = variant_of(kDropoutBf16, default_pointwise_config(8));
  const int four = variant_of(kDropoutBf16, heavy_pointwise_config(8));
  REQUIRE(two >= 0);
  REQUIRE(four >= 0);
  CHECK(rule_of(kDropoutBf16, h200, many) == std::pair{2, four});
  CHECK(rule_of(kDropoutBf16, h200, many - 132) == std::pair{2, two});
  CHECK(rule_of(kDropoutBf16, h200, 1) == std::pair{2, two});
  // On a GPU of 20 SMs the same count is many elements per SM.
  CHECK(rule_of(kDropoutBf16, {20, true}, kHeavyMinElementsPerSm * 20) == std::pair{2, four});
  // Light steps have no tiers; nor do tiled ones, however heavy (their tiles run).
  CHECK(
      rule_of("kernel k(x: bf16[M, N]) -> (y: bf16[M, N]) { y[i, j] = x[i, j] * 2.0 }", h200, many)
          .first == 0);
  const char* tiled = "kernel k(x: f32[N, M]) -> (y: f32[M, N]) { y[i, j] = erf(erf(x[j, i])) }";
  {
    Program p = parse_program(tiled);
    REQUIRE(plan_pointwise(p.kernels[0])[0].work_per_byte >= kHeavyWorkPerByte);
  }
  CHECK(rule_of(tiled, h200, many).first == 0);
}

TEST_CASE("outputs of one iteration space share a step, others get their own", "[compiler]") {
  Program p = parse_program(R"(
kernel k(x: f32[M, N], v: f32[N]) -> (y: f32[M, N], a: f32[N], z: f32[M, N], c: f32[N]) {
  y[i, j] = x[i, j] + v[j]
  a[j] = v[j] * 2.0
  z[p, q] = y[p, q] * x[p, q]
  c[j] = a[j] + 1.0
})");
  std::vector<PointwiseStep> steps = plan_pointwise(p.kernels[0]);
  REQUIRE(steps.size() == 2);
  REQUIRE(steps[0].stores.size() == 2);
  CHECK(steps[0].stores[0].param == 2);  // y
  CHECK(steps[0].stores[1].param == 4);  // z
  // z reads the output y back: it is recomputed from x and v, never loaded.
  CHECK(loaded(steps[0].stores[1].value) == std::set<std::string>{"x", "v"});
  REQUIRE(steps[1].stores.size() == 2);
  CHECK(steps[1].space == std::vector<Dim>{Dim::symbol("N")});
  CHECK(loaded(steps[1].stores[1].value) == std::set<std::string>{"v"});
}

TEST_CASE("a read-back of a bf16 output sees the rounded value", "[compiler]") {
  Program p = parse_program(R"(
kernel k(x: f32[N]) -> (y: bf16[N], z: f32[N]) {
  y[i] = x[i] * 3.0
  z[i] = y[i] + 1.0
})");
  std::vector<PointwiseStep> steps = plan_pointwise(p.kernels[0]);
  REQUIRE(steps.size() == 1);
  CHECK(print(steps[0].stores[1].value) == "bf16(x[s0] * 3.0) + 1.0");
}

TEST_CASE("plan_pointwise refuses reductions at their location", "[compiler]") {
  Program p =
      parse_program("kernel k(x: f32[M, N]) -> (s: f32[M]) {\n  s[i] = sum(x[i, j], j)\n}\n");
  try {
    plan_pointwise(p.kernels[0]);
    FAIL("expected a UserError");
  } catch (const UserError& e) {
    CHECK(e.loc() == SourceLoc{2, 10});
    CHECK_THAT(e.what(), Catch::Contains("'sum' is a reduction"));
  }
}

TEST_CASE("the pointwise config space", "[compiler]") {
  std::vector<PointwiseConfig> space = pointwise_config_space(4);
  CHECK(space.size() == 18);
  int scalar = 0;
  for (const PointwiseConfig& c : space) scalar += c.vec == 1;
  CHECK(scalar == 9);
  PointwiseConfig def = default_pointwise_config(4);
  CHECK(std::count(space.begin(), space.end(), def) == 1);
  CHECK(def.vec == 4);
  CHECK(def.elements_per_block() == 128 * 4 * 2);
  CHECK(pointwise_config_space(1).size() == 9);
}

TEST_CASE("vector width is 16 bytes of the narrowest contiguous tensor", "[compiler]") {
  auto width = [](const char* spec) {
    Program p = parse_program(spec);
    return max_vector_width(p.kernels[0], plan_pointwise(p.kernels[0])[0]);
  };
  CHECK(width("kernel k(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] }") == 4);
  CHECK(width("kernel k(x: bf16[N]) -> (y: bf16[N]) { y[i] = x[i] }") == 8);
  CHECK(width("kernel k(x: f32[N]) -> (y: f16[N]) { y[i] = x[i] }") == 8);
  // A transposed f16 read goes through tiles in vectors along its own rows: it narrows them.
  CHECK(width("kernel k(x: f16[N, M]) -> (y: f32[M, N]) { y[i, j] = x[j, i] }") == 8);
  // A broadcast f16 read without the innermost index is one scalar: it does not.
  CHECK(width("kernel k(x: f16[M], z: f32[M, N]) -> (y: f32[M, N]) { y[i, j] = x[i] + z[i, j] }") ==
        4);
}

namespace {

Tiling tiling_of(const char* spec) {
  Program p = parse_program(spec);
  std::vector<PointwiseStep> steps = plan_pointwise(p.kernels[0]);
  REQUIRE(steps.size() == 1);
  return steps[0].tiling;
}

}  // namespace

TEST_CASE("loads that disagree with the output on the contiguous index are tiled", "[compiler]") {
  // A 2-D transpose: x's last index is s0, not the innermost s1.
  Tiling t = tiling_of(
      "kernel k(x: f32[N, M], z: f32[M, N]) -> (y: f32[M, N]) { y[i, j] = x[j, i] + z[i, j] }");
  CHECK(t.across == 0);
  REQUIRE(t.loads.size() == 1);
  CHECK(t.loads[0] == TiledLoad{"x", {1, 0}, DType::f32});
  CHECK(t.smem_bytes_per_element() == 4);

  // [B, S, H, D] -> [B, H, D, S]: x's last index d (s2) is not the innermost s (s3).
  t = tiling_of(
      "kernel k(x: bf16[B, S, H, D]) -> (y: bf16[B, H, D, S]) { y[b, h, d, s] = x[b, s, h, d] }");
  CHECK(t.across == 2);
  REQUIRE(t.loads.size() == 1);
  CHECK(t.loads[0] == TiledLoad{"x", {0, 3, 1, 2}, DType::bf16});

  // [B, S, H, D] -> [B, H, S, D] keeps the contiguous index: rows, no tiles.
  CHECK_FALSE(tiling_of("kernel k(x: bf16[B, S, H, D]) -> (y: bf16[B, H, S, D]) {\n"
                        "  y[b, h, s, d] = x[b, s, h, d]\n}")
                  .tiled());
  // Broadcasts (no innermost index, or the innermost last) and 1-D steps are flat.
  CHECK_FALSE(
      tiling_of("kernel k(x: f32[M], v: f32[N]) -> (y: f32[M, N]) { y[i, j] = x[i] * v[j] }")
          .tiled());
  CHECK_FALSE(tiling_of("kernel k(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] }").tiled());
  // A repeated index is a gather.
  CHECK_FALSE(tiling_of("kernel k(x: f32[N, N]) -> (y: f32[N, N]) { y[i, j] = x[j, j] + x[i, i] }")
                  .tiled());
}

TEST_CASE("the tiled variable is the one whose transposed loads carry the most bytes",
          "[compiler]") {
  // a (f32) is contiguous along s0 and b, c (bf16) along s1: 4 bytes against 2 + 2, a wins
  // on the tie by coming first; with a third bf16 load along s1, s1 wins.
  const char* two = R"(
kernel k(a: f32[N, P, M], b: bf16[M, N, P], c: bf16[N, M, P]) -> (y: f32[M, P, N]) {
  y[i, j, l] = a[l, j, i] + f32(b[i, l, j]) + f32(c[l, i, j])
})";
  Tiling t = tiling_of(two);
  CHECK(t.across == 0);
  REQUIRE(t.loads.size() == 1);
  CHECK(t.loads[0].tensor == "a");
  t = tiling_of(R"(
kernel k(a: f32[N, P, M], b: bf16[M, N, P], c: bf16[N, M, P], d: bf16[N, M, P]) -> (y: f32[M, P, N]) {
  y[i, j, l] = a[l, j, i] + f32(b[i, l, j]) + f32(c[l, i, j]) * f32(d[l, i, j])
})");
  CHECK(t.across == 1);
  REQUIRE(t.loads.size() == 3);
  CHECK(t.loads[0].tensor == "b");
  CHECK(t.smem_bytes_per_element() == 6);
  // More than 12 bytes per tile element would not fit 64 x 64 tiles in 48 KiB: flat.
  CHECK_FALSE(tiling_of(R"(
kernel k(a: f32[N, M], b: f32[N, M], c: f32[N, M], d: f32[N, M]) -> (y: f32[M, N]) {
  y[i, j] = a[j, i] + b[j, i] + c[j, i] + d[j, i]
})")
                  .tiled());
}

TEST_CASE("odd extents run shifted vectors unless every load is a tiled 32-bit one", "[compiler]") {
  // Where the across extent is not a multiple of the vector (else the aligned-rows path runs,
  // below): a plain f32 transpose keeps the scalar path (measured faster); a bf16 one, one with
  // a contiguous read beside the tile, or one with a row read shift.
  Tiling t = tiling_of("kernel k(x: f32[N, M]) -> (y: f32[M, N]) { y[i, j] = x[j, i] }");
  CHECK_FALSE(t.odd_shifted);
  CHECK_FALSE(t.shifts(4, 64, 64));
  t = tiling_of("kernel k(x: bf16[N, M]) -> (y: bf16[M, N]) { y[i, j] = x[j, i] }");
  CHECK(t.odd_shifted);
  CHECK(t.shifts(8, 128, 128));
  CHECK(t.shifted_smem_bytes(8, 128, 128) == 136 * 136 * 2);
  CHECK_FALSE(t.shifts(1, 64, 64));  // scalar configs have no vectors to shift
  t = tiling_of(
      "kernel k(x: f32[N, M], z: f32[M, N]) -> (y: f32[M, N]) { y[i, j] = x[j, i] + z[i, j] }");
  CHECK(t.odd_shifted);
  CHECK(t.shifts(4, 64, 64));
  t = tiling_of(R"(
kernel k(x: f32[B, S, H, D], bias: f32[H, S]) -> (y: f32[B, H, D, S]) {
  y[b, h, d, s] = x[b, s, h, d] + bias[h, s]
})");
  CHECK(t.odd_shifted);
  // Three f32 tiled loads and a bf16 one: 64 x 64 tiles fit 48 KiB, the shifted path's 68 x 68
  // do not, so odd extents stay scalar.
  t = tiling_of(R"(
kernel k(a: f32[N, M], b: f32[N, M], c: f32[N, M], z: bf16[M, N]) -> (y: f32[M, N]) {
  y[i, j] = a[j, i] + b[j, i] + c[j, i] + f32(z[i, j])
})");
  REQUIRE(t.smem_bytes_per_element() == 12);
  CHECK(t.odd_shifted);
  CHECK(t.shifted_smem_bytes(4, 64, 64) > 48 * 1024);
  CHECK_FALSE(t.shifts(4, 64, 64));
  CHECK(t.shifts(4, 32, 32));
}

TEST_CASE("aligned input rows run the aligned-rows path where its tiles fit", "[compiler]") {
  // Every config with vectors, f32 alone included; Ti x (To + V) elements a tiled load.
  Tiling t = tiling_of("kernel k(x: f32[N, M]) -> (y: f32[M, N]) { y[i, j] = x[j, i] }");
  CHECK(t.aligned_rows(4, 64, 64));
  CHECK(t.rows_smem_bytes(4, 64, 64) == 64 * 68 * 4);
  CHECK_FALSE(t.aligned_rows(1, 64, 64));  // scalar configs: no vectors
  t = tiling_of("kernel k(x: bf16[N, M]) -> (y: bf16[M, N]) { y[i, j] = x[j, i] }");
  CHECK(t.aligned_rows(8, 128, 128));
  CHECK(t.rows_smem_bytes(8, 128, 128) == 128 * 136 * 2);
  CHECK_FALSE(t.aligned_rows(1, 128, 128));
  // Three f32 tiled loads and a bf16 one: 64 x 64 tiles fit 48 KiB, 64 x 68 do not.
  t = tiling_of(R"(
kernel k(a: f32[N, M], b: f32[N, M], c: f32[N, M], z: bf16[M, N]) -> (y: f32[M, N]) {
  y[i, j] = a[j, i] + b[j, i] + c[j, i] + f32(z[i, j])
})");
  CHECK(t.rows_smem_bytes(4, 64, 64) > 48 * 1024);
  CHECK_FALSE(t.aligned_rows(4, 64, 64));
  CHECK(t.aligned_rows(4, 32, 32));
}

TEST_CASE("tiled kernels are held to the registers of their loads in flight", "[compiler]") {
  // bf16 alone: the aligned-rows path's blocks are the most (64 x 128 tiles, 128 threads: 2 of
  // 8 x 8 elements a thread, 64 words), plus 32; an SM's quarters hold 5 warps of 96.
  Tiling t = tiling_of("kernel k(x: bf16[N, M]) -> (y: bf16[M, N]) { y[i, j] = x[j, i] }");
  CHECK(t.registers(8, 64, 128, 128) == 96);
  CHECK(t.blocks_per_sm(8, 64, 128, 128) == 5);
  CHECK(t.registers(8, 128, 128, 128) == 128);  // 3 blocks of 8 x 8 a thread: 96 words
  CHECK(t.blocks_per_sm(8, 128, 128, 128) == 4);
  CHECK(t.blocks_per_sm(8, 64, 64, 64) == 10);  // 96 registers, blocks of two warps
  CHECK(t.registers(1, 64, 64, 256) == 0);      // scalar configs keep ptxas's choice
  CHECK(t.blocks_per_sm(1, 64, 64, 256) == 0);
  // f32 alone runs odd extents element by element: 4 blocks of 4 x 4 elements, each with its
  // address, 192 words; the hold would allow 256 registers, so none is asked for.
  t = tiling_of("kernel k(x: f32[N, M]) -> (y: f32[M, N]) { y[i, j] = x[j, i] }");
  CHECK(t.registers(4, 64, 64, 64) == 224);
  CHECK(t.blocks_per_sm(4, 64, 64, 64) == 0);
  // A contiguous read beside the tile: step 4's 16 chunks of 4 elements of x and z, 128 words.
  t = tiling_of(
      "kernel k(x: f32[N, M], z: f32[M, N]) -> (y: f32[M, N]) { y[i, j] = x[j, i] + z[i, j] }");
  CHECK(t.other_bytes == 4);
  CHECK(t.registers(4, 64, 64, 64) == 160);
  CHECK(t.blocks_per_sm(4, 64, 64, 64) == 6);
}

TEST_CASE("variables every load reads consecutively are one dimension of the tiles", "[compiler]") {
  using Dims = std::vector<std::vector<int>>;
  // [B, S, H, D] -> [B, H, D, S]: h and d (s1, s2) follow each other in x and in y.
  Tiling t = tiling_of(
      "kernel k(x: bf16[B, S, H, D]) -> (y: bf16[B, H, D, S]) { y[b, h, d, s] = x[b, s, h, d] }");
  CHECK(t.joined == std::vector<bool>{false, false, true, false});
  CHECK(t.dims(4) == Dims{{0}, {1, 2}, {3}});
  // [A, B, C] -> [C, A, B]: a and b end the output's rows, a transpose of [A*B, C].
  t = tiling_of("kernel k(x: f32[A, B, C]) -> (y: f32[C, A, B]) { y[c, a, b] = x[a, b, c] }");
  CHECK(t.dims(3) == Dims{{0}, {1, 2}});
  // A load of h alone, d in another order, or a value of d's index keeps them apart.
  for (const char* apart : {
           "kernel k(x: f32[B, S, H, D], w: f32[H, S]) -> (y: f32[B, H, D, S]) {\n"
           "  y[b, h, d, s] = x[b, s, h, d] + w[h, s]\n}",
           "kernel k(x: f32[B, S, H, D], w: f32[D, H]) -> (y: f32[B, H, D, S]) {\n"
           "  y[b, h, d, s] = x[b, s, h, d] + w[d, h]\n}",
           "kernel k(x: f32[B, S, H, D]) -> (y: f32[B, H, D, S]) {\n"
           "  y[b, h, d, s] = x[b, s, h, d] + f32(d)\n}",
       }) {
    t = tiling_of(apart);
    REQUIRE(t.tiled());
    CHECK(t.joined.empty());
    CHECK(t.dims(4) == Dims{{0}, {1}, {2}, {3}});
  }
  // Loads that use neither (w[s]) do not keep them apart; b joins nothing (s follows it in x).
  t = tiling_of(
      "kernel k(x: f32[B, S, H, D], w: f32[S]) -> (y: f32[B, H, D, S]) {\n"
      "  y[b, h, d, s] = x[b, s, h, d] * w[s]\n}");
  CHECK(t.dims(4) == Dims{{0}, {1, 2}, {3}});
}

TEST_CASE("tiles of odd or short extents run the smaller tiles", "[compiler]") {
  // The runtime's rule (bundle/rule.h tiled_variant) on the manifest step the plan writes.
  auto config = [](const char* src, std::vector<int64_t> space) {
    Program p = parse_program(src);
    std::unique_ptr<KernelPlan> plan = plan_kernel(p.kernels[0]);
    REQUIRE(plan->steps.size() == 1);
    const bundle::Step s = manifest_step(*plan, 0, {"sm_90"});
    const bundle::DeviceFacts h200{132, true};
    const bundle::StepRule rule =
        bundle::step_rule(s, std::vector<bool>(s.variants.size(), true), h200);
    int64_t elements = 1;
    for (int64_t e : space) elements *= e;
    const int v = bundle::tiled_variant(
        s, rule, bundle::heuristic_variant(s, rule, elements, 1, h200), space, h200);
    return std::get<PointwiseConfig>(plan->steps[0].variants[static_cast<size_t>(v)].config);
  };
  auto pick = [&](const char* src, std::vector<int64_t> space) {
    const PointwiseConfig c = config(src, std::move(space));
    return std::pair{c.tile_in, c.tile_out};
  };
  const char* keys =
      "kernel k(x: bf16[B, S, H, D]) -> (y: bf16[B, H, D, S]) { y[b, h, d, s] = x[b, s, h, d] }";
  using Tiles = std::pair<int, int>;
  CHECK(pick(keys, {8, 32, 128, 2048}) == Tiles{128, 128});  // aligned
  CHECK(pick(keys, {8, 32, 127, 2048}) == Tiles{128, 128});  // H*D = 4064: aligned
  CHECK(pick(keys, {8, 31, 127, 2048}) == Tiles{64, 64});    // H*D = 3937: odd
  CHECK(pick(keys, {8, 32, 128, 2047}) == Tiles{128, 128});  // S odd, H*D aligned: rows
  CHECK(pick(keys, {8, 32, 127, 2047}) == Tiles{128, 128});  // H*D = 4064, S odd: rows
  // Fewer than 2 tiles of 128 x 128 an SM (132 SMs): 8 x 8 x 2 = 128 tiles, 8 x 24 = 192.
  CHECK(pick(keys, {2, 16, 64, 1023}) == Tiles{64, 64});    // rows, few tiles
  CHECK(pick(keys, {2, 16, 64, 1024}) == Tiles{64, 64});    // aligned, few tiles
  CHECK(pick(keys, {16, 8, 64, 1000}) == Tiles{128, 128});  // 4 x 8 x 16 = 512 tiles
  const char* bt = "kernel k(x: bf16[N, M]) -> (y: bf16[M, N]) { y[i, j] = x[j, i] }";
  CHECK(pick(bt, {1000, 3000}) == Tiles{64, 64});
  CHECK(pick(bt, {3000, 1000}) == Tiles{64, 64});
  CHECK(pick(bt, {2048, 2048}) == Tiles{64, 64});           // 256 tiles: fewer than 2 x 132
  CHECK(pick(bt, {2048, 2176}) == Tiles{128, 128});         // 272 tiles
  CHECK(pick(bt, {8192, 8191}) == Tiles{128, 128});         // rows
  CHECK(pick(bt, {8191, 8192}) == Tiles{64, 64});           // input rows odd
  CHECK(pick(keys, {8, 31, 127, 2047}) == Tiles{64, 64});   // both odd
  CHECK(pick(keys, {8, 32, 128, 63}) == Tiles{64, 64});     // S odd and below 64
  CHECK(pick(keys, {8, 1, 40, 2048}) == Tiles{64, 64});     // H*D = 40 < 64
  CHECK(pick(keys, {8, 1, 64, 2048}) == Tiles{64, 64});     // H*D = 64: 128 tiles, few
  CHECK(pick(keys, {64, 1, 64, 2048}) == Tiles{128, 128});  // H*D = 64: half a tile
  CHECK(pick(keys, {8, 32, 128, 56}) == Tiles{64, 64});     // S = 56 < 64
  // f32 runs 64 x 64 tiles by default: nothing smaller is chosen. Its odd extents run element
  // by element, where the odd tiles' threads hold half the elements (128 threads, not 64).
  const char* f32 = "kernel k(x: f32[N, M]) -> (y: f32[M, N]) { y[i, j] = x[j, i] }";
  CHECK(pick(f32, {1001, 999}) == Tiles{64, 64});
  CHECK(pick(f32, {1000, 999}) == Tiles{64, 64});
  CHECK(pick(f32, {20, 20}) == Tiles{64, 64});
  CHECK(config(f32, {1024, 1024}).block == 64);  // aligned: the default
  CHECK(config(f32, {1001, 999}).block == 128);  // both odd
  CHECK(config(f32, {1000, 999}).block == 128);  // input rows aligned, output rows not
  CHECK(config(f32, {20, 1024}).block == 128);   // short
  // With a contiguous add, odd extents run shifted vectors: the default's threads.
  const char* add =
      "kernel k(x: f32[N, M], z: f32[M, N]) -> (y: f32[M, N]) { y[i, j] = x[j, i] + z[i, j] }";
  CHECK(config(add, {1024, 1024}).block == 64);
  CHECK(config(add, {1001, 999}).block == 64);
  CHECK(config(add, {1000, 999}).block == 64);
  // A manifest's hostile knobs (tiles whose product overflows int64, a block past 1024 threads,
  // a side of 0): no odd tiles, the chosen variant everywhere, and no overflow on the way.
  Program p = parse_program(bt);
  std::unique_ptr<KernelPlan> plan = plan_kernel(p.kernels[0]);
  const bundle::DeviceFacts h200{132, true};
  for (const auto& [in, out, block] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{int64_t{1} << 40, int64_t{1} << 40, 128},
                                                          {128, 128, INT64_MAX},
                                                          {0, 128, 128},
                                                          {INT64_MAX, 2, 64}}) {
    bundle::Step s = manifest_step(*plan, 0, {"sm_90"});
    auto chosen_it = std::find_if(s.variants.begin(), s.variants.end(),
                                  [](const bundle::Variant& v) { return v.is_default; });
    REQUIRE(chosen_it != s.variants.end());
    bundle::Variant& chosen = *chosen_it;
    chosen.config["tile_in"] = in;
    chosen.config["tile_out"] = out;
    chosen.config["block"] = block;
    const bundle::StepRule rule =
        bundle::step_rule(s, std::vector<bool>(s.variants.size(), true), h200);
    CHECK(rule.odd_tiles == -1);
    CHECK_FALSE(rule.odd_tiles_smaller);
    const int64_t space[] = {1001, 999};
    CHECK(bundle::tiled_variant(s, rule, rule.chosen, space, h200) == rule.chosen);
  }
}

TEST_CASE("the tiled config space", "[compiler]") {
  for (int vec : {4, 8}) {
    for (int bytes : {2, 4, 12}) {
      std::vector<PointwiseConfig> space = tiled_config_space(vec, bytes);
      PointwiseConfig def = default_tiled_config(vec, bytes);
      REQUIRE(!space.empty());
      CHECK(space[0] == def);
      // 16 x vec on a side where that fits 48 KiB of shared memory (bf16: 128 x 128 of one
      // input; 64 x 64 otherwise), 16 vectors per thread on at least 64 threads.
      const int side = vec == 8 && bytes == 2 ? 128 : 64;
      CHECK(def.tile_in == side);
      CHECK(def.tile_out == side);
      CHECK(def.vec == vec);
      CHECK(def.block == (side == 128 ? 128 : 64));
      CHECK(def.elements_per_block() == side * side);
      bool scalar = false;
      for (const PointwiseConfig& c : space) {
        INFO(config_text(c.as_map()));
        CHECK(c.tiled());
        CHECK((c.vec == vec || c.vec == 1));
        // Once a scalar config appears, every later one is scalar (the fallback comes first
        // among the configs without vectors).
        if (scalar) CHECK(c.vec == 1);
        scalar = scalar || c.vec == 1;
        CHECK(c.tile_in % c.vec == 0);
        CHECK(c.tile_out % c.vec == 0);
        const int64_t blocks = int64_t{c.tile_in / c.vec} * (c.tile_out / c.vec);
        CHECK(blocks % c.block == 0);
        CHECK(int64_t{c.tile_in} * c.tile_out * bytes <= 48 * 1024);
        CHECK(c.as_map().count("tile_in") == 1);
        CHECK(c.as_map().count("unroll") == 0);
        CHECK(std::count(space.begin(), space.end(), c) == 1);
      }
      CHECK(scalar);
    }
  }
  // A flat config keeps its keys.
  CHECK(PointwiseConfig{128, 4, 2}.as_map() ==
        std::map<std::string, int64_t>{{"block", 128}, {"vec", 4}, {"unroll", 2}});
}

TEST_CASE("a tiled step's manifest: tiles by default, a tiled scalar fallback", "[compiler]") {
  Program p = parse_program(R"(
kernel t(x: f32[N, M], z: f32[M, N], v: f32[M]) -> (y: f32[M, N]) {
  y[i, j] = x[j, i] + z[i, j] * v[i]
})");
  CompileOptions opts;
  opts.assemble = false;
  opts.jobs = 2;
  opts.archs = {"sm_90"};
  CompiledBundle b = compile_program(p, opts);
  REQUIRE(b.manifest.kernels.size() == 1);
  REQUIRE(b.manifest.kernels[0].steps.size() == 1);
  const bundle::Step& step = b.manifest.kernels[0].steps[0];
  const bundle::StepRule rule =
      bundle::step_rule(step, std::vector<bool>(step.variants.size(), true), {132, true});
  const bundle::Variant& def = step.variants[static_cast<size_t>(rule.chosen)];
  CHECK(def.is_default);
  CHECK(def.config == std::map<std::string, int64_t>{
                          {"block", 64}, {"vec", 4}, {"tile_in", 64}, {"tile_out", 64}});
  CHECK(def.block_threads == 64);
  CHECK(def.elements_per_block == 64 * 64);
  // x (tiled), z (contiguous) and y (stored) move 16-byte vectors; v (one per row) does not.
  CHECK(def.align_bytes == 16);
  CHECK(def.aligned_params == std::vector<int>{0, 1, 3});
  // Misaligned pointers run the tiles element by element, not the flat kernel's gathers.
  REQUIRE(rule.scalar_fallback >= 0);
  const bundle::Variant& fb = step.variants[static_cast<size_t>(rule.scalar_fallback)];
  CHECK(fb.align_bytes == 1);
  CHECK(fb.config.at("vec") == 1);
  CHECK(fb.config.count("tile_in") == 1);
  // The PTX of every tiled variant has its tile in shared memory and its barriers.
  for (const bundle::Variant& v : step.variants) {
    INFO(v.entry);
    const std::string& ptx = b.files.at(v.images[0].ptx);
    const bool tiled = v.config.count("tile_in") == 1;
    CHECK((ptx.find(".shared") != std::string::npos) == tiled);
    CHECK((ptx.find("bar.sync") != std::string::npos) == tiled);
  }
}

TEST_CASE("a compiled bundle's manifest is valid and complete", "[compiler]") {
  Program p = parse_program(R"(
kernel mixed(x: f32[M, N], k: i32[N]) -> (y: f32[M, N], q: f16[N]) {
  y[i, j] = x[i, j] * f32(k[j])
  q[j] = f16(k[j])
})");
  CompileOptions opts;
  opts.assemble = false;  // PTX only: no nvJitLink needed for this test
  opts.jobs = 2;
  CompiledBundle b = compile_program(p, opts);
  REQUIRE(b.manifest.kernels.size() == 1);
  const bundle::KernelInfo& k = b.manifest.kernels[0];
  CHECK(k.symbols == std::vector<std::string>{"M", "N"});
  CHECK(k.hash == content_hash(p.kernels[0]));
  CHECK(parse_program(k.ir) == p);
  REQUIRE(k.steps.size() == 2);
  for (const bundle::Step& s : k.steps) {
    CHECK(std::count_if(s.variants.begin(), s.variants.end(),
                        [](auto& v) { return v.is_default; }) == 1);
    for (const bundle::Variant& v : s.variants) {
      REQUIRE(v.images.size() == 2);
      for (const bundle::ArchImage& im : v.images) {
        REQUIRE(b.files.count(im.ptx) == 1);
        CHECK_THAT(b.files.at(im.ptx), Catch::Contains(".entry " + v.entry + "("));
        CHECK_THAT(b.files.at(im.ptx), Catch::Contains(".target " + im.arch));
        CHECK(im.cubin.empty());
      }
      if (v.config.at("vec") == 1) {
        CHECK(v.align_bytes == 1);
        CHECK(v.aligned_params.empty());
      } else {
        CHECK(v.align_bytes == 16);
      }
    }
  }
  // Step 0 reads x contiguously and k[j] as a row vector; it writes y.
  const bundle::Variant& v = k.steps[0].variants.back();
  CHECK(v.aligned_params == std::vector<int>{0, 1, 2});
  Result<bundle::Manifest> back = bundle::parse_manifest(bundle::to_json(b.manifest), "test");
  REQUIRE(back.ok());
  CHECK(back.value() == b.manifest);
}
