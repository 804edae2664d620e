// Scans (cumsum, cumprod, cummax, cummin) through the layers that run without a GPU: the parser
// and printer (round trips), the verifier's located errors, the interpreter's hand-computed
// results (inclusive, NaN, i32 wrapping, prologue and epilogue), the scheduler (a kernel of its
// own, the epilogue joining it, a read at another point refused), the plan (variants, tiers,
// the split for one long row) and the manifest (a scan step round-trips).
#include <catch2/catch.hpp>
#include <climits>
#include <cmath>

#include "bundle/rule.h"
#include "compiler/kernel_plan.h"
#include "compiler/schedule.h"
#include "ir/interpreter.h"
#include "ir/text.h"
#include "runtime/launch.h"
#include "tests/unit/test_support.h"

using namespace kiln;
using kiln::testing::read_example;

namespace {

std::string error_at(const std::string& src, uint32_t* line = nullptr, uint32_t* col = nullptr) {
  try {
    parse_program(src);
  } catch (const UserError& e) {
    if (line) *line = e.loc().line;
    if (col) *col = e.loc().col;
    return e.what();
  }
  return "<no error>";
}

// Runs kernel `name` of `src` on x (shape `shape`, dtype of x) and returns output `out`.
std::vector<double> run(const std::string& src, const std::vector<int64_t>& shape,
                        const std::vector<double>& x, const SymbolValues& syms,
                        const std::string& out = "y") {
  Program p = parse_program(src);
  const KernelDef& k = p.kernels.at(0);
  HostTensor in(k.inputs.at(0).dtype, shape);
  for (size_t i = 0; i < x.size(); ++i) in.set(static_cast<int64_t>(i), x[i]);
  std::map<std::string, HostTensor, std::less<>> outs;
  std::map<std::string, HostTensor*, std::less<>> args{{k.inputs[0].name, &in}};
  for (const TensorDecl& t : k.outputs) {
    outs.emplace(t.name, HostTensor(t.dtype, resolve_shape(t.shape, syms)));
  }
  for (auto& [n, t] : outs) args[n] = &t;
  interpret(k, syms, args);
  const HostTensor& y = outs.at(out);
  std::vector<double> v;
  for (int64_t i = 0; i < y.numel(); ++i) v.push_back(y.get(i));
  return v;
}

bool same(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) ? !std::isnan(got[i]) : got[i] != want[i]) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("scans print canonically and parse back", "[ir][scan]") {
  const std::string src =
      "kernel k(x: f32[M, N], n: i32[M, N]) -> (a: f32[M, N], b: f32[M, N], c: i32[M, N], "
      "d: f32[M, N], e: f32[M, N]) {\n"
      "  a[i, j] = cumsum(x[i, j] * 2.0 - 1.0, j)\n"
      "  b[i, j] = cumprod(x[i, j], i)\n"
      "  c[i, j] = cummax(n[i, j] + i, j)\n"
      "  d[i, j] = cummin(where(x[i, j] > 0.0, x[i, j], -x[i, j]), i)\n"
      "  e[i, j] = cumsum(x[i, j] - max(x[i, k], k), j)\n"
      "}\n";
  Program p = parse_program(src);
  CHECK(print(p) == src);
  CHECK(parse_program(print(p)) == p);
  const Scan* s = p.kernels[0].body[0].value.as<Scan>();
  REQUIRE(s != nullptr);
  CHECK(s->op == ReduceOp::sum);
  CHECK(s->index == "j");
  CHECK(p.kernels[0].body[2].value.type() == DType::i32);
  // A scan's name is not a reduction's: sum(x, j) with j bound is an error, cumsum is not.
  CHECK(error_at("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[j] = sum(x[j], j)\n}\n") ==
        "reduction index 'j' is already bound");
}

