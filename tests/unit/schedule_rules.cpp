// Unit tests of the fusion scheduler (compiler/schedule.h): each fusion rule (vertical into a
// reduction, epilogues, horizontal siblings, a reduction into a pointwise kernel), each
// refusal (different iteration spaces, a cycle), which kernel a node joins, the normalization
// of nested and lifted reductions, buffers for intermediates used across kernels, kinds and
// bytes from the sizes, and that every example's schedule runs like the original program.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "compiler/schedule.h"
#include "ir/interpreter.h"
#include "ir/text.h"
#include "tests/unit/test_support.h"

using namespace kiln;
using kiln::testing::read_example;

namespace {

const Dim M = Dim::symbol("M");
const Dim N = Dim::symbol("N");

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

KernelDef kernel_of_text(const std::string& src) {
  Program p = parse_program(src);
  REQUIRE(p.kernels.size() == 1);
  return p.kernels[0];
}

Schedule schedule_text(const std::string& src, SymbolValues sizes = {}) {
  ScheduleOptions opts;
  opts.sizes = std::move(sizes);
  return schedule_kernel(kernel_of_text(src), opts);
}

/// The node that defines `target`.
const ScheduleNode& node(const Schedule& s, std::string_view target) {
  for (const ScheduleNode& n : s.nodes) {
    if (n.target == target) return n;
  }
  FAIL("no node defines '" << target << "'");
  throw std::logic_error("unreachable");
}

/// The first kernel whose nodes include the node that defines `target`; -1 when none does.
int kernel_of(const Schedule& s, std::string_view target) {
  int id = node(s, target).id;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const std::vector<int>& ns = s.kernels[k].nodes;
    if (std::find(ns.begin(), ns.end(), id) != ns.end()) return static_cast<int>(k);
  }
  return -1;
}

const TensorDecl* buffer(const Schedule& s, std::string_view name) {
  for (const TensorDecl& b : s.buffers) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

std::set<std::string> names(const std::vector<TensorDecl>& ts) {
  std::set<std::string> out;
  for (const TensorDecl& t : ts) out.insert(t.name);
  return out;
}

std::vector<const FusionRefusal*> refusals_of(const Schedule& s, std::string_view target) {
  std::vector<const FusionRefusal*> out;
  int id = node(s, target).id;
  for (const FusionRefusal& r : s.refusals) {
    if (r.node == id) out.push_back(&r);
  }
  return out;
}

const FusionRefusal* refusal(const Schedule& s, std::string_view target, int kernel) {
  for (const FusionRefusal* r : refusals_of(s, target)) {
    if (r->kernel == kernel) return r;
  }
  return nullptr;
}

bool is_reduction(StepKind k) {
  return k != StepKind::pointwise;
}

/// The invariants of every schedule: the normalized kernel and each kernel's def verify and
/// round-trip through the printer, every node is scheduled, kernels are in statement order
/// and never read a node of a later kernel, buffers are temporaries of known shape.
void check_well_formed(const Schedule& s, const KernelDef& original) {
  INFO(print_schedule(s));
  REQUIRE_NOTHROW(verify(s.normalized));
  CHECK(parse_program(print(s.normalized)).kernels.at(0) == s.normalized);
  CHECK(s.normalized.inputs == original.inputs);
  CHECK(s.normalized.outputs == original.outputs);
  REQUIRE(s.nodes.size() == s.normalized.body.size());
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    CHECK(s.nodes[i].id == static_cast<int>(i));
    CHECK(s.nodes[i].target == s.normalized.body[i].target);
  }
  REQUIRE(!s.kernels.empty());
  // Live nodes: outputs and what they read. Dead statements need no kernel.
  std::vector<bool> live(s.nodes.size(), false);
  for (int i = static_cast<int>(s.nodes.size()) - 1; i >= 0; --i) {
    const TensorDecl* t = original.find_tensor(s.nodes[i].target);
    if (t != nullptr && t->role == TensorRole::output) live[i] = true;
    if (live[i]) {
      for (int d : s.nodes[i].deps) live[d] = true;
    }
  }
  std::vector<int> first_kernel(s.nodes.size(), -1);
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const ScheduledKernel& sk = s.kernels[k];
    INFO("kernel " << sk.name << "\n" << print(sk.def));
    CHECK(sk.name == original.name + "_k" + std::to_string(k));
    REQUIRE_NOTHROW(verify(sk.def));
    Program back = parse_program(print(sk.def));
    REQUIRE(back.kernels.size() == 1);
    CHECK(back.kernels[0] == sk.def);
    CHECK(!sk.nodes.empty());
    CHECK(std::is_sorted(sk.nodes.begin(), sk.nodes.end()));
    CHECK(!sk.kind_reason.empty());
    CHECK(!sk.bytes.empty());
    CHECK(is_reduction(sk.kind) == !sk.reduced.empty());
    if (is_reduction(sk.kind)) CHECK(sk.row_phases >= 1);
    for (int n : sk.nodes) {
      REQUIRE(n >= 0);
      REQUIRE(n < static_cast<int>(s.nodes.size()));
      if (first_kernel[n] < 0) first_kernel[n] = static_cast<int>(k);
    }
  }
  for (const ScheduleNode& n : s.nodes) {
    INFO("node " << n.id << " '" << n.target << "'");
    if (!live[n.id]) continue;
    CHECK(first_kernel[n.id] >= 0);
    for (int d : n.deps) {
      CHECK(d < n.id);
      CHECK(first_kernel[d] <= first_kernel[n.id]);
    }
  }
  for (const TensorDecl& b : s.buffers) {
    CHECK(b.role == TensorRole::temp);
    CHECK((original.find_tensor(b.name) == nullptr ||
           original.find_tensor(b.name)->role == TensorRole::temp));
    const TensorDecl* t = s.normalized.find_tensor(b.name);
    REQUIRE(t != nullptr);
    CHECK(t->shape == b.shape);
  }
}

