// Contractions (issue 18): which statements are contractions and how their operands are read
// (compiler/contraction.h), what the scheduler fuses into them, the plan's variants and the
// rule that picks one (bundle/rule.h), the manifest's tile fields, and the runtime's persistent
// grid (runtime/launch.h).
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>

#include "bundle/manifest.h"
#include "bundle/rule.h"
#include "compiler/compile.h"
#include "compiler/contraction.h"
#include "compiler/kernel_plan.h"
#include "compiler/lower_contraction.h"
#include "compiler/schedule.h"
#include "compiler/toolkit.h"
#include "ir/interpreter.h"
#include "ir/text.h"
#include "runtime/launch.h"
#include "tests/unit/test_support.h"

using namespace kiln;

namespace {

KernelDef kernel_of(const std::string& src) {
  Program p = parse_program(src);
  REQUIRE(p.kernels.size() == 1);
  return p.kernels[0];
}

// The analysis of the kernel's only statement.
std::variant<ContractionShape, std::string> analyze(const std::string& src) {
  KernelDef k = kernel_of(src);
  REQUIRE(k.body.size() == 1);
  return analyze_contraction(k, k.body[0]);
}

ContractionShape shape_of(const std::variant<ContractionShape, std::string>& r) {
  if (const std::string* why = std::get_if<std::string>(&r)) FAIL("not a contraction: " << *why);
  return std::get<ContractionShape>(r);
}

// The manifest's kernel of `k` (name "f"), without steps: its parameters as the compiler
// writes them.
bundle::KernelInfo info_of(const KernelDef& k) {
  bundle::KernelInfo info;
  info.name = "f";
  for (const TensorDecl* t : k.params()) {
    info.params.push_back({t->name, t->dtype, t->shape, t->role == TensorRole::output});
  }
  info.symbols = k.symbols();
  return info;
}

std::string why_not(const std::string& src) {
  auto r = analyze(src);
  REQUIRE(std::holds_alternative<std::string>(r));
  return std::get<std::string>(r);
}

}  // namespace

TEST_CASE("contraction: operands, layouts and batches", "[contraction]") {
  const ContractionShape& mm =
      shape_of(analyze("kernel f(a: bf16[M, K], w: bf16[K, N]) -> (c: bf16[M, N]) {\n"
                       "  c[i, j] = sum(a[i, k] * w[k, j], k)\n}\n"));
  CHECK(mm.a.tensor == "a");
  CHECK(mm.b.tensor == "w");
  CHECK(mm.a.k_major());
  CHECK_FALSE(mm.b.k_major());
  CHECK(mm.a.mn_dim == 0);
  CHECK(mm.b.mn_dim == 1);
  CHECK_FALSE(mm.scale.defined());
  CHECK(describe_operands(mm) == "A: a[i, k] (K contiguous), B: w[k, j] (N contiguous)");

  // The operand that carries M is A, whichever is written first; B read as [N, K].
  const ContractionShape& nt =
      shape_of(analyze("kernel f(w: f16[N, K], a: f16[M, K]) -> (c: f32[M, N]) {\n"
                       "  c[i, j] = sum(w[j, k] * a[i, k], k)\n}\n"));
  CHECK(nt.a.tensor == "a");
  CHECK(nt.b.tensor == "w");
  CHECK(nt.b.k_major());
  CHECK(nt.a.dtype == DType::f16);

  // Batches: each operand says which output dimension each of its batch indices follows; a
  // shared weight has none.
  const ContractionShape& bmm =
      shape_of(analyze("kernel f(q: bf16[B, H, M, D], w: bf16[D, N]) -> (s: f32[B, H, M, N]) {\n"
                       "  s[b, h, i, j] = sum(q[b, h, i, d] * w[d, j], d)\n}\n"));
  REQUIRE(bmm.a.batch.size() == 2);
  CHECK(bmm.a.batch[0] == std::pair{0, 0});
  CHECK(bmm.a.batch[1] == std::pair{1, 1});
  CHECK(bmm.b.batch.empty());

  // Factors without k scale the sum; a mean divides it by the extent; widening casts are
  // looked through, and so are pointwise temporaries.
  const ContractionShape& scaled =
      shape_of(analyze("kernel f(a: bf16[M, K], w: bf16[K, N], s: f32[N]) -> (c: f32[M, N]) {\n"
                       "  c[i, j] = mean(f32(a[i, k]) * s[j] * w[k, j] / 2.0, k)\n}\n"));
  REQUIRE(scaled.scale.defined());
  CHECK(print(scaled.scale).find("s[j]") != std::string::npos);
  CHECK(print(scaled.scale).find("K") != std::string::npos);
  KernelDef through = kernel_of(
      "kernel f(a: bf16[M, K], w: bf16[K, N]) -> (c: f32[M, N]) {\n"
      "  t[i, k] = a[i, k]\n"
      "  c[i, j] = sum(t[i, k] * w[k, j], k)\n}\n");
  CHECK(std::holds_alternative<ContractionShape>(analyze_contraction(through, through.body[1])));
}

TEST_CASE("contraction: what is not one, and why", "[contraction]") {
  // (parameters, statement, a piece of the reason)
  const std::tuple<const char*, const char*, const char*> cases[] = {
      {"a: i32[M, K], w: i32[K, N]", "c[i, j] = f32(sum(a[i, k] * w[k, j], k))", "not a "},
      {"a: bf16[M, K], w: f16[K, N]", "c[i, j] = sum(a[i, k] * w[k, j], k)", "one type"},
      {"a: f32[M, K], w: bf16[K, N]", "c[i, j] = sum(a[i, k] * w[k, j], k)", "one type"},
      {"a: f32[M, K] strided, w: f32[K, N]", "c[i, j] = sum(a[i, k] * w[k, j], k)",
       "strided input (a)"},
      {"a: bf16[M, K], w: bf16[K, N], g: bf16[K]", "c[i, j] = sum(a[i, k] * g[k] * w[k, j], k)",
       "3 factor(s)"},
      {"a: bf16[M, K], w: bf16[K]", "c[i] = sum(a[i, k] * w[k], k)", "fewer than two indices"},
      {"a: bf16[M, K], w: bf16[K, N]", "c[i, j] = max(a[i, k] * w[k, j], k)", "max"},
      {"a: bf16[M, K], w: bf16[K, N]", "c[i, j] = sum(exp(a[i, k]) * w[k, j], k)",
       "not a tensor read"},
      // A reads N too: an element-wise product, not a contraction.
      {"a: bf16[M, N, K], w: bf16[K, N]", "c[i, j] = sum(a[i, j, k] * w[k, j], k)", "must read"},
  };
  for (const auto& [params, stmt, reason] : cases) {
    const std::string out = std::string(stmt).rfind("c[i] ", 0) == 0 ? "f32[M]" : "f32[M, N]";
    INFO(stmt);
    CHECK_THAT(why_not(fmt::format("kernel f({}) -> (c: {}) {{\n  {}\n}}\n", params, out, stmt)),
               Catch::Contains(reason));
  }
}