TEST_CASE("scan errors are located", "[ir][scan]") {
  uint32_t line = 0, col = 0;
  CHECK(error_at("kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cumsum(x[i, j], k)\n}\n",
                 &line, &col) ==
        "scan index 'k' is not bound by the left-hand side (a scan runs along one of its "
        "statement's indices)");
  CHECK(line == 2);
  CHECK(col == 29);
  CHECK(error_at("kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = 1.0 + cumsum(x[i, j], "
                 "j)\n}\n",
                 &line, &col) ==
        "cumsum must be the whole right-hand side of a statement (not supported yet): write "
        "t[...] = cumsum(..., j) and read t");
  CHECK(col == 19);
  CHECK(error_at("kernel k(x: f32[M, N]) -> (y: f32[M]) {\n  y[i] = sum(cumsum(x[i, j], j), "
                 "j)\n}\n") ==
        "cumsum must be the whole right-hand side of a statement (not supported yet): write "
        "t[...] = cumsum(..., j) and read t");
  CHECK(error_at("kernel k(x: f32[M, N]) -> (y: f32[M]) {\n  y[i] = sum(cumsum(x[i, j], i), "
                 "j)\n}\n") ==
        "cumsum must be the whole right-hand side of a statement (not supported yet): write "
        "t[...] = cumsum(..., i) and read t");
  CHECK(error_at("kernel k(x: f32[M]) -> (y: f32[M, N]) {\n  y[i, j] = cumsum(x[i], j)\n}\n", &line,
                 &col) == "scan index 'j' is not used in its body");
  CHECK(col == 26);
  CHECK(error_at("kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cumsum(x[i, j], "
                 "j + 1)\n}\n") == "the second argument of cumsum must be an index variable");
  CHECK(error_at("kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cumprod(x[i, j])\n}\n") ==
        "cumprod takes 2 arguments (a body and an index variable) but 1 was given");
  CHECK(error_at("kernel k(x: u32[N]) -> (y: u32[N]) {\n  y[j] = cummin(x[j], j)\n}\n") ==
        "cummin needs an f32 or i32 body but got u32 (scans over i64 and u32 are not supported "
        "yet)");
  // The verifier checks scans built through the API.
  Program p = parse_program("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[j] = cumsum(x[j], j)\n}\n");
  KernelDef& k = p.kernels[0];
  k.body[0].value = make_scan(ReduceOp::max, "q", make_load("x", {"j"}, DType::f32));
  CHECK_THROWS_WITH(verify(k), Catch::Contains("scan index 'q' is not bound"));
}

TEST_CASE("interpreter: scans are inclusive, in index order", "[ir][scan]") {
  const SymbolValues s{{"M", 2}, {"N", 4}};
  const std::vector<double> x = {1, 2, 3, 4, -1, 5, -2, 0.5};
  CHECK(run("kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cumsum(x[i, j], j)\n}\n",
            {2, 4}, x, s) == std::vector<double>{1, 3, 6, 10, -1, 4, 2, 2.5});
  CHECK(run("kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cumsum(x[i, j], i)\n}\n",
            {2, 4}, x, s) == std::vector<double>{1, 2, 3, 4, 0, 7, 1, 4.5});
  CHECK(run("kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cumprod(x[i, j], j)\n}\n",
            {2, 4}, x, s) == std::vector<double>{1, 2, 6, 24, -1, -5, 10, 5});
  CHECK(run("kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cummax(x[i, j], j)\n}\n",
            {2, 4}, x, s) == std::vector<double>{1, 2, 3, 4, -1, 5, 5, 5});
  CHECK(run("kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = cummin(x[i, j], j)\n}\n",
            {2, 4}, x, s) == std::vector<double>{1, 1, 1, 1, -1, -1, -2, -2});
  // A prologue using the index's value, and an epilogue reading the scan at its own point.
  CHECK(run("kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n  s[i, j] = cumsum(x[i, j] * 2.0 + "
            "f32(j), j)\n  y[i, j] = s[i, j] - 1.0\n}\n",
            {2, 4}, x, s) == std::vector<double>{1, 6, 14, 25, -3, 8, 6, 10});
}

