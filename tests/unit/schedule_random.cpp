// Randomized test of the fusion scheduler: random well-typed f32 programs (chains of pointwise
// and reduction statements over one to three dimensions, with broadcasts, transposes, row,
// column, full and nested reductions, temporaries and one or two outputs) are scheduled, and
// running the schedule kernel by kernel must give what the interpreter gives for the whole
// program, on random inputs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <iomanip>
#include <random>
#include <set>
#include <sstream>

#include "compiler/schedule.h"
#include "ir/interpreter.h"
#include "ir/text.h"

using namespace kiln;

namespace {

/// An expression as text, a bound on its absolute value, and the index variables of the
/// enclosing scope it uses.
struct Gen {
  std::string text;
  double bound = 0;
  std::set<int> used;
};

/// Generates a program of f32 tensors over the dimensions M, N, K (dimension d is always
/// indexed by the variable "ijk"[d]). Values stay bounded (|v| <= 4 after every node, by
/// scaling with an exact power of two), so that rounding an intermediate to f32 changes the
/// outputs by much less than the tolerance.
class ProgramGenerator {
 public:
  explicit ProgramGenerator(uint32_t seed) : rng_(seed) {}

  std::string text;
  SymbolValues sizes;

  void generate() {
    int ndims = 1 + pick(3);
    // Sizes 1..7, not all equal (so that a mixed-up index shows).
    do {
      for (int d = 0; d < ndims; ++d) size_[d] = 1 + pick(7);
    } while (ndims > 1 && std::all_of(size_, size_ + ndims, [&](int s) { return s == size_[0]; }));
    for (int d = 0; d < ndims; ++d) dims_.push_back(d), sizes[kSym[d]] = size_[d];

    // Inputs: x over every dimension in some order, and up to two more of lower rank.
    std::vector<std::string> params;
    auto add_input = [&](const std::string& name, std::vector<int> ds) {
      tensors_.push_back({name, ds, 1.0});
      params.push_back(name + ": f32" + shape(ds));
    };
    add_input("x", shuffled(dims_));
    for (int n = pick(3), w = 0; w < n; ++w) add_input("w" + std::to_string(w), random_dims(1));

    int nstmts = 2 + pick(5);
    std::vector<std::string> outs;
    std::string body;
    for (int s = 0; s < nstmts; ++s) {
      bool output = s == nstmts - 1 || (outs.empty() && pick(4) == 0);
      std::string name = std::to_string(output ? outs.size() : s);
      name.insert(name.begin(), output ? 'y' : 't');
      std::vector<int> lhs = random_dims(0);
      std::set<int> scope(lhs.begin(), lhs.end());
      Gen e;
      std::vector<int> free;
      for (int d : dims_) {
        if (!scope.count(d)) free.push_back(d);
      }
      if (!free.empty() && pick(2) == 0) {
        // A top-level reduction over one of the free dimensions.
        int r = free[pick(static_cast<int>(free.size()))];
        std::set<int> inner = scope;
        inner.insert(r);
        Gen b = gen(inner, 1 + pick(3));
        require(b, inner, inner);
        e = reduce(b, r);
      } else {
        e = gen(scope, 1 + pick(3));
      }
      require(e, scope, scope);
      if (s == nstmts - 1) {
        // The last statement mostly reads what nothing has read yet.
        for (Tensor& t : tensors_) {
          if (!t.statement || t.uses > 0 || pick(4) == 0) continue;
          Gen l = load(t, scope);
          e.text = "(" + e.text + ") - 0.5 * " + l.text;
          e.bound += 0.5 * l.bound;
        }
      }
      e = bounded(e);
      body += "  " + name + index(lhs) + " = " + e.text + "\n";
      tensors_.push_back({name, lhs, e.bound, true});
      if (output) outs.push_back(name + ": f32" + shape(lhs));
    }
    text = "kernel random(" + join(params) + ") -> (" + join(outs) + ") {\n" + body + "}\n";
  }