// An operand computed per element and rounded by the spec (a cast to f16 or bf16) is a
// temporary of its own, stored in that type and read by the tensor cores (lift_operands).
TEST_CASE("contraction: operands the spec rounds are lifted into steps of their own",
          "[contraction]") {
  auto buffer = [](const Schedule& s, const std::string& name) -> const TensorDecl* {
    for (const TensorDecl& t : s.buffers) {
      if (t.name == name) return &t;
    }
    return nullptr;
  };
  // RMSNorm with its gain, rounded to bf16, then a linear layer: the statistic's kernel writes
  // the operand, laid out as x.
  KernelDef norm = kernel_of(
      "kernel f(x: bf16[M, K], g: bf16[K], w: bf16[K, N]) -> (y: f32[M, N]) {\n"
      "  rs[i] = rsqrt(sum(x[i, k] * x[i, k], k) / K + 0.000001)\n"
      "  y[i, j] = sum(bf16(x[i, k] * rs[i] * g[k]) * w[k, j], k)\n}\n");
  Schedule s = schedule_kernel(norm);
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.kernels[0].kind == StepKind::row_reduction);
  REQUIRE(s.kernels[1].contraction.has_value());
  CHECK(s.kernels[1].contraction->a.tensor == "_o0");
  CHECK(s.kernels[1].contraction->a.k_major());
  CHECK(s.kernels[1].contraction->b.tensor == "w");
  const TensorDecl* o = buffer(s, "_o0");
  REQUIRE(o != nullptr);
  CHECK(o->dtype == DType::bf16);
  CHECK(o->shape == std::vector<Dim>{Dim::symbol("M"), Dim::symbol("K")});
  CHECK_THAT(explain_schedule(s), Catch::Contains("1 from lifted contraction operands"));

  // The kernels one by one on the interpreter, the operand stored in bf16 between them, agree
  // with the kernel (the spec rounds it to bf16 too).
  const SymbolValues sym{{"M", 5}, {"K", 37}, {"N", 3}};
  HostTensor x(DType::bf16, {5, 37}), g(DType::bf16, {37}), w(DType::bf16, {37, 3});
  HostTensor y1(DType::f32, {5, 3}), y2(DType::f32, {5, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::sin(0.37 * double(i)));
  for (int64_t i = 0; i < g.numel(); ++i) g.set(i, 1 + 0.01 * double(i));
  for (int64_t i = 0; i < w.numel(); ++i) w.set(i, std::cos(0.11 * double(i)));
  std::map<std::string, HostTensor*, std::less<>> a{{"x", &x}, {"g", &g}, {"w", &w}, {"y", &y1}},
      b{{"x", &x}, {"g", &g}, {"w", &w}, {"y", &y2}};
  interpret(norm, sym, a);
  run_schedule(s, sym, b);
  for (int64_t i = 0; i < y1.numel(); ++i) CHECK(y2.get(i) == Approx(y1.get(i)).epsilon(1e-6));

  // Both sides, batched, B read as [N, K]: each its own pointwise step.
  KernelDef both = kernel_of(
      "kernel f(a: f32[B, M, K], b: f32[B, N, K]) -> (c: f32[B, M, N]) {\n"
      "  c[z, i, j] = sum(f16(a[z, i, k]) * f16(max(b[z, j, k], 0.0)), k)\n}\n");
  Schedule t = schedule_kernel(both);
  REQUIRE(t.kernels.size() == 3);
  REQUIRE(t.kernels[2].contraction.has_value());
  CHECK(t.kernels[2].contraction->a.dtype == DType::f16);
  CHECK(t.kernels[2].contraction->b.tensor == "_o1");
  CHECK(t.kernels[2].contraction->b.k_major());
  REQUIRE(buffer(t, "_o1") != nullptr);
  CHECK(buffer(t, "_o1")->shape ==
        std::vector<Dim>{Dim::symbol("B"), Dim::symbol("N"), Dim::symbol("K")});

  // Not lifted, and why: what the spec computes in f32 is not rounded for it; a factor of k
  // alone outside the cast; a cast whose type differs from the other side's; a side no read of
  // which walks both of its indices; a cast to f32.
  const std::tuple<const char*, const char*, const char*> stays[] = {
      {"a: bf16[M, K], w: bf16[K, N], g: bf16[K]", "c[i, j] = sum(a[i, k] * g[k] * w[k, j], k)",
       "the spec rounds it"},
      {"a: bf16[M, K], w: bf16[K, N], g: bf16[K]",
       "c[i, j] = sum(bf16(a[i, k] * 2.0) * g[k] * w[k, j], k)", "not a tensor read"},
      {"a: bf16[M, K], w: f16[K, N]", "c[i, j] = sum(bf16(a[i, k] * 2.0) * w[k, j], k)",
       "not a tensor read"},
      {"u: bf16[M], v: bf16[K], w: bf16[K, N]", "c[i, j] = sum(bf16(u[i] * v[k]) * w[k, j], k)",
       "not a tensor read"},
      {"a: bf16[M, K], w: bf16[K, N]", "c[i, j] = sum(f32(a[i, k] * 2.0) * w[k, j], k)",
       "not a tensor read"},
  };
  for (const auto& [params, stmt, reason] : stays) {
    INFO(stmt);
    KernelDef k =
        kernel_of(fmt::format("kernel f({}) -> (c: f32[M, N]) {{\n  {}\n}}\n", params, stmt));
    Schedule r = schedule_kernel(k);
    REQUIRE(r.kernels.size() == 1);
    CHECK(r.kernels[0].kind != StepKind::contraction);
    CHECK(r.buffers.empty());
    CHECK_THAT(r.kernels[0].kind_reason, Catch::Contains(reason));
  }
}

