// Reductions over several indices, `sum(body, h, w)` (docs/language.md, "Reductions"): the
// parser, printer and verifier; the interpreter against direct loops; the schedule (one
// reduction, one kernel) and the kernel plan's account of how the indices run.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "compiler/kernel_plan.h"
#include "compiler/reduction_analysis.h"
#include "compiler/schedule.h"
#include "ir/interpreter.h"
#include "ir/text.h"

using namespace kiln;

namespace {

std::string error_of(const std::string& src) {
  try {
    parse_program(src);
  } catch (const UserError& e) {
    return std::to_string(e.loc().line) + ":" + std::to_string(e.loc().col) + ": " + e.what();
  }
  return "";
}

const std::string kSpatial =
    "kernel k(x: f32[B, C, H, W]) -> (y: f32[B, C]) {\n"
    "  y[b, c] = mean(x[b, c, h, w], h, w)\n"
    "}\n";

// x[B, C, H, W] filled with random values, its kernel interpreted at (B, C, H, W).
struct Run4 {
  Program p;
  std::map<std::string, HostTensor> t;
  SymbolValues syms;
  Run4(const std::string& src, int64_t B, int64_t C, int64_t H, int64_t W) : p(parse_program(src)) {
    const KernelDef& k = p.kernels.at(0);
    const auto s = k.symbols();
    const int64_t v[4] = {B, C, H, W};
    for (size_t i = 0; i < s.size(); ++i) syms[s[i]] = v[i];
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> u(-2, 2);
    for (const TensorDecl* d : k.params()) {
      t[d->name] = HostTensor(d->dtype, resolve_shape(d->shape, syms));
      if (d->role == TensorRole::input) {
        for (int64_t i = 0; i < t[d->name].numel(); ++i) t[d->name].set(i, u(rng));
      }
    }
    std::map<std::string, HostTensor*, std::less<>> ptrs;
    for (auto& [n, h] : t) ptrs[n] = &h;
    interpret(k, syms, ptrs);
  }
  double x(int64_t b, int64_t c, int64_t h, int64_t w) const {
    const auto& s = t.at("x").shape;
    return t.at("x").get(((b * s[1] + c) * s[2] + h) * s[3] + w);
  }
};

}  // namespace

TEST_CASE("multi-axis reductions: parse and print round trip", "[ir][multiaxis]") {
  Program p = parse_program(kSpatial);
  const Reduce* r = p.kernels[0].body[0].value.as<Reduce>();
  REQUIRE(r);
  CHECK(r->op == ReduceOp::mean);
  CHECK(r->indices == std::vector<std::string>{"h", "w"});
  CHECK(print(p) == kSpatial);
  CHECK(parse_program(print(p)) == p);
  // The names print in the order written; another order is another program.
  const std::string swapped =
      "kernel k(x: f32[A, I, B, J]) -> (y: f32[I, J]) {\n"
      "  y[i, j] = max(x[a, i, b, j] * 2.0, b, a)\n"
      "}\n";
  Program q = parse_program(swapped);
  CHECK(print(q) == swapped);
  CHECK(parse_program(print(q)) == q);
  CHECK(q.kernels[0].body[0].value.as<Reduce>()->indices == std::vector<std::string>{"b", "a"});
  // Nested reductions keep their nesting.
  Program n = parse_program(
      "kernel k(x: f32[B, C, H, W]) -> (y: f32[B]) {\n"
      "  y[b] = sum(sum(x[b, c, h, w], h, w) * 2.0, c)\n"
      "}\n");
  CHECK(parse_program(print(n)) == n);
  CHECK(!(make_reduce(ReduceOp::sum, std::vector<std::string>{"h", "w"},
                      make_load("x", {"h", "w"}, DType::f32)) ==
          make_reduce(ReduceOp::sum, std::vector<std::string>{"w", "h"},
                      make_load("x", {"h", "w"}, DType::f32))));
}

