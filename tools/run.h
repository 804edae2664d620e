// `kiln run`: launch a bundle's kernel on random inputs, check it against the CPU
// interpreter, time it and report the achieved bandwidth.
#pragma once

#include <cstdint>
#include <string>

#include "autotune/harness.h"
#include "ir/program.h"

namespace kiln {

struct RunOptions {
  std::string bundle;
  std::string kernel;
  SymbolValues shape;
  std::string variant = "default";  // "default", "all", or a variant id (single-step kernels)
  uint64_t seed = 1;
  int reps = 0;  // timed launches; 0 = as many as fit in ~200 ms
  bool check = true;
  bool copy_baseline = false;  // also time a device-to-device copy of >= 1 GiB (the peak)
  double rtol = -1;            // < 0: the output dtype's default (autotune/harness.h Tolerance)
  // Float inputs: "random", "specials" (NaN and infinities placed from the seed) or
  // "neginf_rows" (rows entirely -inf); "" takes $KILN_RUN_INPUTS, else "random".
  std::string inputs;
  std::string json_out;    // write the results as JSON here
  std::string cache_path;  // launch the tuned winners of this autotune cache
  ScalarValues scalars;    // values of scalar parameters (--scalar eps=1e-5); others random
  // Strides of strided inputs (--strides x=1,33, or x=contiguous: empty); the others get the
  // harness's default view (autotune/harness.h default_view_strides).
  StrideValues strides;
};

/// Exit codes of `kiln run`.
inline constexpr int kExitOk = 0, kExitError = 1, kExitMismatch = 2, kExitSkip = 77;

/// Runs and reports on stdout; errors go to stderr. Returns one of the exit codes above:
/// kExitSkip only when the CUDA driver library cannot be loaded at all (the test suite
/// reports a skip) and KILN_REQUIRE_GPU is not set to a value other than 0
/// (autotune/open_gpu.h); any other failure to open the device, load the bundle or launch is
/// kExitError.
int run_kernel(const RunOptions& opts);

}  // namespace kiln