// f32 operands run on tensor cores where the spec cuts them to tf32: read as they are with K
// contiguous, else stored K-major first by a step of their own (tf32 tensor cores take K-major
// operands only). An f32 product the spec does not cut stays a reduction.
TEST_CASE("contraction: f32 operands the spec cuts to tf32", "[contraction]") {
  const ContractionShape linear =
      shape_of(analyze("kernel f(x: f32[M, K], w: f32[N, K]) -> (y: f32[M, N]) {\n"
                       "  y[i, j] = sum(tf32(x[i, k]) * tf32(w[j, k]), k)\n}\n"));
  CHECK(linear.tf32);
  CHECK(linear.a.tensor == "x");
  CHECK(linear.a.dtype == DType::f32);
  CHECK(linear.b.k_major());
  CHECK(operand_reads_text(linear) == "f32 reads cut to tf32");
  // A cut f16 or bf16 read is itself.
  const ContractionShape half =
      shape_of(analyze("kernel f(x: bf16[M, K], w: bf16[K, N]) -> (y: f32[M, N]) {\n"
                       "  y[i, j] = sum(tf32(x[i, k]) * w[k, j], k)\n}\n"));
  CHECK_FALSE(half.tf32);
  CHECK(half.a.dtype == DType::bf16);

  const std::tuple<const char*, const char*, const char*> refused[] = {
      {"a: f32[M, K], w: f32[K, N]", "c[i, j] = sum(tf32(a[i, k]) * tf32(w[k, j]), k)",
       "cut to tf32 and read with j contiguous"},
      {"a: f32[M, K], w: f32[N, K]", "c[i, j] = sum(tf32(a[i, k]) * w[j, k], k)",
       "the operands are tf32 and f32"},
      {"a: f32[M, K], w: bf16[N, K]", "c[i, j] = sum(tf32(a[i, k]) * w[j, k], k)",
       "the operands are tf32 and bf16"},
  };
  for (const auto& [params, stmt, reason] : refused) {
    INFO(stmt);
    CHECK_THAT(why_not(fmt::format("kernel f({}) -> (c: f32[M, N]) {{\n  {}\n}}\n", params, stmt)),
               Catch::Contains(reason));
  }

  // Not cut: CUDA cores, an FMA per product, either layout, over the mma.sync-shaped tiles
  // only (no wgmma, no TMA).
  const ContractionShape uncut =
      shape_of(analyze("kernel f(x: f32[M, K], w: f32[K, N]) -> (y: f32[M, N]) {\n"
                       "  y[i, j] = sum(x[i, k] * w[k, j], k)\n}\n"));
  CHECK(uncut.fma());
  CHECK_FALSE(linear.fma());
  CHECK_FALSE(uncut.b.k_major());
  {
    Program fp = parse_program(
        "kernel f(x: f32[M, K], w: f32[K, N]) -> (y: f32[M, N]) {\n"
        "  y[i, j] = sum(x[i, k] * w[k, j], k)\n}\n");
    auto plan = plan_kernel(fp.kernels.at(0));
    REQUIRE(plan->steps.size() == 1);
    CHECK(plan->steps[0].variants.size() == 4);
    for (const PlannedVariant& v : plan->steps[0].variants) {
      const auto& c = std::get<ContractionConfig>(v.config);
      CHECK(c.wgmma == 0);
      CHECK(c.tma == 0);
      CHECK(c.tile_k == 16);  // 64-byte rows of f32
    }
    CHECK_THAT(plan->schedule.kernels[0].kind_reason, Catch::Contains("CUDA cores"));
  }

  // B read as [K, N]: a step stores its cut K-major, the contraction reads it.
  KernelDef mm = kernel_of(
      "kernel f(a: f32[M, K], b: f32[K, N]) -> (c: f32[M, N]) {\n"
      "  c[i, j] = sum(tf32(a[i, k]) * tf32(b[k, j]), k)\n}\n");
  Schedule s = schedule_kernel(mm);
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.kernels[0].kind == StepKind::pointwise);
  REQUIRE(s.kernels[1].contraction.has_value());
  CHECK(s.kernels[1].contraction->tf32);
  CHECK(s.kernels[1].contraction->a.tensor == "a");
  CHECK(s.kernels[1].contraction->b.tensor == "_o0");
  CHECK(s.kernels[1].contraction->b.k_major());
  REQUIRE(s.buffers.size() == 1);
  CHECK(s.buffers[0].dtype == DType::f32);
  CHECK(s.buffers[0].tf32);
  CHECK(s.buffers[0].shape == std::vector<Dim>{Dim::symbol("N"), Dim::symbol("K")});

  // The kernels one by one agree with the kernel; the cut matters (inputs with low bits set).
  const SymbolValues sym{{"M", 4}, {"K", 29}, {"N", 3}};
  HostTensor a(DType::f32, {4, 29}), b(DType::f32, {29, 3});
  HostTensor c1(DType::f32, {4, 3}), c2(DType::f32, {4, 3}), exact(DType::f32, {4, 3});
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, std::sin(0.37 * double(i) + 0.1));
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, std::cos(0.11 * double(i) + 0.2));
  std::map<std::string, HostTensor*, std::less<>> p1{{"a", &a}, {"b", &b}, {"c", &c1}},
      p2{{"a", &a}, {"b", &b}, {"c", &c2}}, p3{{"a", &a}, {"b", &b}, {"c", &exact}};
  interpret(mm, sym, p1);
  run_schedule(s, sym, p2);
  interpret(kernel_of("kernel f(a: f32[M, K], b: f32[K, N]) -> (c: f32[M, N]) {\n"
                      "  c[i, j] = sum(a[i, k] * b[k, j], k)\n}\n"),
            sym, p3);
  bool differs = false;
  for (int64_t i = 0; i < c1.numel(); ++i) {
    CHECK(c2.get(i) == c1.get(i));
    differs = differs || c1.get(i) != exact.get(i);
  }
  CHECK(differs);

  // An operand computed per element and cut: lifted K-major too; the f32 it cuts may round the
  // other way on the GPU (the cut of a read is exact): one tf32 unit of the lifting step.
  Program p = parse_program(
      "kernel f(q: f32[M, K], v: f32[N, K]) -> (o: f32[M, N]) {\n"
      "  o[i, j] = sum(tf32(q[i, k] * 3.0) * tf32(v[j, k]), k)\n}\n");
  auto plan = plan_kernel(p.kernels.at(0));
  REQUIRE(plan->steps.size() == 2);
  CHECK(manifest_step(*plan, 0, {"sm_90"}, true).approx_error == kTf32Roundoff);
  CHECK(manifest_step(*plan, 1, {"sm_90"}, true).approx_error == 0);
  // So does a cut of anything but a spec input, a sum read back included.
  Program cut_sum = parse_program(
      "kernel f(a: f32[M, K], b: f32[K, N]) -> (z: f32[M, N]) {\n"
      "  y[i, j] = sum(a[i, k] * b[k, j], k)\n"
      "  z[i, j] = tf32(y[i, j])\n}\n");
  auto cut_plan = plan_kernel(cut_sum.kernels.at(0));
  REQUIRE(cut_plan->steps.size() == 1);
  CHECK(manifest_step(*cut_plan, 0, {"sm_90"}, true).approx_error == kTf32Roundoff);

  // A spec's temporary cut to tf32 is recomputed where read, as any pointwise one: read by a
  // row sum it fuses in; read by a contraction with K not contiguous it is lifted K-major.
  Schedule red =
      schedule_kernel(kernel_of("kernel f(x: f32[M, K]) -> (y: f32[M]) {\n"
                                "  t[i, k] = tf32(x[i, k])\n"
                                "  y[i] = sum(t[i, k], k)\n}\n"));
  REQUIRE(red.kernels.size() == 1);
  CHECK(red.buffers.empty());
  CHECK_NOTHROW(
      plan_kernel(kernel_of("kernel f(x: f32[M, K]) -> (y: f32[M]) {\n"
                            "  t[i, k] = tf32(x[i, k])\n"
                            "  y[i] = sum(t[i, k], k)\n}\n")));
  Schedule named =
      schedule_kernel(kernel_of("kernel f(x: f32[K, M], w: f32[N, K]) -> (c: f32[M, N]) {\n"
                                "  t[k, i] = tf32(x[k, i])\n"
                                "  c[i, j] = sum(t[k, i] * tf32(w[j, k]), k)\n}\n"));
  REQUIRE(named.kernels.size() == 2);
  REQUIRE(named.kernels[1].contraction.has_value());
  CHECK(named.kernels[1].contraction->tf32);
  CHECK(named.kernels[1].contraction->a.tensor == "_o0");

  // A kernel with a strided input (even one no contraction reads) keeps an f32 product a
  // reduction, as before contractions took f32: its kernels read no strides yet.
  KernelDef strided = kernel_of(
      "kernel f(a: f32[M, K], b: f32[K, N], x: f32[M, N] strided) -> (c: f32[M, N]) {\n"
      "  c[i, j] = sum(a[i, k] * b[k, j], k) + x[i, j]\n}\n");
  auto strided_plan = plan_kernel(strided);
  REQUIRE(strided_plan->schedule.kernels.size() == 1);
  CHECK(strided_plan->schedule.kernels[0].kind == StepKind::row_reduction);
  CHECK_THAT(strided_plan->schedule.kernels[0].kind_reason, Catch::Contains("strided input (x)"));
}

// A kernel's output that a later contraction reads back through a tensor map is a valid
// manifest (the map reads it).
TEST_CASE("contraction: an output read back through a tensor map", "[contraction]") {
  KernelDef k = kernel_of(
      "kernel f(x: bf16[M, K], w: bf16[N, K]) -> (h: bf16[M, K], y: f32[M, N]) {\n"
      "  h[i, k] = bf16(x[i, k] * 2.0)\n"
      "  y[i, j] = sum(h[i, k] * w[j, k], k)\n}\n");
  auto plan = plan_kernel(k);
  bundle::KernelInfo info = info_of(k);
  for (size_t si = 0; si < plan->steps.size(); ++si) {
    info.steps.push_back(manifest_step(*plan, si, {"sm_90"}, false));
  }
  bool reads_h = false;
  for (bundle::Step& st : info.steps) {
    for (bundle::Variant& v : st.variants) {
      for (bundle::ArchImage& im : v.images) im.ptx_hash = "0123456789abcdef";
      for (const bundle::TensorMapInfo& t : v.tile.tensor_maps)
        reads_h |= t.param == 2 && !t.store;  // x, w, h, y
    }
  }
  CHECK(reads_h);
  bundle::Manifest m;
  m.kernels = {info};
  Result<bundle::Manifest> r = bundle::parse_manifest(bundle::to_json(m), "m.json");
  INFO((r.ok() ? std::string() : r.message()));
  CHECK(r.ok());
}

