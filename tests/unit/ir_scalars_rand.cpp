// Scalar parameters and rand: parsing, the canonical printer's round trip, located errors, the
// verifier on API-built kernels, the interpreter's values, and Philox 4x32-10 against the
// known answers of Random123 (the reference implementation cuRAND and torch follow).
#include <catch2/catch.hpp>
#include <cstring>

#include "ir/interpreter.h"
#include "ir/text.h"
#include "tests/unit/test_support.h"

using namespace kiln;
using kiln::testing::check_parse_error;

namespace {

/// Runs the only kernel of `src`; scalars and tensors by name, as f64 values (i64 scalars
/// through `i64s`, bit for bit).
struct Run {
  Program program;
  SymbolValues symbols;
  std::map<std::string, HostTensor, std::less<>> tensors;

  Run(const std::string& src, SymbolValues syms)
      : program(parse_program(src)), symbols(std::move(syms)) {
    for (const TensorDecl* t : program.kernels[0].params()) {
      tensors[t->name] = HostTensor(t->dtype, resolve_shape(t->shape, symbols));
    }
  }
  Run& set(const std::string& name, std::vector<double> v) {
    for (size_t i = 0; i < v.size(); ++i) tensors.at(name).set(static_cast<int64_t>(i), v[i]);
    return *this;
  }
  Run& set_i64(const std::string& name, int64_t v) {
    std::memcpy(tensors.at(name).data(), &v, sizeof v);
    return *this;
  }
  Run& go() {
    std::map<std::string, HostTensor*, std::less<>> ptrs;
    for (auto& [name, t] : tensors) ptrs[name] = &t;
    interpret(program.kernels[0], symbols, ptrs);
    return *this;
  }
  double get(const std::string& name, int64_t i) const { return tensors.at(name).get(i); }
};

}  // namespace

TEST_CASE("scalar parameters parse, print without brackets and round-trip", "[ir]") {
  const std::string src =
      "kernel k(x: f32[N], eps: f32, h: bf16, s: i64, n: u32, c: f32[]) -> (y: f32[N], z: "
      "i64[N]) {\n"
      "  y[i] = x[i] * eps + h - c[] + f32(n)\n"
      "  z[i] = i64(i) * s\n"
      "}\n";
  Program p = parse_program(src);
  const KernelDef& k = p.kernels[0];
  REQUIRE(k.inputs.size() == 6);
  CHECK(k.inputs[1].scalar);
  CHECK(k.inputs[1].shape.empty());
  CHECK_FALSE(k.inputs[5].scalar);  // a rank-0 tensor stays a tensor
  CHECK(k.symbols() == std::vector<std::string>{"N"});
  const Expr& y = k.body[0].value;
  CHECK(y.type() == DType::f32);
  CHECK(print(p) == src);
  CHECK(parse_program(print(p)) == p);
  // A scalar is not a rank-0 tensor: the two programs differ.
  Program q =
      parse_program("kernel k(x: f32[N], eps: f32[]) -> (y: f32[N]) { y[i] = x[i] * eps[] }");
  Program r = parse_program("kernel k(x: f32[N], eps: f32) -> (y: f32[N]) { y[i] = x[i] * eps }");
  CHECK_FALSE(q == r);
  CHECK(content_hash(q.kernels[0]) != content_hash(r.kernels[0]));
}

