// Printer tests: the canonical text (layout, parentheses, literals), the content hash, and
// parse(print(p)) == p on the design examples and on many randomly generated programs.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "ir/text.h"

using namespace kiln;

namespace {

const char* kExamples = R"(
kernel softmax(x: bf16[M, N]) -> (y: bf16[M, N]) {
  mx[i]   = max(x[i, j], j)
  e[i, j] = exp(x[i, j] - mx[i])
  s[i]    = sum(e[i, j], j)
  y[i, j] = e[i, j] / s[i]
}

kernel layernorm(x: bf16[M, N], w: bf16[N], b: bf16[N]) -> (y: bf16[M, N]) {
  mean[i] = sum(x[i, j], j) / N
  d[i, j] = x[i, j] - mean[i]
  var[i]  = sum(d[i, j] * d[i, j], j) / N
  y[i, j] = d[i, j] * rsqrt(var[i] + 1e-5) * w[j] + b[j]
}

kernel colsum(x: f32[M, N]) -> (s: f32[N]) {
  s[j] = sum(x[i, j], i)
}

kernel add(x: f32[M, N], b: f32[N]) -> (y: f32[M, N]) { y[i, j] = x[i, j] + b[j] }
kernel transpose(x: f32[N, M]) -> (y: f32[M, N]) { y[i, j] = x[j, i] }
kernel misc(x: f32[N], n: i32[N]) -> (y: f32[N], z: i32[N]) {
  y[i] = where(x[i] >= 0.0, sigmoid(x[i]), tanh(-x[i])) + erf(x[i]) * pow(abs(x[i]), 0.5)
         + f32(bf16(x[i])) + f16(n[i]) + max(x[i], 0) - min(x[i], 1) + log(sqrt(exp(x[i])))
  z[i] = n[i] / 3 + i32(x[i] != 1.0) - -n[i] * i + N
}
)";

/// The expression of `y[i] = ...` in a kernel with x, y: f32[N], printed canonically.
std::string canon(const std::string& expr) {
  Program p =
      parse_program("kernel k(x: f32[N], n: i32[N]) -> (y: f32[N]) { y[i] = " + expr + " }");
  return print(p.kernels[0].body[0].value);
}

}  // namespace

TEST_CASE("the canonical layout", "[ir]") {
  Program p = parse_program(
      "kernel add(x:f32[M,N],b:f32[N])->(y:f32[M,N]){y[i,j]=x[i,j]+b[j];}"
      "kernel one(x: f32[]) -> (y: f32[4]) {\n t[] = x[] * 2.0 # scale\n y[i] = t[] }");
  CHECK(print(p) ==
        "kernel add(x: f32[M, N], b: f32[N]) -> (y: f32[M, N]) {\n"
        "  y[i, j] = x[i, j] + b[j]\n"
        "}\n"
        "\n"
        "kernel one(x: f32[]) -> (y: f32[4]) {\n"
        "  t[] = x[] * 2.0\n"
        "  y[i] = t[]\n"
        "}\n");
}

TEST_CASE("minimal parentheses by precedence and associativity", "[ir]") {
  CHECK(canon("x[i] - (x[i] - 1.0)") == "x[i] - (x[i] - 1.0)");
  CHECK(canon("(x[i] - x[i]) - 1.0") == "x[i] - x[i] - 1.0");
  CHECK(canon("((x[i] * 2.0)) + (x[i] / 3.0)") == "x[i] * 2.0 + x[i] / 3.0");
  CHECK(canon("x[i] / (x[i] * 2.0)") == "x[i] / (x[i] * 2.0)");
  CHECK(canon("(x[i] + 1.0) * (x[i] - 1.0)") == "(x[i] + 1.0) * (x[i] - 1.0)");
  CHECK(canon("-(x[i] + 1.0)") == "-(x[i] + 1.0)");
  CHECK(canon("-(-x[i])") == "-(-x[i])");
  CHECK(canon("-x[i] * x[i]") == "-x[i] * x[i]");
  CHECK(canon("x[i] - -1.5") == "x[i] - -1.5");
  CHECK(canon("f32((x[i] + 1.0) < x[i] * 2.0)") == "f32(x[i] + 1.0 < x[i] * 2.0)");
  CHECK(canon("f32(f32(x[i] < 1.0) == f32(x[i] > 2.0))") ==
        "f32(f32(x[i] < 1.0) == f32(x[i] > 2.0))");
  CHECK(canon("max((x[i] + 1.0), x[i]) * sum((x[k]), k)") ==
        "max(x[i] + 1.0, x[i]) * sum(x[k], k)");
  CHECK(canon("where(n[i] > (2), x[i], 1)") == "where(n[i] > 2, x[i], 1.0)");
}

