// Kernels of several steps where a later step reads what an earlier one wrote: a buffer, or
// an output of the kernel itself (compiler/compile.cpp, step_abi). The later step's entry
// takes that output as an input, the earlier one's as an output. The GPU case
// (examples/weighted_colsum.kiln) checks the values.
#include <catch2/catch.hpp>

#include "compiler/compile.h"
#include "ir/text.h"

using namespace kiln;

TEST_CASE("a step that reads a kernel output an earlier step wrote compiles", "[compiler]") {
  // z's step reads y, which the first step writes: it was an internal error ("load of unknown
  // tensor y") while y kept its output role in every step.
  Program p = parse_program(
      "kernel k(x: f32[M, N]) -> (y: f32[M], z: f32[N]) {\n"
      "  y[i] = sum(x[i, j], j)\n"
      "  z[j] = sum(x[i, j] * y[i], i)\n"
      "}\n");
  CompileOptions opts;
  opts.archs = {"sm_90"};
  opts.all_variants = false;
  opts.jobs = 1;
  CompiledBundle b = compile_program(p, opts);
  REQUIRE(b.manifest.kernels.size() == 1);
  const bundle::KernelInfo& k = b.manifest.kernels[0];
  REQUIRE(k.steps.size() == 2);
  CHECK(k.steps[0].kind == bundle::StepKind::row_reduction);
  CHECK(k.steps[1].kind == bundle::StepKind::outer_reduction);
  CHECK(k.buffers.empty());
}