 private:
  static constexpr const char* kSym[3] = {"M", "N", "K"};
  static constexpr const char* kVar[3] = {"i", "j", "k"};

  struct Tensor {
    std::string name;
    std::vector<int> dims;
    double bound;
    bool statement = false;  // defined by a statement (not an input)
    int uses = 0;
  };

  std::mt19937 rng_;
  int size_[3] = {1, 1, 1};
  std::vector<int> dims_;
  std::vector<Tensor> tensors_;

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }

  std::vector<int> shuffled(std::vector<int> v) {
    std::shuffle(v.begin(), v.end(), rng_);
    return v;
  }
  /// A random subset of the dimensions, of at least `min_rank`, in random order; larger ranks
  /// are likelier.
  std::vector<int> random_dims(int min_rank) {
    std::vector<int> out;
    for (int d : dims_) {
      if (pick(4) != 0) out.push_back(d);
    }
    while (static_cast<int>(out.size()) < min_rank) {
      int d = dims_[pick(static_cast<int>(dims_.size()))];
      if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    }
    return shuffled(out);
  }

  static std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      out += v[i];
    }
    return out;
  }
  /// "[A, B]" from the names of the dimensions ds.
  static std::string bracket(const std::vector<int>& ds, const char* const* names) {
    std::string out = "[";
    for (size_t i = 0; i < ds.size(); ++i) {
      if (i) out += ", ";
      out += names[ds[i]];
    }
    out += "]";
    return out;
  }
  static std::string shape(const std::vector<int>& ds) { return bracket(ds, kSym); }
  static std::string index(const std::vector<int>& ds) { return bracket(ds, kVar); }

  /// Scales e by an exact power of two when its bound exceeds 4.
  static Gen bounded(Gen e) {
    if (e.bound <= 4) return e;
    double scale = 1;
    while (e.bound * scale > 4) scale /= 2;
    std::ostringstream ss;
    ss << std::setprecision(17) << scale;  // exact: a power of two below 1
    e.text = ss.str() + " * (" + e.text + ")";
    e.bound *= scale;
    return e;
  }

  /// op(body, r) with a random op.
  Gen reduce(const Gen& body, int r) {
    static constexpr const char* ops[] = {"sum", "max", "min", "mean"};
    int op = pick(4);
    Gen e;
    e.text = std::string(ops[op]) + "(" + body.text + ", " + kVar[r] + ")";
    e.bound = op == 0 ? body.bound * size_[r] : body.bound;
    e.used = body.used;
    e.used.erase(r);
    return bounded(e);
  }

  /// Mostly a tensor defined by a statement that nothing reads yet (so that few statements are
  /// dead), else any.
  Tensor& pick_tensor() {
    std::vector<Tensor*> unread;
    for (Tensor& t : tensors_) {
      if (t.statement && t.uses == 0) unread.push_back(&t);
    }
    if (!unread.empty() && pick(3) != 0) return *unread[pick(static_cast<int>(unread.size()))];
    return tensors_[pick(static_cast<int>(tensors_.size()))];
  }

  /// A load of t in `scope`; the dimensions of t not in scope are reduced away (nested
  /// reductions, innermost first).
  Gen load(Tensor& t, const std::set<int>& scope) {
    ++t.uses;
    Gen e{t.name + index(t.dims), t.bound, {}};
    std::vector<int> extra;
    for (int d : t.dims) {
      if (scope.count(d))
        e.used.insert(d);
      else
        extra.push_back(d);
    }
    for (int d : shuffled(extra)) e = reduce(e, d);
    return e;
  }

  /// Adds a load in `scope` for every variable of `need` that e does not use yet.
  void require(Gen& e, const std::set<int>& need, const std::set<int>& scope) {
    for (int v : need) {
      if (e.used.count(v)) continue;
      std::vector<Tensor*> with;
      for (Tensor& t : tensors_) {
        if (std::find(t.dims.begin(), t.dims.end(), v) != t.dims.end()) with.push_back(&t);
      }
      Gen l = load(*with[pick(static_cast<int>(with.size()))], scope);
      e.text = "(" + e.text + ") + 0.5 * " + l.text;
      e.bound += 0.5 * l.bound;
      e.used.insert(l.used.begin(), l.used.end());
    }
    e = bounded(e);
  }

  Gen gen(const std::set<int>& scope, int depth) {
    int choice = depth <= 0 ? pick(4) : pick(12);
    if (choice == 0) {
      static constexpr double consts[] = {0.5, 1.5, 2.0, 0.25, 3.0};
      double c = consts[pick(5)];
      std::ostringstream ss;
      ss << c;
      std::string t = ss.str();
      if (t.find('.') == std::string::npos) t += ".0";
      return {t, c, {}};
    }
    if (choice <= 3) return load(pick_tensor(), scope);
    if (choice <= 7) {
      static constexpr const char* ops[] = {"+", "-", "*", "max", "min"};
      int op = pick(5);
      Gen a = gen(scope, depth - 1), b = gen(scope, depth - 1);
      Gen e;
      e.used = a.used;
      e.used.insert(b.used.begin(), b.used.end());
      if (op < 3) {
        e.text = "(" + a.text + " " + ops[op] + " " + b.text + ")";
        e.bound = op == 2 ? a.bound * b.bound : a.bound + b.bound;
      } else {
        e.text = std::string(ops[op]) + "(" + a.text + ", " + b.text + ")";
        e.bound = std::max(a.bound, b.bound);
      }
      return bounded(e);
    }
    if (choice <= 9) {
      Gen a = gen(scope, depth - 1);
      switch (pick(4)) {
        case 0:
          return {"exp(tanh(" + a.text + "))", std::exp(1.0), a.used};
        case 1:
          return {"tanh(" + a.text + ")", std::min(1.0, a.bound), a.used};
        case 2:
          return {"-" + a.text, a.bound, a.used};
        default: {
          Gen b = gen(scope, depth - 1);
          // tanh keeps the quotient's sensitivity to b's rounding small.
          Gen e{"(tanh(" + a.text + ") / (1.0 + abs(" + b.text + ")))", std::min(1.0, a.bound),
                a.used};
          e.used.insert(b.used.begin(), b.used.end());
          return e;
        }
      }
    }
    // A reduction over a dimension not in scope, whose body uses it.
    std::vector<int> free;
    for (int d : dims_) {
      if (!scope.count(d)) free.push_back(d);
    }
    if (free.empty()) return load(pick_tensor(), scope);
    int r = free[pick(static_cast<int>(free.size()))];
    std::set<int> inner = scope;
    inner.insert(r);
    Gen body = gen(inner, depth - 1);
    require(body, {r}, inner);
    return reduce(body, r);
  }
};