TEST_CASE("scalar errors are located", "[ir]") {
  check_parse_error("kernel k(x: f32[N]) -> (y: f32) {\n  y[] = 1.0\n}",
                    "output 'y' cannot be a scalar; write y: f32[] for a rank-0 output", 1, 25);
  check_parse_error("kernel k(x: f32[N], eps: f32) -> (y: f32[N]) {\n  y[i] = x[i] * eps[]\n}",
                    "'eps' is a scalar, not a tensor: write eps without brackets", 2, 17);
  check_parse_error("kernel k(x: f32[N], eps: f64) -> (y: f32[N]) {\n  y[i] = x[i]\n}",
                    "unknown dtype 'f64'; expected f32, f16, bf16, i32, i64 or u32", 1, 26);
  // Scalars are not weak: an i32 scalar beside an f32 needs a cast.
  check_parse_error("kernel k(x: f32[N], n: i32) -> (y: f32[N]) {\n  y[i] = x[i] * n\n}",
                    "type mismatch: f32 * i32; convert one side with f32(...) or i32(...)", 2, 15);
  check_parse_error("kernel k(x: f32[N], eps: f32, eps: f32) -> (y: f32[N]) {\n  y[i] = x[i]\n}",
                    "duplicate parameter 'eps'", 1, 31);
}

TEST_CASE("the verifier refuses scalar outputs and indexed scalars built through the API", "[ir]") {
  Program p = parse_program("kernel k(x: f32[N], eps: f32) -> (y: f32[N]) { y[i] = x[i] * eps }");
  KernelDef out = p.kernels[0];
  out.outputs[0].scalar = true;
  out.outputs[0].shape.clear();
  CHECK_THROWS_WITH(verify(out),
                    "output 'y' cannot be a scalar; write y: f32[] for a rank-0 output");
  KernelDef indexed = p.kernels[0];
  indexed.body[0].value = make_binary(BinaryOp::mul, make_load("x", {"i"}, DType::f32),
                                      make_load("eps", {}, DType::f32));
  CHECK_THROWS_WITH(verify(indexed), "'eps' is a scalar, not a tensor: write eps without brackets");
  KernelDef wrong = p.kernels[0];
  wrong.body[0].value = make_binary(BinaryOp::mul, make_load("x", {"i"}, DType::f32),
                                    make_scalar_ref("x", DType::f32));
  CHECK_THROWS_WITH(verify(wrong), "unknown scalar 'x'");
}

TEST_CASE("the interpreter reads scalars of every type", "[ir]") {
  Run r(
      "kernel k(x: f32[N], a: f32, h: bf16, g: f16, k: i32, n: u32, s: i64, c: f32[]) -> "
      "(y: f32[N], z: i64[N], m: u32[N]) {\n"
      "  y[i] = x[i] * a + h * c[] - g + f32(k)\n"
      "  z[i] = i64(i) * s + i64(k)\n"
      "  m[i] = u32(i) * n\n"
      "}",
      {{"N", 3}});
  r.set("x", {1, 2, 3}).set("a", {0.5}).set("h", {2}).set("g", {0.25}).set("k", {-7});
  r.set("n", {4000000000.0}).set("c", {10}).set_i64("s", int64_t{1} << 40).go();
  CHECK(r.get("y", 2) == 3 * 0.5 + 2 * 10 - 0.25 - 7);
  int64_t z2 = 0;
  std::memcpy(&z2, static_cast<const char*>(r.tensors.at("z").data()) + 16, 8);
  CHECK(z2 == (int64_t{2} << 40) - 7);
  CHECK(r.get("m", 2) == static_cast<double>(static_cast<uint32_t>(8000000000ULL)));
}