TEST_CASE("interpreter: cummax and cummin propagate NaN, i32 sums wrap", "[ir][scan]") {
  const SymbolValues s{{"N", 4}};
  const std::vector<double> x = {1, NAN, 3, -INFINITY};
  CHECK(same(run("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[j] = cummax(x[j], j)\n}\n", {4}, x, s),
             {1, NAN, NAN, NAN}));
  CHECK(same(run("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[j] = cummin(x[j], j)\n}\n", {4}, x, s),
             {1, NAN, NAN, NAN}));
  CHECK(same(run("kernel k(x: f32[N]) -> (y: f32[N]) {\n  y[j] = cumsum(x[j], j)\n}\n", {4},
                 {1, 2, INFINITY, -INFINITY}, s),
             {1, 3, INFINITY, NAN}));
  CHECK(run("kernel k(n: i32[N]) -> (y: i32[N]) {\n  y[j] = cumsum(n[j], j)\n}\n", {4},
            {INT32_MAX, 1, 2, -5}, s) ==
        std::vector<double>{INT32_MAX, INT32_MIN, INT32_MIN + 2, INT32_MIN - 3.0 + 4294967296.0});
  // bf16 in and out: accumulated wide, rounded once on the store (257 and 259 are ties: to
  // even, 256 and 260).
  CHECK(run("kernel k(x: bf16[N]) -> (y: bf16[N]) {\n  y[j] = cumsum(x[j], j)\n}\n", {4},
            {256, 1, 1, 1}, s) == std::vector<double>{256, 256, 258, 260});
}

TEST_CASE("schedule: a scan is a kernel of its own, with its epilogue", "[compiler][scan]") {
  Program p = parse_program(read_example("scan"));
  const Schedule fused = schedule_kernel(*p.find_kernel("cumsum_fused"));
  REQUIRE(fused.kernels.size() == 1);
  CHECK(fused.kernels[0].kind == StepKind::scan);
  CHECK(fused.kernels[0].scan_axis == 1);
  CHECK(fused.buffers.empty());
  CHECK(fused.kernels[0].def.temps.size() == 1);  // s stays on chip
  const Schedule cols = schedule_kernel(*p.find_kernel("cummin_cols"));
  CHECK(cols.kernels[0].scan_axis == 1);
  CHECK(cols.kernels[0].kind_reason.find("an outer index") != std::string::npos);

  // A statement reading the scan at another point cannot join it: the scan is a buffer.
  Program r = parse_program(
      "kernel k(x: f32[M, N]) -> (y: f32[N, M]) {\n"
      "  s[i, j] = cumsum(x[i, j], j)\n"
      "  y[j, i] = s[i, j] + 1.0\n"
      "}\n");
  const Schedule rs = schedule_kernel(r.kernels[0]);
  REQUIRE(rs.kernels.size() == 2);
  CHECK(rs.kernels[0].kind == StepKind::scan);
  CHECK(rs.kernels[1].kind == StepKind::pointwise);
  REQUIRE(rs.buffers.size() == 1);
  CHECK(rs.buffers[0].name == "s");
  REQUIRE(!rs.refusals.empty());
  CHECK(rs.refusals[0].reason.find("k0 is a scan") != std::string::npos);
  // A reduction in the prologue is lifted into a kernel before the scan.
  Program t = parse_program(
      "kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n"
      "  y[i, j] = cumsum(exp(x[i, j] - max(x[i, k], k)), j)\n"
      "}\n");
  const Schedule ts = schedule_kernel(t.kernels[0]);
  REQUIRE(ts.kernels.size() == 2);
  CHECK(ts.kernels[0].kind == StepKind::row_reduction);
  CHECK(ts.kernels[1].kind == StepKind::scan);
  // The schedule's kernels compute what the kernel does.
  const SymbolValues syms{{"M", 3}, {"N", 5}};
  HostTensor x(DType::f32, {3, 5}), y1(DType::f32, {3, 5}), y2(DType::f32, {3, 5});
  for (int64_t i = 0; i < 15; ++i) x.set(i, 0.25 * static_cast<double>(i % 7) - 0.5);
  std::map<std::string, HostTensor*, std::less<>> a{{"x", &x}, {"y", &y1}},
      b{{"x", &x}, {"y", &y2}};
  interpret(t.kernels[0], syms, a);
  run_schedule(ts, syms, b);
  for (int64_t i = 0; i < 15; ++i) CHECK(y1.get(i) == Approx(y2.get(i)).epsilon(1e-6));
}