/// Checks what every schedule must satisfy; returns the number of dead nodes (no output
/// depends on them), which need no kernel.
int check_schedule_invariants(const Schedule& s, const KernelDef& k) {
  REQUIRE_NOTHROW(verify(s.normalized));
  REQUIRE(s.nodes.size() == s.normalized.body.size());
  std::vector<int> first(s.nodes.size(), -1);
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    const ScheduledKernel& sk = s.kernels[i];
    INFO("kernel " << sk.name);
    REQUIRE_NOTHROW(verify(sk.def));
    CHECK(parse_program(print(sk.def)).kernels.at(0) == sk.def);
    CHECK((sk.kind == StepKind::pointwise) == !!sk.reduced.empty());
    for (int n : sk.nodes) {
      REQUIRE(n >= 0);
      REQUIRE(n < static_cast<int>(s.nodes.size()));
      if (first[n] < 0) first[n] = static_cast<int>(i);
    }
  }
  std::vector<bool> live(s.nodes.size(), false);
  for (int i = static_cast<int>(s.nodes.size()) - 1; i >= 0; --i) {
    const TensorDecl* t = k.find_tensor(s.nodes[i].target);
    if (t != nullptr && t->role == TensorRole::output) live[i] = true;
    if (live[i]) {
      for (int d : s.nodes[i].deps) live[d] = true;
    }
  }
  for (const ScheduleNode& n : s.nodes) {
    INFO("node " << n.id << " '" << n.target << "'");
    if (!live[n.id]) continue;
    CHECK(first[n.id] >= 0);
    for (int d : n.deps) CHECK(first[d] <= first[n.id]);
  }
  for (const TensorDecl& b : s.buffers) {
    CHECK(b.role == TensorRole::temp);
    const TensorDecl* t = k.find_tensor(b.name);
    CHECK((t == nullptr || t->role == TensorRole::temp));
  }
  return static_cast<int>(std::count(live.begin(), live.end(), false));
}

}  // namespace