TEST_CASE("Philox 4x32-10 gives Random123's known answers", "[ir]") {
  // kat_vectors of Random123 1.14 for philox4x32 with 10 rounds.
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    uint32_t c[4] = {k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]};
    philox4x32_10(c, k.key[0], k.key[1]);
    for (int i = 0; i < 4; ++i) CHECK(c[i] == k.out[i]);
  }
  // rand's words: counter n uses block n >> 2 and word n & 3 (the first vector's four words
  // are counters 0..3 of seed 0, offset 0); seed and offset fill the key and the counter's high
  // half.
  const uint32_t zero_words[4] = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
  for (uint64_t w = 0; w < 4; ++w) {
    CHECK(philox_uniform(0, 0, w) == static_cast<float>(zero_words[w] >> 8) * 0x1p-24f);
  }
  const uint64_t seed = 0x299f31d0a4093822ULL, offset = 0x0370734413198a2eULL;
  const uint64_t block = 0x05a308d3243f6a88ULL;
  uint32_t c[4] = {0x243f6a88, 0x05a308d3, 0x13198a2e, 0x03707344};
  philox4x32_10(c, 0xa4093822, 0x299f31d0);
  for (uint64_t w = 0; w < 4; ++w) {
    CHECK(philox_uniform(seed, offset, block * 4 + w) == static_cast<float>(c[w] >> 8) * 0x1p-24f);
  }
  // The largest counter: block 2^62 - 1, word 3.
  uint32_t m[4] = {0xffffffff, 0x3fffffff, 0, 0};
  philox4x32_10(m, 0, 0);
  CHECK(philox_uniform(0, 0, ~uint64_t{0}) == static_cast<float>(m[3] >> 8) * 0x1p-24f);
  CHECK(philox_uniform(0, 0, 0) == static_cast<float>(0x6627e8d5u >> 8) * 0x1p-24f);
}

TEST_CASE("rand(seed, offset) is keyed by the flat index and prints its counter", "[ir]") {
  const std::string src =
      "kernel k(seed: i64, off: i64) -> (u: f32[M, N], v: f32[N]) {\n"
      "  u[i, j] = rand(seed, off)\n"
      "  v[j] = rand(seed, off + 1, 5)\n"
      "}\n";
  Program p = parse_program(src);
  const std::string printed = print(p);
  CHECK(printed ==
        "kernel k(seed: i64, off: i64) -> (u: f32[M, N], v: f32[N]) {\n"
        "  u[i, j] = rand(seed, off, i64(i) * N + j)\n"
        "  v[j] = rand(seed, off + 1, 5)\n"
        "}\n");
  CHECK(parse_program(printed) == p);
  Run r(src, {{"M", 3}, {"N", 5}});
  const int64_t seed = -1234567890123LL, off = (int64_t{7} << 33) + 3;
  r.set_i64("seed", seed).set_i64("off", off).go();
  for (int64_t n = 0; n < 15; ++n) {
    const double u = r.get("u", n);
    CHECK(u == philox_uniform(static_cast<uint64_t>(seed), static_cast<uint64_t>(off),
                              static_cast<uint64_t>(n)));
    CHECK(u >= 0.0);
    CHECK(u < 1.0);
  }
  for (int64_t j = 0; j < 5; ++j) {
    CHECK(r.get("v", j) ==
          philox_uniform(static_cast<uint64_t>(seed), static_cast<uint64_t>(off + 1), 5));
  }
  // Another offset, another stream.
  CHECK(r.get("u", 0) != r.get("v", 0));
  // A fixed extent and a rank-0 target.
  Program q = parse_program(
      "kernel k(s: i64) -> (u: f32[4, 3], w: f32[]) {\n  u[i, j] = rand(s, 0)\n  w[] = rand(s, "
      "7)\n}\n");
  CHECK(print(q) ==
        "kernel k(s: i64) -> (u: f32[4, 3], w: f32[]) {\n  u[i, j] = rand(s, 0, i64(i) * 3 + "
        "j)\n  w[] = rand(s, 7, 0)\n}\n");
  CHECK(parse_program(print(q)) == q);
}