TEST_CASE("multi-axis reductions: located errors", "[ir][multiaxis]") {
  const std::string head = "kernel k(x: f32[B, C, H, W]) -> (y: f32[B, C]) {\n  y[b, c] = ";
  CHECK(error_of(head + "sum(x[b, c, h, w], h, w, h)\n}\n") ==
        "2:38: reduction index 'h' is named twice");
  CHECK(error_of(head + "sum(x[b, c, h, w], h, c)\n}\n") ==
        "2:35: reduction index 'c' is already bound");
  CHECK(error_of(head + "sum(x[b, c, h, 0], h, w)\n}\n") ==
        "2:35: reduction index 'w' is not used in its body");
  CHECK(error_of(head + "sum(x[b, c, h, w], h, w + 1)\n}\n") ==
        "2:35: argument 3 of sum must be an index variable");
  CHECK(error_of(head + "sum(x[b, c, h, w], H, w)\n}\n") ==
        "2:32: index 'H' has the same name as a symbol");
  CHECK(error_of(head + "max(x[b, c, h, w], h, w, 1.0)\n}\n") ==
        "2:38: argument 4 of max must be an index variable");
  // max with two arguments stays elementwise where the second is bound.
  CHECK(error_of("kernel k(x: f32[M, N]) -> (y: f32[M, N]) {\n  y[i, j] = max(x[i, j], j)\n}\n")
            .empty());
}

TEST_CASE("multi-axis reductions: the verifier checks IR built by hand", "[ir][multiaxis]") {
  Program p = parse_program(kSpatial);
  Program twice = p;
  twice.kernels[0].body[0].value = make_reduce(ReduceOp::sum, std::vector<std::string>{"h", "b"},
                                               make_load("x", {"b", "c", "h", "w"}, DType::f32));
  CHECK_THROWS_WITH(verify(twice), Catch::Contains("reduction index 'b' is already bound"));
  Program unused = p;
  unused.kernels[0].body[0].value =
      make_reduce(ReduceOp::sum, std::vector<std::string>{"h", "w", "z"},
                  make_load("x", {"b", "c", "h", "w"}, DType::f32));
  CHECK_THROWS_WITH(verify(unused), Catch::Contains("reduction index 'z' is not used"));
}

TEST_CASE("multi-axis reductions: the interpreter folds the product", "[ir][multiaxis]") {
  // Every op, trailing, leading, middle and non-adjacent index sets; extents long enough for
  // the interpreter's vectorized path (>= 64) and short ones.
  for (auto [B, C, H, W] : {std::array<int64_t, 4>{2, 3, 5, 7}, {1, 2, 9, 70}, {3, 1, 1, 1}}) {
    Run4 r(
        "kernel k(x: f32[B, C, H, W]) -> (m: f32[B, C], s: f32[C, W], p: f32[C, H], "
        "mx: f32[B, H], mn: f32[C]) {\n"
        "  m[b, c] = mean(x[b, c, h, w], h, w)\n"
        "  s[c, w] = sum(x[b, c, h, w], h, b)\n"
        "  p[c, h] = prod(x[b, c, h, w] * 0.5 + 1.0, b, w)\n"
        "  mx[b, h] = max(x[b, c, h, w], w, c)\n"
        "  mn[c] = min(x[b, c, h, w], b, h, w)\n"
        "}\n",
        B, C, H, W);
    for (int64_t c = 0; c < C; ++c) {
      double mn = INFINITY;
      for (int64_t b = 0; b < B; ++b) {
        double sum = 0;
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t w = 0; w < W; ++w) {
            sum += r.x(b, c, h, w);
            mn = std::min(mn, r.x(b, c, h, w));
          }
        }
        CHECK(r.t.at("m").get(b * C + c) == Approx(sum / double(H * W)).epsilon(1e-6));
      }
      CHECK(r.t.at("mn").get(c) == float(mn));
      for (int64_t w = 0; w < W; ++w) {
        double sum = 0;
        for (int64_t b = 0; b < B; ++b) {
          for (int64_t h = 0; h < H; ++h) sum += r.x(b, c, h, w);
        }
        CHECK(r.t.at("s").get(c * W + w) == Approx(sum).margin(1e-5));
      }
      for (int64_t h = 0; h < H; ++h) {
        double prod = 1;
        for (int64_t b = 0; b < B; ++b) {
          for (int64_t w = 0; w < W; ++w) prod *= double(float(r.x(b, c, h, w) * 0.5 + 1.0));
        }
        CHECK(r.t.at("p").get(c * H + h) == Approx(prod).epsilon(1e-5).margin(1e-30));
      }
    }
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < H; ++h) {
        double mx = -INFINITY;
        for (int64_t c = 0; c < C; ++c) {
          for (int64_t w = 0; w < W; ++w) mx = std::max(mx, r.x(b, c, h, w));
        }
        CHECK(r.t.at("mx").get(b * H + h) == float(mx));
      }
    }
  }
}