/// Uniform [-1, 1] inputs; runs `k` with the interpreter and `s` kernel by kernel, and
/// compares every output with a relative tolerance (bf16 and f16 outputs: a few of their ulps,
/// since a buffer rounded to f32 may move a value across a rounding boundary).
void check_runs_like_interpreter(const KernelDef& k, const Schedule& s, const SymbolValues& syms,
                                 uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::map<std::string, HostTensor, std::less<>> want, got;
  for (const TensorDecl* t : k.params()) {
    HostTensor h(t->dtype, resolve_shape(t->shape, syms));
    if (t->role == TensorRole::input) {
      for (int64_t i = 0; i < h.numel(); ++i) {
        h.set(i, t->dtype == DType::i32 ? std::round(dist(rng) * 1000) : dist(rng));
      }
    }
    want[t->name] = h;
    got[t->name] = h;
  }
  std::map<std::string, HostTensor*, std::less<>> want_ptrs, got_ptrs;
  for (auto& [name, t] : want) want_ptrs[name] = &t;
  for (auto& [name, t] : got) got_ptrs[name] = &t;
  interpret(k, syms, want_ptrs);
  run_schedule(s, syms, got_ptrs);
  for (const TensorDecl& o : k.outputs) {
    const HostTensor& w = want.at(o.name);
    const HostTensor& g = got.at(o.name);
    REQUIRE(g.numel() == w.numel());
    double tol = o.dtype == DType::f32 ? 1e-5 : 2e-2;
    for (int64_t i = 0; i < w.numel(); ++i) {
      INFO("output " << o.name << " element " << i);
      CHECK(std::abs(g.get(i) - w.get(i)) <= tol * std::max(1.0, std::abs(w.get(i))));
    }
  }
}

/// Schedules `src` and checks the invariants and the result at two sizes.
Schedule schedule_and_check(const std::string& src, SymbolValues sizes = {}) {
  KernelDef k = kernel_of_text(src);
  ScheduleOptions opts;
  opts.sizes = sizes;
  Schedule s = schedule_kernel(k, opts);
  check_well_formed(s, k);
  for (int64_t m : {1, 3}) {
    SymbolValues syms;
    for (const std::string& sym : k.symbols()) syms[sym] = sym == "N" ? 5 : sym == "M" ? m : 4;
    check_runs_like_interpreter(k, s, syms, static_cast<uint32_t>(m));
  }
  return s;
}

}  // namespace

// --- The examples of the issue ----------------------------------------------------------------

TEST_CASE("normalizations, logsumexp and mean + variance are one reduction kernel", "[schedule]") {
  for (const char* name :
       {"softmax", "layernorm", "rmsnorm", "logsumexp", "add_rmsnorm", "mean_var", "rowsum"}) {
    INFO(name);
    std::string src = read_example(name);
    Schedule s = schedule_and_check(src, {{"M", 4096}, {"N", 1024}});
    INFO(print_schedule(s));
    REQUIRE(s.kernels.size() == 1);
    const ScheduledKernel& k = s.kernels[0];
    CHECK(k.kind == StepKind::row_reduction);
    CHECK(k.space == std::vector<Dim>{M});
    CHECK(k.reduced == std::vector<Dim>{N});
    CHECK(k.nodes.size() == s.nodes.size());
    // Everything between the input and the outputs stays on chip.
    CHECK(s.buffers.empty());
    CHECK(s.refusals.empty());
    KernelDef orig = kernel_of_text(src);
    CHECK(names(k.def.inputs) == names(orig.inputs));
    CHECK(names(k.def.outputs) == names(orig.outputs));
  }
}