TEST_CASE("a dropout backward regenerates its forward's mask", "[ir]") {
  const std::string src =
      "kernel f(x: f32[M, N], p: f32, seed: i64, offset: i64) -> (y: f32[M, N]) {\n"
      "  y[i, j] = x[i, j] * f32(rand(seed, offset) >= p) / (1.0 - p)\n"
      "}\n";
  Run fwd(src, {{"M", 37}, {"N", 29}});
  std::vector<double> ones(37 * 29, 1.0);
  fwd.set("x", ones).set("p", {0.25}).set_i64("seed", 42).set_i64("offset", 4096).go();
  std::string bwd_src = src;
  Run bwd(bwd_src, {{"M", 37}, {"N", 29}});
  bwd.set("x", ones).set("p", {0.25}).set_i64("seed", 42).set_i64("offset", 4096).go();
  int kept = 0;
  for (int64_t n = 0; n < 37 * 29; ++n) {
    CHECK(fwd.get("y", n) == bwd.get("y", n));
    CHECK((fwd.get("y", n) == 0.0 || fwd.get("y", n) == static_cast<double>(1.0f / 0.75f) ||
           std::abs(fwd.get("y", n) - 1.0 / 0.75) < 1e-6));
    kept += fwd.get("y", n) != 0.0;
  }
  // About 3/4 kept (1073 elements: 805 expected, 3 standard deviations is about 43).
  CHECK(kept > 760);
  CHECK(kept < 850);
  // Another seed, another mask.
  Run other(src, {{"M", 37}, {"N", 29}});
  other.set("x", ones).set("p", {0.25}).set_i64("seed", 43).set_i64("offset", 4096).go();
  int differ = 0;
  for (int64_t n = 0; n < 37 * 29; ++n) differ += other.get("y", n) != fwd.get("y", n);
  CHECK(differ > 100);
}

TEST_CASE("rand errors are located", "[ir]") {
  check_parse_error("kernel k(s: i64) -> (u: f32[N]) {\n  u[i] = rand(s)\n}",
                    "rand takes 2 or 3 arguments (seed, offset[, counter]) but 1 was given", 2, 10);
  check_parse_error("kernel k(s: f32) -> (u: f32[N]) {\n  u[i] = rand(s, 0)\n}",
                    "rand's seed must be i64 but got f32; convert it with i64(...)", 2, 15);
  check_parse_error("kernel k(s: i64, o: u32) -> (u: f32[N]) {\n  u[i] = rand(s, o)\n}",
                    "rand's offset must be i64 but got u32; convert it with i64(...)", 2, 18);
  check_parse_error("kernel k(s: i64) -> (u: f32[N]) {\n  u[i] = rand(s, 0, 1.5)\n}",
                    "rand's counter must be i64 but got f32; convert it with i64(...)", 2, 21);
  // A temporary whose extent only rand would need cannot be inferred.
  check_parse_error("kernel k(s: i64) -> (u: f32[N]) {\n  t[i] = rand(s, 0)\n  u[i] = t[i]\n}",
                    "cannot infer the extent of index 'i': it never indexes a tensor", 2, 3);
}

// compiler/emit.cpp compares rand with a value in integers only when that value is the same at
// every point of a launch.
TEST_CASE("is_launch_invariant: constants, symbols and scalars, not reads or indices", "[ir]") {
  Program p = parse_program(
      "kernel k(x: f32[M, N], t: i64[M], p: f32, seed: i64) -> (y: f32[M, N]) {\n"
      "  y[i, j] = x[i, j] + p * 0.5 + f32(N) + rand(seed, 3, 7) + f32(i) + x[i, t[i]]\n"
      "      + sum(x[i, k], k) + rand(seed, 3)\n"
      "}\n");
  const Expr& y = p.kernels[0].body[0].value;
  std::vector<std::pair<std::string, bool>> seen;
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (e.as<Binary>() && e.as<Binary>()->op == BinaryOp::add) {
      for_each_child(e, walk);
      return;
    }
    seen.emplace_back(print(e), is_launch_invariant(e));
  };
  walk(y);
  REQUIRE(seen.size() == 8);
  CHECK(seen[0] == std::pair<std::string, bool>{"x[i, j]", false});
  CHECK(seen[1].second);   // p * 0.5
  CHECK(seen[2].second);   // f32(N)
  CHECK(seen[3].second);   // rand with a constant counter
  CHECK(!seen[4].second);  // f32(i)
  CHECK(!seen[5].second);  // a gather
  CHECK(!seen[6].second);  // a reduction
  CHECK(!seen[7].second);  // rand keyed by the element's index
}