// A sum whose terms the spec rounds (a cast in its body, a lifted operand) may see one round the
// other way on the GPU: the step's approx_error widens the harness's tolerance by the type's
// unit roundoff. A cast of the sum itself (the output's rounding) adds nothing.
TEST_CASE("contraction: rounded terms of a sum widen the tolerance by their roundoff",
          "[contraction]") {
  auto errors = [](const std::string& src) {
    Program p = parse_program(src);
    auto plan = plan_kernel(p.kernels.at(0));
    std::vector<double> out;
    for (size_t si = 0; si < plan->steps.size(); ++si) {
      out.push_back(manifest_step(*plan, si, {"sm_90"}, true).approx_error);
    }
    return out;
  };
  CHECK(errors("kernel f(x: bf16[M, K], g: bf16[K], w: bf16[K, N]) -> (y: f32[M, N]) {\n"
               "  rs[i] = rsqrt(sum(x[i, k] * x[i, k], k) / K + 0.000001)\n"
               "  y[i, j] = sum(bf16(x[i, k] * rs[i] * g[k]) * w[k, j], k)\n}\n") ==
        std::vector<double>{0, 0x1p-8});
  CHECK(errors("kernel f(a: f32[M, K], b: f32[N, K]) -> (c: f32[M, N]) {\n"
               "  c[i, j] = sum(f16(a[i, k]) * f16(b[j, k]), k)\n}\n") ==
        std::vector<double>{0, 0, 0x1p-11});
  CHECK(errors("kernel f(x: f32[M, K]) -> (y: f32[M]) {\n"
               "  t[i, k] = bf16(x[i, k] * 3.0)\n"
               "  y[i] = sum(t[i, k], k)\n}\n") == std::vector<double>{0x1p-8});
  CHECK(errors("kernel f(x: f32[M, K]) -> (y: bf16[M]) {\n"
               "  y[i] = bf16(sum(x[i, k] * 3.0, k))\n}\n") == std::vector<double>{0});
  CHECK(errors("kernel f(a: bf16[M, K], w: bf16[K, N]) -> (c: bf16[M, N]) {\n"
               "  c[i, j] = bf16(sum(a[i, k] * w[k, j], k))\n}\n") == std::vector<double>{0});
}

// A temporary may be stored in f16 or bf16 only where its value is a cast to that type.
TEST_CASE("contraction: the verifier takes a narrow temporary only for a cast", "[contraction]") {
  KernelDef cast = kernel_of(
      "kernel f(x: f32[M, K]) -> (y: f32[M, K]) {\n"
      "  t[i, k] = bf16(x[i, k] * 2.0)\n"
      "  y[i, k] = t[i, k]\n}\n");
  REQUIRE(cast.temps.size() == 1);
  CHECK(cast.temps[0].dtype == DType::f32);  // the parser declares the compute type
  cast.temps[0].dtype = DType::bf16;
  cast.body[1] = Stmt{"y", {"i", "k"}, make_load("t", {"i", "k"}, DType::bf16), {}};
  CHECK_NOTHROW(verify(cast));
  cast.temps[0].dtype = DType::f16;  // not the cast's type
  CHECK_THROWS_WITH(verify(cast), Catch::Contains("does not match the kernel's temps list"));
  KernelDef plain = kernel_of(
      "kernel f(x: f32[M, K]) -> (y: f32[M, K]) {\n"
      "  t[i, k] = x[i, k] * 2.0\n"
      "  y[i, k] = t[i, k]\n}\n");
  plain.temps[0].dtype = DType::bf16;
  plain.body[1] = Stmt{"y", {"i", "k"}, make_load("t", {"i", "k"}, DType::bf16), {}};
  CHECK_THROWS_WITH(verify(plain), Catch::Contains("does not match the kernel's temps list"));
}

TEST_CASE("contraction: the scheduler fuses only its epilogue", "[contraction]") {
  KernelDef k = kernel_of(
      "kernel f(x: bf16[M, K], w: bf16[K, N], b: bf16[N]) -> (y: bf16[M, N], r: f32[M]) {\n"
      "  h[i, j] = sum(x[i, k] * w[k, j], k) + b[j]\n"
      "  y[i, j] = h[i, j] * 2.0\n"
      "  r[i] = sum(x[i, k], k)\n}\n");
  Schedule s = schedule_kernel(k);
  REQUIRE(s.kernels.size() == 2);
  const ScheduledKernel& c = s.kernels[0];
  CHECK(c.kind == StepKind::contraction);
  REQUIRE(c.contraction.has_value());
  CHECK(c.kind_reason.find("contraction on tensor cores") != std::string::npos);
  // The row sum over the same x is a reduction of its own, not a sibling of the contraction.
  CHECK(s.kernels[1].kind == StepKind::row_reduction);
  bool refused = false;
  for (const FusionRefusal& f : s.refusals) {
    refused = refused || f.reason.find("contraction") != std::string::npos;
  }
  CHECK(refused);
}