TEST_CASE("bias + gelu and add are one pointwise kernel", "[schedule]") {
  for (const char* name : {"bias_gelu", "add", "swiglu", "transpose", "mixed", "causal_mask"}) {
    INFO(name);
    std::string src = read_example(name);
    Schedule s = schedule_and_check(src);
    INFO(print_schedule(s));
    CHECK(s.buffers.empty());
    for (const ScheduledKernel& k : s.kernels) CHECK(k.kind == StepKind::pointwise);
    if (std::string(name) != "mixed") CHECK(s.kernels.size() == 1);
  }
  Schedule s = schedule_text(read_example("bias_gelu"));
  REQUIRE(s.kernels.size() == 1);
  CHECK(s.kernels[0].space == std::vector<Dim>{M, N});
  CHECK(kernel_of(s, "h") == 0);
  CHECK(kernel_of(s, "y") == 0);
  CHECK(buffer(s, "h") == nullptr);
  CHECK(names(s.kernels[0].def.inputs) == std::set<std::string>{"x", "b"});
  CHECK(names(s.kernels[0].def.outputs) == std::set<std::string>{"y"});
}

TEST_CASE("a row sum and a column sum of the result are two kernels", "[schedule]") {
  Schedule s = schedule_and_check(read_example("rowsum_colsum"), {{"M", 4096}, {"N", 1024}});
  INFO(print_schedule(s));
  REQUIRE(s.kernels.size() == 2);
  CHECK(kernel_of(s, "r") == 0);
  CHECK(kernel_of(s, "c") == 1);
  CHECK(s.kernels[0].space == std::vector<Dim>{M});
  CHECK(s.kernels[0].reduced == std::vector<Dim>{N});
  CHECK(s.kernels[1].space == std::vector<Dim>{N});
  CHECK(s.kernels[1].reduced == std::vector<Dim>{M});
  CHECK(s.kernels[1].kind == StepKind::outer_reduction);
  // r crosses kernels: a buffer of its shape, written by the first and read by the second.
  const TensorDecl* r = buffer(s, "r");
  REQUIRE(r != nullptr);
  CHECK(r->shape == std::vector<Dim>{M});
  CHECK(r->dtype == DType::f32);
  CHECK(s.buffers.size() == 1);
  CHECK(names(s.kernels[0].def.outputs) == std::set<std::string>{"r"});
  CHECK(names(s.kernels[1].def.inputs) == std::set<std::string>{"x", "r"});
  CHECK(names(s.kernels[1].def.outputs) == std::set<std::string>{"c"});
  // c reads r from kernel 0 but folds i, which kernel 0 keeps.
  const FusionRefusal* why = refusal(s, "c", 0);
  REQUIRE(why != nullptr);
  CHECK(!why->reason.empty());
}

TEST_CASE("dividing by a global max needs the whole max: three kernels, a cycle refused",
          "[schedule]") {
  Schedule s = schedule_and_check(read_example("global_max_norm"), {{"M", 4096}, {"N", 1024}});
  INFO(print_schedule(s));
  INFO(explain_schedule(s));
  // The nested max is normalized into a row max [M] and a max of the rows [].
  REQUIRE(s.nodes.size() == 3);
  const ScheduleNode& rows = s.nodes[0];
  CHECK(rows.space == std::vector<Dim>{M});
  CHECK(rows.reduced == std::vector<Dim>{N});
  CHECK(node(s, "g").space.empty());
  CHECK(node(s, "g").reduced == std::vector<Dim>{M});
  CHECK(node(s, "g").deps == std::vector<int>{rows.id});
  REQUIRE(s.kernels.size() == 3);
  CHECK(kernel_of(s, rows.target) == 0);
  CHECK(kernel_of(s, "g") == 1);
  CHECK(kernel_of(s, "y") == 2);
  CHECK(s.kernels[2].kind == StepKind::pointwise);
  // y fits the row-max kernel's space (M, N) but reads g, which that kernel's result feeds:
  // joining it would make a cycle.
  const FusionRefusal* why = refusal(s, "y", 0);
  REQUIRE(why != nullptr);
  CHECK_THAT(lower(why->reason), Catch::Contains("cycle"));
  CHECK_THAT(explain_schedule(s), Catch::Contains(why->reason));
  // Both intermediates cross kernels: the row maxima [M] and the max [].
  REQUIRE(buffer(s, rows.target) != nullptr);
  CHECK(buffer(s, rows.target)->shape == std::vector<Dim>{M});
  REQUIRE(buffer(s, "g") != nullptr);
  CHECK(buffer(s, "g")->shape.empty());
  CHECK(s.buffers.size() == 2);
}

