// How the commands that need a GPU (`kiln run`, `kiln tune`) and the GPU test binaries open
// the device (docs/testing.md, "Skips"): they skip (exit 77, which CTest shows as Skipped
// through SKIP_RETURN_CODE) only when the CUDA driver library cannot be loaded at all, and not
// even then under KILN_REQUIRE_GPU=1, which the GPU machine's scripts set; every other
// failure to open the device (a driver too old, cuInit or context errors, no device) fails.
// The one place this rule is written.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "runtime/runtime.h"

namespace kiln {

/// True when $KILN_REQUIRE_GPU is set and not "0".
inline bool gpu_required() {
  const char* v = std::getenv("KILN_REQUIRE_GPU");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

/// Opens device 0 into `out` and returns -1, or says why not on stderr, after `prog` ("kiln
/// run"), and returns the exit code its caller must end with: 77 ("skipped, needs a GPU")
/// without a driver library, else 1.
inline int open_gpu(const char* prog, std::unique_ptr<Runtime>& out) {
  Result<std::unique_ptr<Runtime>> rt = Runtime::open();
  if (rt.ok()) {
    out = std::move(rt.value());
    return -1;
  }
  if (!rt.status().no_driver()) {
    std::fprintf(stderr, "%s: cannot open the GPU: %s\n", prog, rt.message().c_str());
    return 1;
  }
  if (gpu_required()) {
    std::fprintf(stderr, "%s: a GPU was required (KILN_REQUIRE_GPU=%s): %s\n", prog,
                 std::getenv("KILN_REQUIRE_GPU"), rt.message().c_str());
    return 1;
  }
  std::fprintf(stderr, "%s: skipped, needs a GPU: %s\n", prog, rt.message().c_str());
  return 77;
}

}  // namespace kiln