TEST_CASE("random programs: the scheduled kernels compute what the program does", "[schedule]") {
  int kernels = 0, multi = 0, buffers = 0, reductions = 0, nodes = 0, dead = 0;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    ProgramGenerator g(seed);
    g.generate();
    INFO("seed " << seed << "\n" << g.text);
    Program p;
    try {
      p = parse_program(g.text);
    } catch (const UserError& e) {
      FAIL("generator bug: the program does not parse: " << e.loc().line << ":" << e.loc().col
                                                         << ": " << e.what());
    }
    REQUIRE(p.kernels.size() == 1);
    const KernelDef& k = p.kernels[0];

    // Decide the kinds with no sizes, the real sizes, or large ones: the result must not care.
    ScheduleOptions opts;
    if (seed % 3 == 1) opts.sizes = g.sizes;
    if (seed % 3 == 2) {
      for (auto& [sym, v] : g.sizes) opts.sizes[sym] = int64_t{1} << (10 + seed % 11);
    }
    Schedule s = schedule_kernel(k, opts);
    INFO(print_schedule(s));
    dead += check_schedule_invariants(s, k);
    nodes += static_cast<int>(s.nodes.size());
    kernels += static_cast<int>(s.kernels.size());
    multi += s.kernels.size() > 1;
    buffers += !s.buffers.empty();
    for (const ScheduledKernel& sk : s.kernels) reductions += sk.kind != StepKind::pointwise;

    std::mt19937 rng(seed * 7919u);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::map<std::string, HostTensor, std::less<>> want, got;
    for (const TensorDecl* t : k.params()) {
      HostTensor h(t->dtype, resolve_shape(t->shape, g.sizes));
      if (t->role == TensorRole::input) {
        for (int64_t i = 0; i < h.numel(); ++i) h.set(i, dist(rng));
      } else {
        for (int64_t i = 0; i < h.numel(); ++i) h.set(i, NAN);  // poisoned
      }
      want[t->name] = h;
      got[t->name] = h;
    }
    std::map<std::string, HostTensor*, std::less<>> want_ptrs, got_ptrs;
    for (auto& [name, t] : want) want_ptrs[name] = &t;
    for (auto& [name, t] : got) got_ptrs[name] = &t;
    interpret(k, g.sizes, want_ptrs);
    run_schedule(s, g.sizes, got_ptrs);
    for (const TensorDecl& o : k.outputs) {
      const HostTensor& w = want.at(o.name);
      const HostTensor& r = got.at(o.name);
      REQUIRE(r.numel() == w.numel());
      int bad = 0;
      for (int64_t i = 0; i < w.numel() && bad < 5; ++i) {
        double a = r.get(i), b = w.get(i);
        bool ok = std::abs(a - b) <= 1e-5 * std::max(1.0, std::abs(b));
        if (!ok) {
          ++bad;
          FAIL_CHECK("output " << o.name << "[" << i << "]: scheduled " << a << ", interpreted "
                               << b);
        }
      }
    }
  }
  // The generator covers what it should: fused and unfused schedules, buffers, reductions.
  INFO("kernels " << kernels << ", multi-kernel programs " << multi << ", with buffers " << buffers
                  << ", reduction kernels " << reductions);
  CHECK(multi >= 20);
  CHECK(buffers >= 10);
  CHECK(reductions >= 100);
  CHECK(kernels < 600);
  CHECK(dead * 10 < nodes);
}