// --- Fusion rules ---------------------------------------------------------------------------

TEST_CASE("vertical: a pointwise producer of numel M*N joins the (M, N) reduction", "[schedule]") {
  Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N], b: f32[N]) -> (s: f32[M]) {
  h[i, j] = x[i, j] + b[j]
  s[i] = sum(h[i, j] * h[i, j], j)
})");
  REQUIRE(s.kernels.size() == 1);
  // A reduction joining a pointwise kernel of space O + [R] makes it a reduction kernel.
  CHECK(is_reduction(s.kernels[0].kind));
  CHECK(s.kernels[0].space == std::vector<Dim>{M});
  CHECK(s.kernels[0].reduced == std::vector<Dim>{N});
  CHECK(kernel_of(s, "h") == 0);
  CHECK(s.buffers.empty());
}

TEST_CASE("vertical: consumers of a reduction are its epilogue", "[schedule]") {
  SECTION("row level: S = O") {
    Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (m: f32[M], z: f32[M]) {
  t[i] = sum(x[i, j], j)
  m[i] = t[i] / N
  z[i] = m[i] * m[i] + t[i]
})");
    REQUIRE(s.kernels.size() == 1);
    CHECK(kernel_of(s, "m") == 0);
    CHECK(kernel_of(s, "z") == 0);
    CHECK(buffer(s, "t") == nullptr);
  }
  SECTION("element level: S = O + [R]") {
    Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (y: f32[M, N]) {
  t[i] = max(x[i, j], j)
  y[i, j] = x[i, j] - t[i]
})");
    REQUIRE(s.kernels.size() == 1);
    CHECK(buffer(s, "t") == nullptr);
  }
  SECTION("element level in another order: S = [R] + O") {
    Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (y: f32[N, M]) {
  t[i] = max(x[i, j], j)
  y[j, i] = x[i, j] - t[i]
})");
    REQUIRE(s.kernels.size() == 1);
    CHECK(kernel_of(s, "y") == 0);
  }
  SECTION("a second reduction of the same rows after the epilogue (softmax)") {
    Schedule s = schedule_and_check(read_example("softmax"));
    REQUIRE(s.kernels.size() == 1);
    for (const char* t : {"mx", "e", "s", "y"}) CHECK(kernel_of(s, t) == 0);
    for (const char* t : {"mx", "e", "s"}) CHECK(buffer(s, t) == nullptr);
    CHECK(s.kernels[0].row_phases == 3);
  }
}

TEST_CASE("horizontal: siblings that read the same input over the same space", "[schedule]") {
  SECTION("sum and sum of squares") {
    Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (s: f32[M], q: f32[M]) {
  s[i] = sum(x[i, j], j)
  q[i] = sum(x[i, j] * x[i, j], j)
})");
    REQUIRE(s.kernels.size() == 1);
    CHECK(kernel_of(s, "s") == 0);
    CHECK(kernel_of(s, "q") == 0);
    CHECK(s.kernels[0].row_phases == 1);
  }
  SECTION("two pointwise outputs") {
    Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (a: f32[M, N], b: f32[M, N]) {
  a[i, j] = x[i, j] * 2.0
  b[i, j] = exp(x[i, j])
})");
    REQUIRE(s.kernels.size() == 1);
    CHECK(s.kernels[0].kind == StepKind::pointwise);
  }
  SECTION("column sums of the same input") {
    Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (s: f32[N], m: f32[N]) {
  s[j] = sum(x[i, j], i)
  m[j] = max(x[i, j], i)
})");
    REQUIRE(s.kernels.size() == 1);
    CHECK(s.kernels[0].kind == StepKind::outer_reduction);
  }
}