TEST_CASE("literals print as the shortest round-tripping text", "[ir]") {
  CHECK(canon("0.1") == "0.1");
  CHECK(canon("1e-5") == "1e-05");
  CHECK(canon("3") == "3.0");  // a weak i32 adopted f32
  CHECK(canon("100.") == "100.0");
  CHECK(canon("1e20") == "1e+20");
  CHECK(canon("-0.0") == "-0.0");
  CHECK(canon("123456789.0") == "123456792.0");  // rounded to float first
  CHECK(canon("3.4028235e38") == "3.4028235e+38");
  CHECK(canon("1e-45") == "1e-45");  // the smallest subnormal
  CHECK(canon("f32(n[i] + -2147483648)") == "f32(n[i] + -2147483648)");
  CHECK(canon("f32(n[i] * 7)") == "f32(n[i] * 7)");
}

TEST_CASE("content hash: FNV-1a of the canonical text", "[ir]") {
  Program a = parse_program("kernel k(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] + 1.0 }");
  Program b = parse_program(
      "# same kernel\nkernel k(x: f32[N]) -> (y: f32[N]) {\n"
      "  y[i] = (x[i]) + 1.0;\n}\n");
  Program c = parse_program("kernel k(x: f32[N]) -> (y: f32[N]) { y[i] = x[i] + 2.0 }");
  std::string h = content_hash(a.kernels[0]);
  CHECK(h.size() == 16);
  CHECK(h.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(h == content_hash(b.kernels[0]));
  CHECK(h != content_hash(c.kernels[0]));
  KernelDef empty;
  empty.name = "e";
  // FNV-1a 64 of "kernel e() -> () {\n}\n", computed independently.
  uint64_t ref = 0xcbf29ce484222325ull;
  for (char ch : std::string("kernel e() -> () {\n}\n")) {
    ref = (ref ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(ref));
  CHECK(content_hash(empty) == buf);
}

TEST_CASE("the examples round-trip through the printer", "[ir]") {
  Program p = parse_program(kExamples);
  REQUIRE(p.kernels.size() == 6);
  std::string text = print(p);
  Program q = parse_program(text);
  CHECK(q == p);
  CHECK(print(q) == text);
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    CHECK(content_hash(p.kernels[i]) == content_hash(q.kernels[i]));
  }
}

// --- Random well-typed programs --------------------------------------------------------------

namespace {

/// Generates random well-typed expressions through the make_* API, over the tensors
///   x: f32[M, N], h: bf16[M, N], b: f16[N], n: i32[M, N], q: f32[K], p: i32[K]
/// with i, j bound (j only when `has_j`), and reductions over fresh indices k0, k1, ...
/// that index q or p.
class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  Expr gen(DType t, int depth) {
    if (depth <= 0 || pick(4) == 0) return leaf(t);
    if (t == DType::boolean) {
      DType s = pick(2) ? DType::f32 : DType::i32;
      static constexpr BinaryOp cmps[] = {BinaryOp::lt, BinaryOp::le, BinaryOp::gt,
                                          BinaryOp::ge, BinaryOp::eq, BinaryOp::ne};
      return make_binary(cmps[pick(6)], gen(s, depth - 1), gen(s, depth - 1));
    }
    bool f = t == DType::f32;
    switch (pick(7)) {
      case 0: {
        static constexpr UnaryOp fops[] = {
            UnaryOp::neg,   UnaryOp::abs,  UnaryOp::exp,     UnaryOp::log, UnaryOp::sqrt,
            UnaryOp::rsqrt, UnaryOp::tanh, UnaryOp::sigmoid, UnaryOp::erf, UnaryOp::tf32};
        UnaryOp op = f ? fops[pick(10)] : (pick(2) ? UnaryOp::neg : UnaryOp::abs);
        // A math function may take a weak i32 operand (converted), e.g. exp(i).
        Expr a = f && op > UnaryOp::abs && pick(4) == 0 ? weak_i32() : gen(t, depth - 1);
        return make_unary(op, a);
      }
      case 1:
      case 2: {
        static constexpr BinaryOp ops[] = {BinaryOp::add, BinaryOp::sub, BinaryOp::mul,
                                           BinaryOp::div, BinaryOp::max, BinaryOp::min,
                                           BinaryOp::pow};
        BinaryOp op = ops[pick(f ? 7 : 6)];
        Expr a = gen(t, depth - 1), b = gen(t, depth - 1);
        if (f && pick(5) == 0) b = weak_i32();  // adopts f32
        if (pick(2)) std::swap(a, b);
        return make_binary(op, a, b);
      }
      case 3:
        return make_select(gen(DType::boolean, depth - 1), gen(t, depth - 1),
                           pick(4) ? gen(t, depth - 1) : leaf(t));
      case 4: {
        static constexpr DType from[] = {DType::f32, DType::i32, DType::boolean};
        DType to = f ? (pick(3) == 0 ? DType::bf16
                        : pick(2)    ? DType::f16
                                     : DType::f32)
                     : DType::i32;
        return make_cast(to, gen(from[pick(3)], depth - 1));
      }
      case 5:
      case 6: {
        static constexpr ReduceOp rops[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::min,
                                            ReduceOp::prod, ReduceOp::mean};
        ReduceOp op = rops[pick(f ? 5 : 4)];
        std::string k = "k" + std::to_string(fresh_++);
        scope_.push_back(k);
        Expr use = f ? make_load("q", {k}, DType::f32) : make_load("p", {k}, DType::i32);
        Expr body = make_binary(pick(2) ? BinaryOp::add : BinaryOp::mul, gen(t, depth - 1), use);
        scope_.pop_back();
        return make_reduce(op, k, body);
      }
    }
    return leaf(t);
  }

  bool has_j = true;

 private:
  std::mt19937 rng_;
  int fresh_ = 0;
  std::vector<std::string> scope_;

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }

  Expr weak_i32() {
    switch (pick(3)) {
      case 0:
        return make_const(static_cast<double>(pick(21)) - 10, DType::i32);
      case 1:
        return make_sym(pick(2) ? "M" : "N");
      default:
        return make_index(index_var());
    }
  }

  std::string index_var() {
    std::vector<std::string> vars = {"i"};
    if (has_j) vars.push_back("j");
    vars.insert(vars.end(), scope_.begin(), scope_.end());
    return vars[pick(static_cast<int>(vars.size()))];
  }

  float random_float() {
    switch (pick(4)) {
      case 0:
        return static_cast<float>(pick(2001) - 1000) / 8.0f;
      case 1:
        return static_cast<float>(pick(1000)) * 0.001f;
      default: {
        uint32_t u;
        float f;
        do {
          u = static_cast<uint32_t>(rng_());
          std::memcpy(&f, &u, 4);
        } while (!std::isfinite(f));
        return f;
      }
    }
  }

  Expr leaf(DType t) {
    if (t == DType::boolean) return make_binary(BinaryOp::lt, leaf(DType::f32), leaf(DType::f32));
    if (t == DType::i32) {
      switch (pick(5)) {
        case 0:
          return make_const(pick(3) == 0 ? -2147483648.0 : pick(200001) - 100000.0, DType::i32);
        case 1:
          return has_j ? make_load("n", {"i", "j"}, DType::i32) : make_load("p", {"i"}, DType::i32);
        default:
          return weak_i32();
      }
    }
    switch (pick(5)) {
      case 0:
        return make_const(random_float(), DType::f32);
      case 1:
        return has_j ? make_load("h", {"i", "j"}, DType::bf16) : make_load("q", {"i"}, DType::f32);
      case 2:
        return has_j ? make_load("b", {"j"}, DType::f16) : make_load("q", {"i"}, DType::f32);
      default:
        return has_j ? make_load("x", {"i", "j"}, DType::f32) : make_load("q", {"i"}, DType::f32);
    }
  }
};