TEST_CASE("contraction: plan, manifest and the rule", "[contraction]") {
  KernelDef k = kernel_of(
      "kernel f(a: bf16[M, K], w: bf16[K, N]) -> (c: bf16[M, N]) {\n"
      "  c[i, j] = sum(a[i, k] * w[k, j], k)\n}\n");
  std::unique_ptr<KernelPlan> plan = plan_kernel(k);
  REQUIRE(plan->steps.size() == 1);
  const StepPlan& st = plan->steps[0];
  CHECK(st.kind == StepKind::contraction);
  bundle::Step bs = manifest_step(*plan, 0, {"sm_80", "sm_90"});
  // wgmma variants carry an sm_90a image instead of sm_90; mma.sync ones sm_80 and sm_90.
  int wgmma = 0;
  for (const bundle::Variant& v : bs.variants) {
    REQUIRE(v.tile.m > 0);
    CHECK(v.elements_per_block == v.tile.m * v.tile.n);
    CHECK(v.tile.smem_bytes > 0);
    const bool hopper = v.config.count("wgmma") > 0;
    wgmma += hopper;
    REQUIRE(v.images.size() == 2);
    CHECK(v.images[1].arch == (hopper ? "sm_90a" : "sm_90"));
  }
  CHECK(wgmma >= 2);
  CHECK(bs.variants[static_cast<size_t>(st.default_variant)].config.count("wgmma") == 1);

  // Through JSON: tiles survive, and a tile on a step of another kind is refused.
  bundle::Manifest m;
  bundle::KernelInfo info = info_of(k);
  for (bundle::Variant& v : bs.variants) {
    for (bundle::ArchImage& im : v.images) im.ptx_hash = "0123456789abcdef";
  }
  info.steps = {bs};
  m.kernels = {info};
  Result<bundle::Manifest> back = bundle::parse_manifest(bundle::to_json(m), "m.json");
  REQUIRE(back.ok());
  CHECK(back->kernels[0].steps[0] == bs);
  // Clusters (format 10): "cluster" only where a variant has one, 1 .. 8 blocks.
  const auto def = static_cast<size_t>(st.default_variant);
  nlohmann::json j = nlohmann::json::parse(bundle::to_json(m));
  nlohmann::json& tile = j["kernels"][0]["steps"][0]["variants"][def]["tile"];
  CHECK(tile["cluster"] == 2);
  CHECK_FALSE(j["kernels"][0]["steps"][0]["variants"][0]["tile"].contains("cluster"));
  tile["cluster"] = 9;
  Result<bundle::Manifest> nine = bundle::parse_manifest(j.dump(), "m.json");
  REQUIRE_FALSE(nine.ok());
  CHECK(nine.message() ==
        fmt::format("m.json: kernels[0].steps[0].variants[{}].tile.cluster: expected an integer "
                    "in 1..8, got 9",
                    def));
  // Split-K (format 13): 2 phases, 1 slot, no cluster; else refused (and lead_last is a row
  // reduction's).
  size_t sv = 0;
  while (sv < bs.variants.size() && bs.variants[sv].split.phases == 0) ++sv;
  REQUIRE(sv < bs.variants.size());
  nlohmann::json& split_json = j["kernels"][0]["steps"][0]["variants"][sv];
  tile["cluster"] = 2;
  for (auto bad : std::vector<std::function<void(nlohmann::json&)>>{
           [](nlohmann::json& v) { v["split"]["phases"] = 3; },
           [](nlohmann::json& v) { v["split"]["slots"] = 2; },
           [](nlohmann::json& v) { v["tile"]["cluster"] = 2; }}) {
    nlohmann::json saved = split_json;
    bad(split_json);
    Result<bundle::Manifest> r = bundle::parse_manifest(j.dump(), "m.json");
    REQUIRE_FALSE(r.ok());
    CHECK(r.message() == fmt::format("m.json: kernels[0].steps[0].variants[{}]: a split "
                                     "contraction variant has 2 phases, 1 slot and no cluster",
                                     sv));
    split_json = saved;
  }
  split_json["split"]["lead_last"] = true;
  CHECK(bundle::parse_manifest(j.dump(), "m.json").message() ==
        fmt::format("m.json: kernels[0].steps[0].variants[{}]: a split variant with lead_last in "
                    "a step of kind \"contraction\" (only row_reduction steps run their last "
                    "phase one block per row)",
                    sv));
  split_json["split"].erase("lead_last");
  CHECK(bundle::parse_manifest(j.dump(), "m.json").ok());
  info.steps[0].kind = StepKind::row_reduction;
  m.kernels = {info};
  Result<bundle::Manifest> bad = bundle::parse_manifest(bundle::to_json(m), "m.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.message().find("only contraction steps have tiles") != std::string::npos);

  // The rule: the default, unless its tiles would leave more than half the SMs idle; then the
  // largest smaller tiles that give half of them a tile, else the smallest.
  const bundle::DeviceFacts h200{132, true};
  bundle::StepRule rule = bundle::step_rule(bs, std::vector<bool>(bs.variants.size(), true), h200);
  // The smaller tiles are of the default's kind, TMA-fed like it: 128 x 128, then 128 x 64.
  REQUIRE(rule.smaller.size() == 2);
  const auto& mid = bs.variants[static_cast<size_t>(rule.smaller[0])];
  const auto& least = bs.variants[static_cast<size_t>(rule.smaller[1])];
  CHECK(mid.config.count("tma") == 1);
  CHECK(least.config.count("tma") == 1);
  CHECK(mid.elements_per_block == 128 * 128);
  CHECK(least.elements_per_block == 128 * 64);
  CHECK_FALSE(mid.config.count("pingpong"));  // the first variant of its size
  const int64_t area = bs.variants[static_cast<size_t>(rule.chosen)].elements_per_block;
  CHECK(bundle::heuristic_variant(bs, rule, 4096 * 4096, 4096, h200) == rule.chosen);
  CHECK(bundle::heuristic_variant(bs, rule, area * 66, 64, h200) == rule.chosen);
  // 65 tiles of the default's: 130 of 128 x 128, enough.
  CHECK(bundle::heuristic_variant(bs, rule, area * 65, 64, h200) == rule.smaller[0]);
  CHECK(bundle::heuristic_variant(bs, rule, 128 * 128 * 66, 64, h200) == rule.smaller[0]);
  // 65 tiles of 128 x 128: 130 of 128 x 64; fewer: the smallest tiles, unless K is long
  // enough to split (16 steps of 64 or more: two blocks of 8 steps each).
  CHECK(bundle::heuristic_variant(bs, rule, 128 * 128 * 65, 64, h200) == rule.smaller[1]);
  CHECK(bundle::heuristic_variant(bs, rule, 128 * 128 * 65, 960, h200) == rule.smaller[1]);
  CHECK(bundle::heuristic_variant(bs, rule, 1, 1, h200) == rule.smaller[1]);
  // Split-K: 128 x 128 tiles (the first split variant, TMA-fed like the default), each tile's
  // K over the blocks that fill the SMs once, 8 steps of K a block at least.
  REQUIRE(rule.contraction_split >= 0);
  const bundle::Variant& split = bs.variants[static_cast<size_t>(rule.contraction_split)];
  CHECK(split.elements_per_block == 128 * 128);
  CHECK(split.config.count("tma") == 1);
  CHECK(split.split == bundle::SplitInfo{2, 1, 64});
  CHECK(std::find(rule.smaller.begin(), rule.smaller.end(), rule.contraction_split) ==
        rule.smaller.end());
  // Split only from 64 steps of K, with S = 2 only from 256 (measured: bundle/rule.h).
  CHECK(bundle::heuristic_variant(bs, rule, 128 * 128 * 65, 961, h200) == rule.smaller[1]);
  CHECK(bundle::heuristic_variant(bs, rule, 128 * 128 * 65, 255 * 64, h200) == rule.smaller[1]);
  CHECK(bundle::heuristic_variant(bs, rule, 128 * 128 * 65, 255 * 64 + 1, h200) ==
        rule.contraction_split);
  CHECK(bundle::heuristic_variant(bs, rule, 1024 * 1024, 8192, h200) == rule.smaller[1]);
  CHECK(bundle::heuristic_variant(bs, rule, 1024 * 1024, 16384, h200) == rule.contraction_split);
  CHECK(bundle::heuristic_variant(bs, rule, 512 * 512, 4032, h200) == rule.smaller[1]);
  CHECK(bundle::heuristic_variant(bs, rule, 512 * 512, 4033, h200) == rule.contraction_split);
  CHECK(bundle::heuristic_variant(bs, rule, 768 * 768, 8192, h200) == rule.contraction_split);
  CHECK(bundle::heuristic_variant(bs, rule, 1, 65536, h200) == rule.contraction_split);
  CHECK(bundle::heuristic_variant(bs, rule, 128 * 128 * 66, 65536, h200) == rule.smaller[0]);
  CHECK(bundle::contraction_splits(3, 64 * 64, 64));
  CHECK_FALSE(bundle::contraction_splits(3, 63 * 64, 64));
  CHECK_FALSE(bundle::contraction_splits(2, 255 * 64, 64));
  CHECK(bundle::contraction_splits(2, 256 * 64, 64));
  CHECK_FALSE(bundle::contraction_splits(1, 1 << 20, 64));
  CHECK(bundle::contraction_split_blocks(1, 65536, 64, 132, 1) == 128);  // 1024 steps / 8
  CHECK(bundle::contraction_split_blocks(1, 4096, 64, 132, 1) == 8);
  CHECK(bundle::contraction_split_blocks(64, 1 << 20, 64, 132, 1) == 2);  // 132 / 64
  CHECK(bundle::contraction_split_blocks(64, 960, 64, 132, 1) == 1);
  CHECK(bundle::contraction_split_blocks(200, 1 << 20, 64, 132, 1) == 1);
  CHECK(bundle::contraction_split_blocks(0, 0, 0, 0, 0) == 1);  // unchecked input
  // Without memory pools (the workspace's), no split.
  CHECK(bundle::step_rule(bs, std::vector<bool>(bs.variants.size(), true), {132, false})
            .contraction_split < 0);
  // On a GPU of 20 SMs 1024^3 has tiles enough for 128 x 256 (32 >= 10).
  CHECK(bundle::heuristic_variant(bs, rule, 1024 * 1024, 1024, {20, true}) == rule.chosen);
  // A variant chosen explicitly (kiln run --variant) runs at every shape: the default at
  // 1024^3, and the smallest tiles at 4096^3, where the rule would run the default.
  const bundle::StepRule pinned = bundle::pinned_rule(rule, rule.chosen);
  CHECK(pinned.smaller.empty());
  CHECK(bundle::heuristic_variant(bs, pinned, 1024 * 1024, 1024, h200) == rule.chosen);
  CHECK(bundle::heuristic_variant(bs, pinned, 1, 1, h200) == rule.chosen);
  const bundle::StepRule small = bundle::pinned_rule(rule, rule.smaller[1]);
  CHECK(bundle::heuristic_variant(bs, small, 4096 * 4096, 4096, h200) == rule.smaller[1]);
  CHECK(small.map_fallback == rule.map_fallback);  // what a misaligned launch needs stays
  // Without the default (no sm_90 image on this device, say), the lowest loadable variant.
  std::vector<bool> loadable(bs.variants.size(), true);
  loadable[static_cast<size_t>(st.default_variant)] = false;
  CHECK(bundle::step_rule(bs, loadable, h200).chosen == 0);
}

TEST_CASE("contraction: the persistent grid", "[contraction]") {
  KernelDef k = kernel_of(
      "kernel f(a: bf16[B, M, K], w: bf16[K, N]) -> (c: bf16[B, M, N]) {\n"
      "  c[b, i, j] = sum(a[b, i, k] * w[k, j], k)\n}\n");
  std::unique_ptr<KernelPlan> plan = plan_kernel(k);
  bundle::KernelInfo info = info_of(k);
  info.steps = {manifest_step(*plan, 0, {"sm_90"})};
  const bundle::Step& bs = info.steps[0];
  const launch::EncodedKernel enc = launch::encode(info);
  const bundle::DeviceFacts dev{132, true};
  std::vector<launch::StepRule> rules{
      bundle::step_rule(bs, std::vector<bool>(bs.variants.size(), true), dev)};
  std::vector<std::vector<int64_t>> smem{std::vector<int64_t>(bs.variants.size(), 0)};
  // Symbols in the kernel's order; pointers 256-byte aligned and far apart.
  auto symbols_for = [&](int64_t B, int64_t M, int64_t N, int64_t K) {
    std::vector<int64_t> v;
    for (const std::string& s : info.symbols) {
      v.push_back(s == "B" ? B : s == "M" ? M : s == "N" ? N : K);
    }
    return v;
  };
  const std::vector<CUdeviceptr> ptrs{CUdeviceptr{1} << 40, CUdeviceptr{2} << 40,
                                      CUdeviceptr{3} << 40};
  for (size_t vi = 0; vi < bs.variants.size(); ++vi) {
    const bundle::Variant& v = bs.variants[vi];
    for (auto [B, M, N] : {std::tuple{1, 1, 1}, {3, 1000, 17}, {2, 4096, 4096}, {64, 8192, 8192}}) {
      const std::vector<int64_t> syms = symbols_for(B, M, N, 100);
      launch::Layout out;
      const int variants[] = {static_cast<int>(vi)};
      // As asked (no fallback): N = 17 has no tensor maps, which would run another variant.
      REQUIRE(launch::lay_out(info, enc, rules, smem, ptrs, syms, variants, false, dev, out).ok());
      const int64_t tiles =
          int64_t{B} * ((M + v.tile.m - 1) / v.tile.m) * ((N + v.tile.n - 1) / v.tile.n);
      if (v.split.phases > 0) {
        // Split-K: every tile over S blocks (K = 100: 2 steps, so S = 1), a record of f32
        // words per block, both phases on that grid.
        CHECK(out.steps[0].grid == tiles);
        CHECK(out.steps[0].phases == 2);
        CHECK(out.steps[0].lead_split == 0);
        CHECK(out.steps[0].workspace_bytes == tiles * v.tile.m * v.tile.n * 4);
      } else {
        CHECK(out.steps[0].grid == std::min<int64_t>(tiles, 132 * v.tile.ctas_per_sm));
        CHECK(out.steps[0].phases == 0);
      }
      CHECK(out.steps[0].block == static_cast<unsigned>(v.block_threads));
      CHECK(out.steps[0].smem_bytes == static_cast<unsigned>(v.tile.smem_bytes));
      CHECK(out.steps[0].cluster == 1);
    }
  }
  // Where a variant's image runs in clusters of two (the runtime says so, with the clusters the
  // device holds: 61 here): a cluster walks tiles of twice the rows; the grid is its blocks.
  int clustered = 0;
  for (size_t vi = 0; vi < bs.variants.size(); ++vi) {
    const bundle::Variant& v = bs.variants[vi];
    if (v.tile.cluster != 2) continue;
    ++clustered;
    std::vector<std::vector<launch::ClusterFacts>> clusters{
        std::vector<launch::ClusterFacts>(bs.variants.size())};
    clusters[0][vi] = {2, 61};
    for (auto [B, M, N] :
         {std::tuple{1, 1, 1}, {3, 1000, 17}, {1, 257, 4096}, {2, 4096, 4096}, {64, 8192, 8192}}) {
      launch::Layout out;
      const int variants[] = {static_cast<int>(vi)};
      REQUIRE(launch::lay_out(info, enc, rules, smem, ptrs, symbols_for(B, M, N, 100), variants,
                              false, dev, out, clusters)
                  .ok());
      const int64_t pairs =
          int64_t{B} * ((M + 2 * v.tile.m - 1) / (2 * v.tile.m)) * ((N + v.tile.n - 1) / v.tile.n);
      CHECK(out.steps[0].grid == 2 * std::min<int64_t>(pairs, 61));
      CHECK(out.steps[0].cluster == 2);
    }
  }
  CHECK(clustered == 2);
  // Split-K over a long K: one 128 x 128 tile of 17 x 17 gets 132 blocks (1024 steps / 8 =
  // 128 at most: 128), 3 x 1000 x 17 (24 tiles) 5 each; the workspace a record per block.
  int splits = 0;
  for (size_t vi = 0; vi < bs.variants.size(); ++vi) {
    const bundle::Variant& v = bs.variants[vi];
    if (v.split.phases == 0) continue;
    ++splits;
    for (auto [B, M, N, S] : {std::tuple{1, 17, 17, 128}, {3, 1000, 17, 5}}) {
      launch::Layout out;
      const int variants[] = {static_cast<int>(vi)};
      REQUIRE(launch::lay_out(info, enc, rules, smem, ptrs, symbols_for(B, M, N, 65536), variants,
                              false, dev, out)
                  .ok());
      const int64_t tiles = int64_t{B} * ((M + 127) / 128) * ((N + 127) / 128);
      CHECK(out.steps[0].grid == tiles * S);
      CHECK(out.steps[0].lead_split == 0);
      CHECK(out.steps[0].workspace_bytes == tiles * S * 128 * 128 * 4);
      CHECK(out.scratch_bytes >= out.workspace_offset + out.steps[0].workspace_bytes);
    }
  }
  CHECK(splits == 1);
}

TEST_CASE("contraction: tensor maps of the TMA variants", "[contraction]") {
  // A read as [M, B, K] (a batch index between M and K), B as [B, N, K].
  KernelDef k = kernel_of(
      "kernel f(a: bf16[M, B, K], w: bf16[B, N, K]) -> (c: f32[B, M, N]) {\n"
      "  c[b, i, j] = sum(a[i, b, k] * w[b, j, k], k)\n}\n");
  std::unique_ptr<KernelPlan> plan = plan_kernel(k);
  bundle::KernelInfo info = info_of(k);
  info.steps = {manifest_step(*plan, 0, {"sm_90"})};
  const bundle::Step& bs = info.steps[0];
  int with_maps = 0, stores = 0;
  for (const bundle::Variant& v : bs.variants) {
    if (v.config.count("tma") == 0) {
      CHECK(v.tile.tensor_maps.empty());
      continue;
    }
    ++with_maps;
    CHECK(v.block_threads == 384);
    // Innermost first: 64 elements (128 bytes) of K, 1 batch, the tile's rows of M (or N; in a
    // cluster each block copies its share of B's rows).
    // With a TMA store, then the output's: 128 bytes (32 f32) of N, 64 rows of M, 1 batch.
    const bool store = v.config.count("tma_store") > 0;
    stores += store ? 1 : 0;
    REQUIRE(v.tile.tensor_maps.size() == (store ? 3u : 2u));
    CHECK(v.tile.tensor_maps[0] == bundle::TensorMapInfo{0, {64, 1, v.tile.m}});
    CHECK(v.tile.tensor_maps[1] == bundle::TensorMapInfo{1, {64, v.tile.n / v.tile.cluster, 1}});
    if (store) CHECK(v.tile.tensor_maps[2] == bundle::TensorMapInfo{2, {32, 64, 1}, true});
    CHECK(v.tile.cluster == (v.config.count("cluster") ? v.config.at("cluster") : 1));
  }
  // 128 x 256 in clusters of two (the default) and alone, 128 x 128, the two ping-pong tiles,
  // 128 x 256 with the staged epilogue alone and in clusters of two, 128 x 64, 128 x 128
  // split-K; the four of 128 x 256 store through TMA.
  CHECK(with_maps == 9);
  CHECK(stores == 4);
  CHECK(bs.variants[static_cast<size_t>(plan->steps[0].default_variant)].tile.cluster == 2);
  CHECK(bs.variants[static_cast<size_t>(plan->steps[0].default_variant)].config.count("tma") == 1);

  // What the runtime asks the driver for: a's dims innermost first, byte strides of the outer
  // ones; not encodable when a row is not a multiple of 16 bytes or the pointer misaligned.
  const launch::EncodedKernel enc = launch::encode(info);
  auto symbols = [&](int64_t M, int64_t B, int64_t K, int64_t N) {
    std::vector<int64_t> v;
    for (const std::string& s : info.symbols) {
      v.push_back(s == "M" ? M : s == "B" ? B : s == "K" ? K : N);
    }
    return v;
  };
  const bundle::TensorMapInfo a_map{0, {64, 1, 128}};
  launch::TensorMapRequest r = launch::tensor_map_request(info, enc, a_map, CUdeviceptr{1} << 40,
                                                          symbols(1000, 3, 4096, 17));
  CHECK(r.encodable);
  CHECK(r.rank == 3);
  CHECK(r.dims[0] == 4096);
  CHECK(r.dims[1] == 3);
  CHECK(r.dims[2] == 1000);
  CHECK(r.strides[0] == 4096 * 2);
  CHECK(r.strides[1] == 3 * 4096 * 2);
  CHECK(r.box[0] == 64);
  CHECK(r.box[2] == 128);
  CHECK_FALSE(
      launch::tensor_map_request(info, enc, a_map, CUdeviceptr{1} << 40, symbols(1000, 3, 4095, 17))
          .encodable);
  CHECK_FALSE(launch::tensor_map_request(info, enc, a_map, (CUdeviceptr{1} << 40) + 8,
                                         symbols(1000, 3, 4096, 17))
                  .encodable);
  // Extents past TMA's 2^32.
  CHECK_FALSE(launch::tensor_map_request(info, enc, a_map, CUdeviceptr{1} << 40,
                                         symbols(int64_t{1} << 33, 1, 8, 17))
                  .encodable);

  // The manifest refuses maps the kernels cannot have been built with.
  bundle::Manifest m;
  for (bundle::Variant& v : info.steps[0].variants) {
    for (bundle::ArchImage& im : v.images) im.ptx_hash = "0123456789abcdef";
  }
  const size_t vi = static_cast<size_t>(plan->steps[0].default_variant);
  auto refused = [&](auto&& change) {
    bundle::KernelInfo bad = info;
    change(bad.steps[0].variants[vi].tile.tensor_maps);
    m.kernels = {bad};
    Result<bundle::Manifest> r = bundle::parse_manifest(bundle::to_json(m), "m.json");
    return r.ok() ? std::string("(accepted)") : r.message();
  };
  const std::string at =
      fmt::format("m.json: kernels[0].steps[0].variants[{}].tile.tensor_maps", vi);
  CHECK(refused([](auto&) {}) == "(accepted)");
  CHECK(refused([](auto& t) { t[0].box[0] = 32; }) ==
        at + "[0].box[0]: expected 64 (the 128-byte swizzle), got 32");
  // f32 tensors are read too (tf32 operands), an output as well (read back by a later step), in
  // boxes of 128 bytes.
  CHECK(refused([](auto& t) { t[1].param = 2; }) ==
        at + "[1].box[0]: expected 32 (the 128-byte swizzle), got 64");
  CHECK(refused([](auto& t) {
          t[1].param = 2;
          t[1].box[0] = 32;
        }) == "(accepted)");
  // The output's map (the default stores through TMA) stores f32 in boxes of 32; an input's
  // cannot be stored to.
  REQUIRE(info.steps[0].variants[vi].tile.tensor_maps.size() == 3);
  CHECK(refused([](auto& t) { t[2].store = false; }) == "(accepted)");
  CHECK(refused([](auto& t) { t[0].store = true; }) ==
        at + "[0].param: a is not an output, bf16: tensor maps read bf16, f16 or f32 tensors and "
             "store bf16, f16 or f32 outputs");
  CHECK(refused([](auto& t) { t[2].box[0] = 64; }) ==
        at + "[2].box[0]: expected 32 (the 128-byte swizzle), got 64");
  m.kernels = {info};
  Result<bundle::Manifest> back = bundle::parse_manifest(bundle::to_json(m), "m.json");
  REQUIRE(back.ok());
  CHECK(back.value().kernels[0].steps[0].variants[vi].tile.tensor_maps ==
        info.steps[0].variants[vi].tile.tensor_maps);
  CHECK(refused([](auto& t) { t[1].box.pop_back(); }) ==
        at + "[1].box: expected one entry per dimension of w (3, at most 5)");
  CHECK(refused([](auto& t) { t[1].box[1] = 257; }).find("box[1]") != std::string::npos);
  CHECK(refused([](auto& t) {
          t.push_back(t[0]);
          t.push_back(t[0]);
          t.push_back(t[0]);
        }) == at + ": expected at most 4 maps");
}

TEST_CASE("contraction: operands without tensor maps run the variant that copies",
          "[contraction]") {
  KernelDef k = kernel_of(
      "kernel f(a: bf16[M, K], w: bf16[K, N]) -> (c: bf16[M, N]) {\n"
      "  c[i, j] = sum(a[i, k] * w[k, j], k)\n}\n");
  std::unique_ptr<KernelPlan> plan = plan_kernel(k);
  bundle::KernelInfo info = info_of(k);
  info.steps = {manifest_step(*plan, 0, {"sm_90"})};
  const bundle::Step& bs = info.steps[0];
  const int def = plan->steps[0].default_variant;
  const bundle::Variant& d = bs.variants[static_cast<size_t>(def)];
  REQUIRE_FALSE(d.tile.tensor_maps.empty());
  // The same tiles, copied by the MMA warps.
  REQUIRE(d.tile.map_fallback >= 0);
  const bundle::Variant& f = bs.variants[static_cast<size_t>(d.tile.map_fallback)];
  CHECK(f.tile.tensor_maps.empty());
  CHECK(f.tile.m == d.tile.m);
  CHECK(f.tile.n == d.tile.n);
  CHECK(f.config.at("wgmma") == 1);

  const launch::EncodedKernel enc = launch::encode(info);
  const bundle::DeviceFacts dev{132, true};
  std::vector<bool> loadable(bs.variants.size(), true);
  std::vector<launch::StepRule> rules{bundle::step_rule(bs, loadable, dev)};
  std::vector<std::vector<int64_t>> smem{std::vector<int64_t>(bs.variants.size(), 0)};
  auto run = [&](int64_t K, CUdeviceptr a, bool fallback, CUdeviceptr c = CUdeviceptr{3} << 40) {
    std::vector<int64_t> syms;
    for (const std::string& s : info.symbols) syms.push_back(s == "K" ? K : 4096);
    const std::vector<CUdeviceptr> ptrs{a, CUdeviceptr{2} << 40, c};
    launch::Layout out;
    const int variants[] = {def};
    REQUIRE(launch::lay_out(info, enc, rules, smem, ptrs, syms, variants, fallback, dev, out).ok());
    return out.steps[0].variant;
  };
  CHECK(run(4096, CUdeviceptr{1} << 40, true) == def);
  CHECK(run(4095, CUdeviceptr{1} << 40, true) == d.tile.map_fallback);        // rows of 8190 bytes
  CHECK(run(4096, (CUdeviceptr{1} << 40) + 2, true) == d.tile.map_fallback);  // misaligned
  // The output's map (a TMA store) is not needed: without it the kernel stores from registers.
  REQUIRE(d.tile.tensor_maps.size() == 3);
  CHECK(d.tile.tensor_maps[2].store);
  CHECK(run(4096, CUdeviceptr{1} << 40, true, (CUdeviceptr{3} << 40) + 2) == def);
  // An explicit variant (kiln run --variant, the tuner) runs as asked: it copies without maps.
  CHECK(run(4095, CUdeviceptr{1} << 40, false) == def);
  // A fallback that did not load is not run.
  loadable[static_cast<size_t>(d.tile.map_fallback)] = false;
  rules = {bundle::step_rule(bs, loadable, dev)};
  CHECK(run(4095, CUdeviceptr{1} << 40, true) == def);

  // The manifest refuses a fallback that is not another variant without maps.
  bundle::Manifest m;
  for (bundle::Variant& v : info.steps[0].variants) {
    for (bundle::ArchImage& im : v.images) im.ptx_hash = "0123456789abcdef";
  }
  info.steps[0].variants[static_cast<size_t>(def)].tile.map_fallback = def;
  m.kernels = {info};
  Result<bundle::Manifest> bad = bundle::parse_manifest(bundle::to_json(m), "m.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.message().find("map_fallback: expected another variant of the step without tensor "
                           "maps") != std::string::npos);
}