TEST_CASE("a node joins the fitting kernel with which it shares the most bytes", "[schedule]") {
  // a and the row sums form kernel 0 (reading x); t is kernel 1; b reads t, so it cannot join
  // kernel 0 (a cycle) and starts kernel 2 (reading w). c fits both kernel 0 and kernel 2: it
  // joins the one whose input is the wider.
  auto spec = [](const char* xt, const char* wt) {
    return std::string("kernel k(x: ") + xt + "[M, N], w: " + wt +
           R"([M, N]) -> (t: f32[], b: f32[M, N], c: f32[M, N]) {
  a[i, j] = x[i, j] * 2.0
  t[] = sum(sum(a[i, j], j), i)
  b[i, j] = w[i, j] * t[]
  c[i, j] = w[i, j] + x[i, j]
})";
  };
  SymbolValues sizes = {{"M", 64}, {"N", 64}};
  SECTION("x read directly by the reduction") {
    std::string direct = spec("f32", "bf16");
    direct.replace(direct.find("  a[i, j] = x[i, j] * 2.0\n"), 26, "");
    direct.replace(direct.find("a[i, j]"), 7, "x[i, j] * 2.0");
    Schedule s = schedule_and_check(direct, sizes);
    INFO(print_schedule(s));
    REQUIRE(s.kernels.size() == 3);
    CHECK(kernel_of(s, "b") == 2);
    CHECK(kernel_of(s, "c") == 0);  // shares x (4 bytes an element), not w (2)
  }
  SECTION("w is the wider input") {
    Schedule s = schedule_and_check(spec("bf16", "f32"), sizes);
    INFO(print_schedule(s));
    REQUIRE(s.kernels.size() == 3);
    CHECK(kernel_of(s, "a") == 0);
    CHECK(kernel_of(s, "t") == 1);
    CHECK(kernel_of(s, "b") == 2);
    CHECK(kernel_of(s, "c") == 2);  // shares w (4 bytes an element), not x (2)
  }
  SECTION("x is the wider input, read through the recomputed temporary a") {
    Schedule s = schedule_and_check(spec("f32", "bf16"), sizes);
    INFO(print_schedule(s));
    REQUIRE(s.kernels.size() == 3);
    CHECK(kernel_of(s, "b") == 2);
    CHECK(kernel_of(s, "c") == 0);  // shares x (4 bytes an element), not w (2)
  }
}

// --- Refusals -------------------------------------------------------------------------------

TEST_CASE("refusal: different iteration spaces", "[schedule]") {
  SECTION("pointwise nodes of different spaces that read the same input") {
    Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N], b: f32[N]) -> (y: f32[M, N], z: f32[N]) {
  y[i, j] = x[i, j] * b[j]
  z[j] = b[j] * 2.0
})");
    INFO(explain_schedule(s));
    REQUIRE(s.kernels.size() == 2);
    CHECK(kernel_of(s, "y") == 0);
    CHECK(kernel_of(s, "z") == 1);
    const FusionRefusal* why = refusal(s, "z", 0);
    REQUIRE(why != nullptr);
    CHECK(!why->reason.empty());
    CHECK_THAT(lower(why->reason), !Catch::Contains("cycle"));
    CHECK_THAT(explain_schedule(s), Catch::Contains(why->reason));
  }
  SECTION("a reduction of other rows than the kernel's") {
    Schedule s = schedule_and_check(read_example("rowsum_colsum"));
    const FusionRefusal* why = refusal(s, "c", 0);
    REQUIRE(why != nullptr);
    CHECK_THAT(lower(why->reason), !Catch::Contains("cycle"));
  }
  SECTION("a full reduction after a row reduction") {
    Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N], v: f32[M]) -> (t: f32[]) {
  r[i] = sum(x[i, j], j)
  t[] = sum(r[i] * v[i], i)
})");
    REQUIRE(s.kernels.size() == 2);
    REQUIRE(buffer(s, "r") != nullptr);
    CHECK(buffer(s, "r")->shape == std::vector<Dim>{M});
    CHECK(refusal(s, "t", 0) != nullptr);
  }
  SECTION("unrelated kernels record no refusal") {
    Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N], b: f32[N]) -> (y: f32[M, N], z: f32[N]) {
  y[i, j] = x[i, j] * 2.0
  z[j] = b[j] * 2.0
})");
    REQUIRE(s.kernels.size() == 2);
    CHECK(s.refusals.empty());
  }
}

TEST_CASE("refusal: a fusion that would create a cycle", "[schedule]") {
  Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (y: f32[M, N]) {
  s[i] = sum(x[i, j], j)
  t[] = sum(s[i], i)
  y[i, j] = x[i, j] * t[]
})");
  INFO(explain_schedule(s));
  REQUIRE(s.kernels.size() == 3);
  CHECK(kernel_of(s, "s") == 0);
  CHECK(kernel_of(s, "t") == 1);
  CHECK(kernel_of(s, "y") == 2);
  const FusionRefusal* cycle = refusal(s, "y", 0);
  REQUIRE(cycle != nullptr);
  CHECK_THAT(lower(cycle->reason), Catch::Contains("cycle"));
  // y also reads t from kernel 1, whose space (a scalar folded over M) does not fit [M, N].
  const FusionRefusal* space = refusal(s, "y", 1);
  REQUIRE(space != nullptr);
  CHECK_THAT(lower(space->reason), !Catch::Contains("cycle"));
  CHECK(buffer(s, "s") != nullptr);
  CHECK(buffer(s, "t") != nullptr);
}

// --- Tensors across kernels -----------------------------------------------------------------