TEST_CASE("multi-axis reductions: one kernel, flattened where the layout allows",
          "[schedule][multiaxis]") {
  auto one = [](const std::string& src) {
    Program p = parse_program(src);
    Schedule s = schedule_kernel(p.kernels.at(0));
    REQUIRE(s.kernels.size() == 1);
    CHECK(s.buffers.empty());
    return s.kernels[0];
  };
  // h, w trailing (in either order): a row reduction over one contiguous axis of H*W.
  for (const char* names : {"h, w", "w, h"}) {
    ScheduledKernel k = one(std::string("kernel k(x: bf16[B, C, H, W]) -> (y: bf16[B, C]) {\n") +
                            "  y[b, c] = mean(x[b, c, h, w], " + names + ")\n}\n");
    CHECK(k.kind == StepKind::row_reduction);
    CHECK(k.reduced == std::vector<Dim>{Dim::symbol("H"), Dim::symbol("W")});
    CHECK(k.flattening == "h, w flattened to one axis of H*W");
  }
  // n, h, w around c: a row reduction on the general path.
  ScheduledKernel bn =
      one("kernel k(x: f32[N, C, H, W]) -> (s: f32[C], q: f32[C]) {\n"
          "  s[c] = sum(x[n, c, h, w], n, h, w)\n"
          "  q[c] = sum(x[n, c, h, w] * x[n, c, h, w], n, h, w)\n"
          "}\n");
  CHECK(bn.kind == StepKind::row_reduction);
  CHECK(bn.reduced.size() == 3);
  CHECK_THAT(bn.flattening, Catch::StartsWith("n, h, w as one flat index of N*H*W (the general"));
  // b, h: outer, general; b, s leading: outer, flattened.
  ScheduledKernel bh =
      one("kernel k(x: f32[B, C, H, W]) -> (y: f32[C, W]) {\n"
          "  y[c, w] = sum(x[b, c, h, w], b, h)\n}\n");
  CHECK(bh.kind == StepKind::outer_reduction);
  CHECK_THAT(bh.flattening, Catch::StartsWith("b, h as one flat index of B*H"));
  ScheduledKernel lead =
      one("kernel k(x: f32[B, S, D]) -> (y: f32[D]) {\n  y[d] = max(x[b, s, d], s, b)\n}\n");
  CHECK(lead.kind == StepKind::outer_reduction);
  CHECK(lead.flattening == "b, s flattened to one axis of B*S");
  // A normalization over H*W: the mean, then the element-level epilogue, in one kernel.
  ScheduledKernel norm =
      one("kernel k(x: f32[B, C, H, W]) -> (y: f32[B, C, H, W]) {\n"
          "  m[b, c] = mean(x[b, c, h, w], h, w)\n"
          "  y[b, c, h, w] = x[b, c, h, w] - m[b, c]\n}\n");
  CHECK(norm.kind == StepKind::row_reduction);
  CHECK(norm.row_phases == 2);
  // A nested reduction stays two.
  Program nested = parse_program(
      "kernel k(x: f32[B, C, H, W]) -> (y: f32[B, C]) {\n"
      "  y[b, c] = sum(sum(x[b, c, h, w], w), h)\n}\n");
  CHECK(schedule_kernel(nested.kernels[0]).kernels.size() == 2);
}