TEST_CASE("plan: scan variants, tiers and the split for one long row", "[compiler][scan]") {
  Program p = parse_program(read_example("scan"));
  std::unique_ptr<KernelPlan> rows = plan_kernel(*p.find_kernel("cumsum_rows"));
  REQUIRE(rows->steps.size() == 1);
  const StepPlan& st = rows->steps[0];
  CHECK(st.kind == StepKind::scan);
  CHECK(st.row_scan());
  CHECK(st.max_vec == 4);
  CHECK(st.space.size() == 1);
  CHECK(product_text(st.reduced) == "N");
  const auto& def =
      std::get<ScanConfig>(st.variants[static_cast<size_t>(st.default_variant)].config);
  CHECK(def == ScanConfig{256, 256, 4, 2, false});

  const bundle::Step written = manifest_step(*rows, 0, {"sm_90"});
  CHECK(written.kind == StepKind::scan);
  const bundle::DeviceFacts h100{132, true};
  const bundle::StepRule rule =
      bundle::step_rule(written, std::vector<bool>(written.variants.size(), true), h100);
  auto pick = [&](int64_t rows_n, int64_t len) {
    const int v = bundle::heuristic_variant(written, rule, rows_n, len, h100);
    return std::get<ScanConfig>(st.variants[static_cast<size_t>(v)].config);
  };
  // f32 rows of up to 8 KiB: a warp each; up to 256 KiB: a block with one chunk a step;
  // longer: the default's two.
  const ScanConfig one{256, 256, 4, 1, false};
  CHECK(pick(4096, 1000).group == 32);
  CHECK(pick(4096, 2048).group == 32);
  CHECK(pick(4096, 2049) == one);
  CHECK(pick(4096, 32768) == one);
  CHECK(pick(4096, 65536) == one);
  CHECK(pick(4096, 65537) == def);
  // 16-bit rows (vectors of 8): a warp each up to 64 KiB, then the default.
  std::unique_ptr<KernelPlan> half = plan_kernel(*p.find_kernel("cumsum_bf16"));
  const bundle::Step half_written = manifest_step(*half, 0, {"sm_90"});
  const bundle::StepRule half_rule =
      bundle::step_rule(half_written, std::vector<bool>(half_written.variants.size(), true), h100);
  auto pick_half = [&](int64_t len) {
    const int v = bundle::heuristic_variant(half_written, half_rule, 4096, len, h100);
    return std::get<ScanConfig>(half->steps[0].variants[static_cast<size_t>(v)].config);
  };
  CHECK(pick_half(32768).group == 32);
  CHECK(pick_half(32769) == ScanConfig{256, 256, 8, 2, false});
  CHECK(pick(1, 67108864).split);
  CHECK(pick(3, 100003).split);
  CHECK_FALSE(pick(1, 5000).split);  // too short to give each of its blocks two chunks
  CHECK_FALSE(pick(200, 67108864 / 200).split);
  for (const bundle::Variant& v : written.variants) {
    // A look-back's records (kLookbackSlots words a block); a chunk is a block's vectors.
    if (v.split.phases > 0) {
      CHECK(v.split == bundle::SplitInfo{2, kLookbackSlots, int64_t{v.block_threads} * 4});
    }
  }
  // The manifest's text form keeps the scan step.
  bundle::Manifest m;
  bundle::KernelInfo info;
  info.name = "cumsum_rows";
  info.hash = "0123456789abcdef";
  info.symbols = {"M", "N"};
  info.params = {{"x", DType::f32, {Dim::symbol("M"), Dim::symbol("N")}, false},
                 {"y", DType::f32, {Dim::symbol("M"), Dim::symbol("N")}, true}};
  info.steps = {written};
  for (bundle::Variant& v : info.steps[0].variants) {
    for (bundle::ArchImage& im : v.images) im.ptx_hash = "0123456789abcdef";
  }
  m.kernels = {info};
  auto back = bundle::parse_manifest(bundle::to_json(m), "scan");
  REQUIRE(back.ok());
  CHECK(back->kernels[0].steps[0] == info.steps[0]);

  // Outer scans: scalar columns, no tiers, no split, the default for every size.
  std::unique_ptr<KernelPlan> cols = plan_kernel(*p.find_kernel("cumsum_cols"));
  const StepPlan& oc = cols->steps[0];
  CHECK_FALSE(oc.row_scan());
  CHECK(oc.space[0].to_string() == "N");
  CHECK(product_text(oc.reduced) == "M");
  const bundle::Step ow = manifest_step(*cols, 0, {});
  const bundle::StepRule orule =
      bundle::step_rule(ow, std::vector<bool>(ow.variants.size(), true), h100);
  CHECK(orule.tiers.empty());
  CHECK(orule.split < 0);
  CHECK(bundle::heuristic_variant(ow, orule, 7, 100003, h100) == oc.default_variant);
}