TEST_CASE("a pointwise temporary of parameters only is recomputed, not materialized",
          "[schedule]") {
  Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N], b: f32[N]) -> (r: f32[M], c: f32[N]) {
  h[i, j] = x[i, j] + b[j]
  r[i] = sum(h[i, j], j)
  c[j] = sum(h[i, j], i)
})");
  INFO(print_schedule(s));
  REQUIRE(s.kernels.size() == 2);
  CHECK(kernel_of(s, "h") == 0);
  CHECK(kernel_of(s, "r") == 0);
  CHECK(kernel_of(s, "c") == 1);
  CHECK(s.buffers.empty());
  CHECK(names(s.kernels[1].def.inputs) == std::set<std::string>{"x", "b"});
  CHECK(names(s.kernels[1].def.outputs) == std::set<std::string>{"c"});
}

TEST_CASE("a fusion never moves more bytes than it saves", "[schedule]") {
  // d = x / r fits the row-sum kernel, but c folds another index, so d crosses kernels.
  // Written by kernel 0 and read by kernel 1, d moves 8*M*N bytes on top of x; recomputed in
  // kernel 1 from x and the row sums r, it moves 4*M*N + 8*M: fusing d into kernel 0 and
  // materializing it costs more than it saves.
  SymbolValues sizes = {{"M", 1024}, {"N", 1024}};
  Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (c: f32[N]) {
  r[i] = sum(x[i, j], j)
  d[i, j] = x[i, j] / r[i]
  c[j] = sum(d[i, j], i)
})",
                                  sizes);
  INFO(print_schedule(s));
  REQUIRE(s.kernels.size() == 2);
  CHECK(kernel_of(s, "r") == 0);
  CHECK(kernel_of(s, "c") == 1);
  CHECK(buffer(s, "d") == nullptr);
  const TensorDecl* r = buffer(s, "r");
  CHECK(r != nullptr);
  if (r != nullptr) CHECK(r->shape == std::vector<Dim>{M});
  double total = 0;
  for (const ScheduledKernel& k : s.kernels) {
    REQUIRE(k.bytes_value);
    total += *k.bytes_value;
  }
  const double MN = 1024.0 * 1024.0;
  CHECK(total <= 2 * 4 * MN + 2 * 4 * 1024 + 4 * 1024);
}

TEST_CASE("an output read by a later kernel is read back, not a buffer", "[schedule]") {
  Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (r: f32[M], c: f32[N]) {
  r[i] = sum(x[i, j], j)
  c[j] = sum(x[i, j] / r[i], i)
})");
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.buffers.empty());
  CHECK(names(s.kernels[0].def.outputs) == std::set<std::string>{"r"});
  CHECK(names(s.kernels[1].def.inputs) == std::set<std::string>{"x", "r"});
  const TensorDecl* r = s.kernels[1].def.find_tensor("r");
  REQUIRE(r != nullptr);
  CHECK(r->role == TensorRole::input);
  CHECK(r->shape == std::vector<Dim>{M});
}

// --- Normalization --------------------------------------------------------------------------

TEST_CASE("a reduction inside an expression is lifted into a node of its own", "[schedule]") {
  Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (y: f32[M, N]) {
  y[i, j] = x[i, j] - max(x[i, k], k)
})");
  INFO(print(s.normalized));
  REQUIRE(s.nodes.size() == 2);
  CHECK(s.nodes[0].space == std::vector<Dim>{M});
  CHECK(s.nodes[0].reduced == std::vector<Dim>{N});
  CHECK(s.nodes[0].target != "y");
  CHECK(s.nodes[1].target == "y");
  CHECK(s.nodes[1].space == std::vector<Dim>{M, N});
  CHECK(s.nodes[1].reduced.empty());
  CHECK(s.nodes[1].deps == std::vector<int>{0});
  REQUIRE(s.kernels.size() == 1);
  CHECK(s.kernels[0].nodes == std::vector<int>{0, 1});
  CHECK(is_reduction(s.kernels[0].kind));
  CHECK(s.buffers.empty());
}

TEST_CASE("nested reductions normalize innermost first", "[schedule]") {
  Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (t: f32[]) {
  t[] = sum(max(x[i, j], j), i)
})");
  INFO(print(s.normalized));
  REQUIRE(s.nodes.size() == 2);
  CHECK(s.nodes[0].space == std::vector<Dim>{M});
  CHECK(s.nodes[0].reduced == std::vector<Dim>{N});
  CHECK(s.nodes[1].target == "t");
  CHECK(s.nodes[1].space.empty());
  CHECK(s.nodes[1].reduced == std::vector<Dim>{M});
  CHECK(s.nodes[1].deps == std::vector<int>{0});
  REQUIRE(s.kernels.size() == 2);
  REQUIRE(s.buffers.size() == 1);
  CHECK(s.buffers[0].name == s.nodes[0].target);
  CHECK(s.buffers[0].shape == std::vector<Dim>{M});
}