TEST_CASE("multi-axis reductions: the plan and its manifest step", "[compiler][multiaxis]") {
  Program p = parse_program(kSpatial);
  auto plan = plan_kernel(p.kernels[0]);
  REQUIRE(plan->steps.size() == 1);
  CHECK(plan->steps[0].reduced.size() == 2);
  CHECK_THAT(print_plan(*plan), Catch::Contains("reduce=H*W") &&
                                    Catch::Contains("reduction over h, w flattened to one axis "
                                                    "of H*W"));
  bundle::Step bs = manifest_step(*plan, 0, {"sm_90"});
  CHECK(bs.reduced == std::vector<Dim>{Dim::symbol("H"), Dim::symbol("W")});
  // The schedule run on the interpreter agrees with the kernel.
  SymbolValues syms{{"B", 2}, {"C", 3}, {"H", 5}, {"W", 4}};
  HostTensor x(DType::f32, {2, 3, 5, 4}), y1(DType::f32, {2, 3}), y2(DType::f32, {2, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::sin(double(i)));
  std::map<std::string, HostTensor*, std::less<>> a{{"x", &x}, {"y", &y1}},
      b{{"x", &x}, {"y", &y2}};
  interpret(p.kernels[0], syms, a);
  run_schedule(plan->schedule, syms, b);
  for (int64_t i = 0; i < 6; ++i) CHECK(y1.get(i) == y2.get(i));
}

// The canonical indices each load reads on the general path (reduction_analysis.h): a
// trailing run of the last reduced indices, in order, reads as `_s<a>` after kFolded
// positions (one access per vector); anything else keeps `_a<k>` per index.
TEST_CASE("multi-axis reductions: trailing runs of the reduced indices fold",
          "[compiler][multiaxis]") {
  auto loads = [](const std::string& src) {
    Program p = parse_program(src);
    Schedule s = schedule_kernel(p.kernels.at(0));
    REQUIRE(s.kernels.size() == 1);
    const reduction::Program prog = reduction::canonicalize(p.kernels.at(0), s.kernels[0], false);
    std::vector<std::vector<std::string>> out;
    std::function<void(const Expr&)> walk = [&](const Expr& e) {
      if (const Load* l = e.as<Load>()) out.push_back(l->indices);
      for_each_child(e, walk);
    };
    for (const reduction::Item& it : prog.items) {
      if (it.value.defined()) walk(it.value);
    }
    return std::make_pair(out, reduction::suffix_runs(prog));
  };
  using V = std::vector<std::string>;
  {  // n, h, w around c: h, w trail
    auto [l, runs] = loads(
        "kernel k(x: f32[N, C, H, W]) -> (s: f32[C]) {\n"
        "  s[c] = sum(x[n, c, h, w], n, h, w)\n}\n");
    REQUIRE(l.size() == 1);
    CHECK(l[0] == V{"_a0", "_o0", "_rf", "_s1"});
    CHECK(runs == std::set<int>{1});
  }
  {  // n, l around c: l alone trails
    auto [l, runs] = loads(
        "kernel k(x: bf16[N, C, L]) -> (m: bf16[C]) {\n"
        "  m[c] = mean(x[n, c, l], n, l)\n}\n");
    REQUIRE(l.size() == 1);
    CHECK(l[0] == V{"_a0", "_o0", "_s1"});
    CHECK(runs == std::set<int>{1});
  }
  {  // a second tensor with the trailing indices the other way round: an index at a time
    auto [l, runs] = loads(
        "kernel k(x: f32[N, C, H, W], z: f32[N, C, W, H]) -> (s: f32[C]) {\n"
        "  s[c] = sum(x[n, c, h, w] * z[n, c, w, h], n, h, w)\n}\n");
    REQUIRE(l.size() == 2);
    CHECK(l[0] == V{"_a0", "_o0", "_rf", "_s1"});
    CHECK(l[1] == V{"_a0", "_o0", "_a2", "_a1"});
    CHECK(runs == std::set<int>{1});
  }
  {  // a weight that reads only the trailing index keeps it: it is no row of the data
    auto [l, runs] = loads(
        "kernel k(x: f32[N, C, H, W], g: f32[W]) -> (s: f32[C]) {\n"
        "  s[c] = sum(x[n, c, h, w] * g[w], n, h, w)\n}\n");
    REQUIRE(l.size() == 2);
    CHECK(l[0] == V{"_a0", "_o0", "_rf", "_s1"});
    CHECK(l[1] == V{"_a2"});
  }
  {  // an index of the run read twice (a diagonal): no run, an index at a time (a review
     // found its vectors wrong: w differs along them)
    auto [l, runs] = loads(
        "kernel k(x: f32[N, C, H, W], t: f32[W, C, H, W]) -> (s: f32[C]) {\n"
        "  s[c] = sum(x[n, c, h, w] * t[w, c, h, w], n, h, w)\n}\n");
    REQUIRE(l.size() == 2);
    CHECK(l[0] == V{"_a0", "_o0", "_rf", "_s1"});
    CHECK(l[1] == V{"_a2", "_o0", "_a1", "_a2"});
    auto [f, none] = loads(
        "kernel k(x: f32[C, H, W], t: f32[W, H, W]) -> (s: f32[C]) {\n"
        "  s[c] = sum(x[c, h, w] * t[w, h, w], h, w)\n}\n");
    (void)none;
    REQUIRE(f.size() == 2);
    CHECK(f[0] == V{"_o0", "_rf", "_r"});
    CHECK(f[1] == V{"_a1", "_a0", "_a1"});
  }
  {  // the whole run in order still reads as the flat index
    auto [l, runs] = loads(
        "kernel k(x: f32[B, C, H, W]) -> (y: f32[B, C]) {\n"
        "  y[b, c] = mean(x[b, c, h, w], h, w)\n}\n");
    REQUIRE(l.size() == 1);
    CHECK(l[0] == V{"_o0", "_o1", "_rf", "_r"});
    CHECK(runs.empty());
  }
}