TensorDecl decl(const char* name, DType t, std::vector<Dim> shape, TensorRole role) {
  return TensorDecl{name, t, std::move(shape), role, {}};
}

KernelDef random_kernel(uint32_t seed) {
  Generator g(seed);
  Dim M = Dim::symbol("M"), N = Dim::symbol("N"), K = Dim::fixed(7);
  KernelDef k;
  k.name = "random" + std::to_string(seed);
  k.inputs = {decl("x", DType::f32, {M, N}, TensorRole::input),
              decl("h", DType::bf16, {M, N}, TensorRole::input),
              decl("b", DType::f16, {N}, TensorRole::input),
              decl("n", DType::i32, {M, N}, TensorRole::input),
              decl("q", DType::f32, {K}, TensorRole::input),
              decl("p", DType::i32, {K}, TensorRole::input)};
  k.outputs = {decl("y", DType::bf16, {M, N}, TensorRole::output),
               decl("z", DType::i32, {M, N}, TensorRole::output)};
  int depth = 2 + static_cast<int>(seed % 4);
  Expr t =
      make_binary(BinaryOp::sub, g.gen(DType::f32, depth), make_load("x", {"i", "j"}, DType::f32));
  k.temps = {decl("t", DType::f32, {M, N}, TensorRole::temp)};
  k.body.push_back(Stmt{"t", {"i", "j"}, t, {}});
  k.body.push_back(Stmt{
      "y",
      {"i", "j"},
      make_binary(BinaryOp::mul, g.gen(DType::f32, depth), make_load("t", {"i", "j"}, DType::f32)),
      {}});
  k.body.push_back(Stmt{
      "z",
      {"i", "j"},
      make_binary(BinaryOp::add, g.gen(DType::i32, depth), make_load("n", {"i", "j"}, DType::i32)),
      {}});
  return k;
}

}  // namespace

TEST_CASE("random well-typed programs round-trip through the printer", "[ir]") {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    KernelDef k = random_kernel(seed);
    INFO("seed " << seed << "\n" << print(k));
    REQUIRE_NOTHROW(verify(k));
    std::string text = print(k);
    Program p;
    REQUIRE_NOTHROW(p = parse_program(text));
    REQUIRE(p.kernels.size() == 1);
    CHECK(p.kernels[0] == k);
    CHECK(print(p.kernels[0]) == text);
    CHECK(p.kernels[0].body[0].value.hash() == k.body[0].value.hash());
  }
}