TEST_CASE("a reduction that depends on no left-hand index becomes a scalar node", "[schedule]") {
  Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N], b: f32[N]) -> (y: f32[M, N]) {
  y[i, j] = x[i, j] / (1.0 + abs(sum(b[k], k)))
})");
  INFO(print(s.normalized));
  REQUIRE(s.nodes.size() == 2);
  CHECK(s.nodes[0].space.empty());
  CHECK(s.nodes[0].reduced == std::vector<Dim>{N});
  REQUIRE(s.kernels.size() == 2);
  REQUIRE(s.buffers.size() == 1);
  CHECK(s.buffers[0].shape.empty());
}

TEST_CASE("an index used only as a value in a lifted reduction", "[schedule]") {
  // The lifted reduction would depend on j only through its value, and the text form cannot
  // declare the extent of such a statement: a known limitation, reported at the reduction
  // with what to do instead (docs/scheduler.md).
  Program p = parse_program(
      "kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n"
      "  y[i, j] = x[i, j] + sum(x[i, k] * j, k)\n"
      "}\n");
  try {
    schedule_kernel(p.kernels[0]);
    FAIL("expected a UserError");
  } catch (const UserError& e) {
    CHECK(e.loc() == SourceLoc{2, 23});
    CHECK_THAT(e.what(), Catch::Contains("uses index 'j' only as a value"));
  }
  // Written with j outside the reduction, the same computation schedules into one kernel.
  Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (y: f32[M, N]) {
  y[i, j] = x[i, j] + sum(x[i, k], k) * j
})");
  CHECK(s.kernels.size() == 1);
}

TEST_CASE("lifted i32 reductions keep their type", "[schedule]") {
  Schedule s = schedule_and_check(R"(
kernel k(x: f32[M], n: i32[M, N]) -> (y: f32[M]) {
  y[i] = f32(sum(n[i, j], j)) * x[i]
})");
  REQUIRE(s.nodes.size() == 2);
  CHECK(s.normalized.temps.at(0).dtype == DType::i32);
  CHECK(s.kernels.size() == 1);
}

TEST_CASE("a reduction inside a reduction over an outer index", "[schedule]") {
  // max over k of x[k, j] depends on j only: a column max [N] (an outer reduction), then the
  // row sums that read it: two kernels.
  Schedule s = schedule_and_check(R"(
kernel k(x: f32[M, N]) -> (t: f32[M]) {
  t[i] = sum(x[i, j] * max(x[k, j], k), j)
})",
                                  {{"M", 4096}, {"N", 1024}});
  REQUIRE(s.nodes.size() == 2);
  CHECK(s.nodes[0].space == std::vector<Dim>{N});
  CHECK(s.nodes[0].reduced == std::vector<Dim>{M});
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.kernels[0].kind == StepKind::outer_reduction);
  CHECK(s.kernels[1].kind == StepKind::row_reduction);
  REQUIRE(s.buffers.size() == 1);
  CHECK(s.buffers[0].shape == std::vector<Dim>{N});
}

TEST_CASE("refusal: a node that needs the reduction of another row", "[schedule]") {
  // With square x the spaces fit, but y[i, j] needs s[j], the sum of row j, while the kernel
  // holds row i: one kernel cannot do that (the interpreter could, so only the structure
  // shows it).
  SECTION("pointwise") {
    Schedule s = schedule_and_check(R"(
kernel k(x: f32[N, N]) -> (y: f32[N, N]) {
  s[i] = sum(x[i, j], j)
  y[i, j] = x[i, j] * s[i] * s[j]
})");
    REQUIRE(s.kernels.size() == 2);
    CHECK(kernel_of(s, "y") == 1);
    REQUIRE(buffer(s, "s") != nullptr);
    const FusionRefusal* why = refusal(s, "y", 0);
    REQUIRE(why != nullptr);
    CHECK(!why->reason.empty());
  }
  SECTION("a second reduction") {
    Schedule s = schedule_and_check(R"(
kernel k(x: f32[N, N]) -> (y: f32[N]) {
  s[i] = sum(x[i, j], j)
  y[i] = sum(x[i, j] * s[j], j)
})");
    REQUIRE(s.kernels.size() == 2);
    const FusionRefusal* why = refusal(s, "y", 0);
    REQUIRE(why != nullptr);
    CHECK_THAT(why->reason, Catch::Contains("another row"));
  }
  SECTION("but a transposed read of the same row fuses") {
    // y[i, j] reads x[j, i] and s[j]: with j as the row and i as the reduced index, that is
    // row j of x and its own sum.
    Schedule s = schedule_and_check(R"(
kernel k(x: f32[N, N]) -> (y: f32[N, N]) {
  s[i] = sum(x[i, j], j)
  y[i, j] = x[j, i] / s[j]
})");
    CHECK(s.kernels.size() == 1);
    CHECK(s.buffers.empty());
  }
}