// A TMA store takes the kernel's one output (contraction_store_param): with two, or an output
// of integers, the 128 x 256 configs store as without it, and their entries take only
// the operands' maps.
TEST_CASE("contraction: which kernels store their output through TMA", "[contraction]") {
  auto maps = [](const std::string& text) {
    KernelDef k = kernel_of(text);
    std::unique_ptr<KernelPlan> plan = plan_kernel(k);
    const bundle::Step s = manifest_step(*plan, 0, {"sm_90"});
    return s.variants[static_cast<size_t>(plan->steps[0].default_variant)].tile.tensor_maps;
  };
  const std::vector<bundle::TensorMapInfo> one = maps(
      "kernel f(x: bf16[M, K], w: bf16[K, N], bias: bf16[N]) -> (y: f16[M, N]) {\n"
      "  t[i, j] = sum(x[i, k] * w[k, j], k) + bias[j]\n"
      "  y[i, j] = max(t[i, j], 0.0)\n}\n");
  REQUIRE(one.size() == 3);
  CHECK(one[2] == bundle::TensorMapInfo{3, {64, 64}, true});
  CHECK(maps("kernel f(x: bf16[M, K], w: bf16[K, N]) -> (h: f32[M, N], y: bf16[M, N]) {\n"
             "  t[i, j] = sum(x[i, k] * w[k, j], k)\n"
             "  h[i, j] = t[i, j]\n"
             "  y[i, j] = max(t[i, j], 0.0)\n}\n")
            .size() == 2);
  CHECK(maps("kernel f(x: bf16[M, K], w: bf16[K, N]) -> (y: i32[M, N]) {\n"
             "  t[i, j] = sum(x[i, k] * w[k, j], k)\n"
             "  y[i, j] = i32(t[i, j])\n}\n")
            .size() == 2);
}

