// Helpers shared by the unit tests: the examples' text, parse errors, and float arithmetic for the
// reduction formulas of compiler/reduction_math.h (the A those templates are written over).
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "ir/diag.h"
#include "ir/text.h"

namespace kiln::testing {

/// The text of examples/NAME.kiln.
inline std::string read_example(const std::string& name) {
  std::filesystem::path p =
      std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "examples" / (name + ".kiln");
  std::ifstream f(p);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// parse_program(src) must fail with `message` at line:col.
inline void check_parse_error(const std::string& src, const std::string& message, uint32_t line,
                              uint32_t col) {
  INFO(src);
  try {
    parse_program(src);
    FAIL("expected the error: " << message);
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) == message);
    CHECK(e.loc().line == line);
    CHECK(e.loc().col == col);
  }
}

/// reduction_math's arithmetic in float, as the CPU models of the row kernels run it.
struct FloatMath {
  using V = float;
  float num(double v) { return static_cast<float>(v); }
  float add(float x, float y) { return x + y; }
  float sub(float x, float y) { return x - y; }
  float mul(float x, float y) { return x * y; }
  float div(float x, float y) { return x / y; }
  float max(float x, float y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); }
  float exp(float x) { return std::exp(x); }
  bool eq(float x, float y) { return x == y; }
  bool gt(float x, float y) { return x > y; }
  float select(bool c, float x, float y) { return c ? x : y; }
};

/// compile_program(p) for `archs`, cubins included; nullopt (with a WARN saying why) where the
/// toolkit's assembler is missing. Any other warning (an assembler refused an image) fails.
inline std::optional<CompiledBundle> compile_with_cubins(const Program& p,
                                                         const std::vector<std::string>& archs) {
  CompileOptions opts;
  opts.archs = archs;
  CompiledBundle b = compile_program(p, opts);
  for (const std::string& w : b.warnings) {
    INFO("compile warning: " << w);
    CHECK(w.find(" not found") != std::string::npos);
  }
  if (!b.warnings.empty()) {
    WARN("no cubins (" << b.warnings[0] << "): not tested");
    return std::nullopt;
  }
  return b;
}

}  // namespace kiln::testing