TEST_CASE("runtime: the launch layout of row, split and outer scans", "[runtime][scan]") {
  Program p = parse_program(read_example("scan"));
  const bundle::DeviceFacts h100{132, true};
  const std::vector<CUdeviceptr> ptrs{CUdeviceptr{1} << 40, CUdeviceptr{2} << 40};
  for (const char* name : {"cumsum_rows", "cumsum_cols"}) {
    const KernelDef& k = *p.find_kernel(name);
    std::unique_ptr<KernelPlan> plan = plan_kernel(k);
    bundle::KernelInfo info;
    info.name = name;
    for (const TensorDecl* t : k.params()) {
      info.params.push_back({t->name, t->dtype, t->shape, t->role == TensorRole::output});
    }
    info.symbols = k.symbols();
    info.steps = {manifest_step(*plan, 0, {"sm_90"})};
    const bundle::Step& bs = info.steps[0];
    const launch::EncodedKernel enc = launch::encode(info);
    std::vector<launch::StepRule> rules{
        bundle::step_rule(bs, std::vector<bool>(bs.variants.size(), true), h100)};
    std::vector<std::vector<int64_t>> smem{std::vector<int64_t>(bs.variants.size(), 0)};
    const bool rows = std::string(name) == "cumsum_rows";
    for (size_t vi = 0; vi < bs.variants.size(); ++vi) {
      const bundle::Variant& v = bs.variants[vi];
      for (auto [M, N] : {std::pair<int64_t, int64_t>{1, 1},
                          {7, 1000},
                          {4096, 32768},
                          {1, 67108864},
                          {100003, 3}}) {
        INFO(name << " v" << vi << " M=" << M << " N=" << N);
        const std::vector<int64_t> syms{M, N};  // both kernels' symbols are M, N
        launch::Layout out;
        const int variants[] = {static_cast<int>(vi)};
        REQUIRE(
            launch::lay_out(info, enc, rules, smem, ptrs, syms, variants, false, h100, out).ok());
        const int64_t lines = rows ? M : N, len = rows ? N : M;
        CHECK(out.steps[0].block == static_cast<unsigned>(v.block_threads));
        if (v.split.phases > 0) {
          // One row per tile, S blocks per row, a look-back's records per block.
          const int64_t S = bundle::split_blocks(lines, len, v.split.chunk, 132,
                                                 bundle::resident_blocks(v, h100));
          CHECK(out.steps[0].grid == lines * S);
          CHECK(out.steps[0].phases == 2);
          CHECK(out.steps[0].workspace_bytes == 4 * kLookbackSlots * lines * S);
        } else {
          CHECK(out.steps[0].grid == (lines + v.elements_per_block - 1) / v.elements_per_block);
          CHECK(out.steps[0].phases == 0);
          CHECK(out.steps[0].workspace_bytes == 0);
        }
      }
    }
  }
}