TEST_CASE("contraction: a default-only bundle names no map fallback it lacks", "[contraction]") {
  KernelDef k = kernel_of(
      "kernel f(a: bf16[M, K], w: bf16[K, N]) -> (c: bf16[M, N]) {\n"
      "  c[i, j] = sum(a[i, k] * w[k, j], k)\n}\n");
  std::unique_ptr<KernelPlan> plan = plan_kernel(k);
  const bundle::Step all = manifest_step(*plan, 0, {"sm_90"});
  const bundle::Step one = manifest_step(*plan, 0, {"sm_90"}, /*default_only=*/true);
  REQUIRE(one.variants.size() == 1);
  CHECK_FALSE(one.variants[0].tile.tensor_maps.empty());
  CHECK(one.variants[0].tile.map_fallback == -1);
  CHECK(all.variants[static_cast<size_t>(plan->steps[0].default_variant)].tile.map_fallback >= 0);
}

// ptxas compiling for a link (nvJitLink's mode) serializes every wgmma and ignores setmaxnreg
// (compiler/toolkit.cpp): the sm_90a images of the warp-specialized variants must come out of
// a whole-program assembly, with registers enough for their setmaxnreg requests.
TEST_CASE("contraction: warp-specialized images keep their wgmma pipeline and setmaxnreg",
          "[contraction]") {
  Program p = parse_program(
      "kernel f(a: bf16[M, K], w: bf16[K, N], bias: bf16[N]) -> (c: bf16[M, N]) {\n"
      "  c[i, j] = sum(a[i, k] * w[k, j], k) + bias[j]\n}\n");
  // Only a missing toolkit skips; any other warning (ptxas refused an image) fails.
  const std::optional<CompiledBundle> compiled = testing::compile_with_cubins(p, {"sm_90"});
  if (!compiled) return;
  const CompiledBundle& b = *compiled;
  const bundle::Step& st = b.manifest.kernels.at(0).steps.at(0);
  int checked = 0, pingpong = 0;
  for (const bundle::Variant& v : st.variants) {
    if (!v.config.count("tma")) continue;
    const bundle::ArchImage& im = v.images.at(0);
    REQUIRE(im.arch == "sm_90a");
    const std::string& ptx = b.files.at(im.ptx);
    REQUIRE(ptx.find("setmaxnreg.inc") != std::string::npos);
    // The assembler compile_program used, again, for its report.
    Result<Cubin> cubin = assemble_cubin(ptx, "sm_90a");
    REQUIRE(cubin.ok());
    INFO(im.ptx << ": " << cubin->info_log);
    CHECK(cubin->info_log.find("serialized") == std::string::npos);
    CHECK(cubin->info_log.find("ignored") == std::string::npos);
    CHECK(cubin->registers == im.registers);
    ContractionConfig cfg;
    cfg.warps_m = static_cast<int>(v.config.at("warps_m"));
    cfg.warps_n = static_cast<int>(v.config.at("warps_n"));
    cfg.tma = 1;
    CHECK(im.registers * v.block_threads >= specialized_register_pool(cfg));
    ++checked;
    pingpong += v.config.count("pingpong") > 0;
  }
  CHECK(checked >= 3);
  CHECK(pingpong >= 1);
}