// --- Kinds, phases and bytes ----------------------------------------------------------------

TEST_CASE("kinds follow the contiguous index, not the sizes", "[schedule]") {
  // How a row runs at a size (held, looped, split) is the kernel plan's rule
  // (tests/unit/plan_rule.cpp): the schedule's kind is the same at every size.
  std::string softmax = read_example("softmax");
  auto kind = [](const std::string& src, SymbolValues sizes) {
    Schedule s = schedule_text(src, std::move(sizes));
    REQUIRE(s.kernels.size() == 1);
    INFO(s.kernels[0].kind_reason);
    CHECK(!s.kernels[0].kind_reason.empty());
    return s.kernels[0].kind;
  };
  for (SymbolValues sizes : {SymbolValues{{"M", 4096}, {"N", 1024}},
                             SymbolValues{{"M", 4}, {"N", 1 << 20}}, SymbolValues{}}) {
    CHECK(kind(softmax, sizes) == StepKind::row_reduction);
  }
  CHECK(kind(read_example("rowsum"), {{"M", 4096}, {"N", 1024}}) == StepKind::row_reduction);
  CHECK(kind(read_example("colsum"), {{"M", 4096}, {"N", 1024}}) == StepKind::outer_reduction);
  CHECK(kind(read_example("add"), {{"N", 1000}}) == StepKind::pointwise);
  CHECK(kind(read_example("bias_gelu"), {}) == StepKind::pointwise);
}

TEST_CASE("bytes without symbol values stay a formula", "[schedule]") {
  Schedule s = schedule_text(read_example("softmax"));
  REQUIRE(s.kernels.size() == 1);
  CHECK_THAT(s.kernels[0].bytes, Catch::Contains("N"));
  CHECK(!s.kernels[0].bytes_value);
}

TEST_CASE("bytes: every input read once and every output written once", "[schedule]") {
  {
    Schedule s = schedule_text(read_example("add"), {{"N", 1000}});
    REQUIRE(s.kernels.size() == 1);
    CHECK_THAT(s.kernels[0].bytes, Catch::Contains("N"));
    REQUIRE(s.kernels[0].bytes_value);
    CHECK(*s.kernels[0].bytes_value == 3 * 4 * 1000);
  }
  {
    // Persistent: x (bf16) read once, y (bf16) written once.
    Schedule s = schedule_text(read_example("softmax"), {{"M", 4}, {"N", 1024}});
    REQUIRE(s.kernels.size() == 1);
    REQUIRE(s.kernels[0].kind == StepKind::row_reduction);
    REQUIRE(s.kernels[0].bytes_value);
    CHECK(*s.kernels[0].bytes_value == 2 * 2 * 4 * 1024);
  }
}

TEST_CASE("row phases count the dependent passes over a row", "[schedule]") {
  auto phases = [](const char* name) {
    Schedule s = schedule_text(read_example(name));
    REQUIRE(s.kernels.size() == 1);
    return s.kernels[0].row_phases;
  };
  CHECK(phases("rowsum") == 1);
  CHECK(phases("rmsnorm") == 2);
  CHECK(phases("logsumexp") == 2);
  CHECK(phases("mean_var") == 2);
  CHECK(phases("softmax") == 3);
  CHECK(phases("layernorm") == 3);
}

// --- Text forms -----------------------------------------------------------------------------

TEST_CASE("the schedule's text forms are stable and explain every refusal", "[schedule]") {
  for (const char* name : {"softmax", "rowsum_colsum", "global_max_norm", "bias_gelu"}) {
    INFO(name);
    std::string src = read_example(name);
    Schedule a = schedule_text(src);
    // Parsing the canonical text again gives the same schedule text.
    Schedule b = schedule_text(print(kernel_of_text(src)));
    CHECK(print_schedule(a) == print_schedule(b));
    CHECK(explain_schedule(a) == explain_schedule(b));
    for (const ScheduledKernel& k : a.kernels) {
      CHECK_THAT(print_schedule(a), Catch::Contains(k.name));
      CHECK_THAT(explain_schedule(a), Catch::Contains(k.name));
    }
    for (const FusionRefusal& r : a.refusals) {
      CHECK(!r.reason.empty());
      CHECK_THAT(explain_schedule(a), Catch::Contains(r.reason));
    }
  }
}