// The default for a transcendental epilogue is a TMA config; operands TMA cannot read (rank
// > 5) keep the 128 x 256 tiles copied by the MMA warps (this once failed to plan at all).
// Into a bf16 output tanh is tanh.approx.f32 (StepPlan::fast_functions): the staged epilogue
// then runs in clusters of two, as the plain default does.
TEST_CASE("contraction: a transcendental epilogue's default, with and without TMA",
          "[contraction]") {
  for (const bool deep : {false, true}) {
    for (const char* out : {"f32", "bf16"}) {
      const std::string b = deep ? "P, Q, R, S, " : "";
      const std::string i = deep ? "p, q, r, s, " : "";
      KernelDef k = kernel_of(
          fmt::format("kernel f(a: bf16[{0}M, K], w: bf16[K, N]) -> (c: {2}[{0}M, N]) {{\n"
                      "  c[{1}m, n] = tanh(sum(a[{1}m, k] * w[k, n], k))\n}}\n",
                      b, i, out));
      std::unique_ptr<KernelPlan> plan = plan_kernel(k);
      REQUIRE(plan->steps.size() == 1);
      const StepPlan& st = plan->steps[0];
      const auto& d =
          std::get<ContractionConfig>(st.variants[static_cast<size_t>(st.default_variant)].config);
      const bool fast = std::string(out) == "bf16";
      INFO("rank " << (deep ? 6 : 2) << ", " << out);
      CHECK(st.fast_functions == fast);
      CHECK(d.tma == (deep ? 0 : 1));
      CHECK(d.tile_n == 256);
      CHECK(d.smem_epilogue == (deep ? 0 : 1));
      CHECK(d.cluster == (!deep && fast ? 2 : 1));
    }
  }
}

// Every contraction config's dynamic shared memory fits what a Hopper block may opt in to
// (232448 bytes), for 2-byte and 4-byte elements' stages as planned (bf16/f16 operands); the
// staged epilogue's two buffers and the TMA store's four sit after the stages and barriers
// (the same bytes), 128-byte aligned, 1024-byte with TMA stores (the swizzle's pattern).
TEST_CASE("contraction: shared memory of every config, the epilogue buffers last",
          "[contraction]") {
  int staged = 0, stored = 0;
  for (const ContractionConfig& c : contraction_config_space()) {
    INFO(c.tile_m << " x " << c.tile_n << ", " << c.stages << " stages");
    CHECK(c.smem_bytes(2) <= 232448);
    if (!c.smem_epilogue && !c.tma_store) {
      CHECK(c.smem_bytes(2) == c.stages * c.stage_bytes(2) + c.barrier_bytes());
      continue;
    }
    staged += c.smem_epilogue;
    stored += c.tma_store;
    CHECK(c.tma == 1);
    CHECK(c.tile_n % ContractionConfig::kEpilogueColumns == 0);
    CHECK(c.epilogue_offset(2) % (c.tma_store ? 1024 : 128) == 0);
    CHECK(c.epilogue_offset(2) >= c.stages * c.stage_bytes(2) + c.barrier_bytes());
    CHECK(c.smem_bytes(2) == c.epilogue_offset(2) + (c.tma_store
                                                         ? 4 * ContractionConfig::kStoreBufferBytes
                                                         : 2 * ContractionConfig::kEpilogueBytes));
  }
  CHECK(staged >= 1);
  CHECK(stored == 4);
  CHECK(default_contraction_config().tma_store == 1);
  CHECK(default_contraction_config_heavy().tma_store == 1);
  CHECK(default_contraction_config_heavy().smem_epilogue == 1);
  CHECK(default_contraction_config().smem_epilogue == 0);
}
