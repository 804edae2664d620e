// The facts of the GPUs Kiln compiles for, in one place: what the code generator, the
// occupancy hint and the tuner assume of an architecture (CUDA C++ Programming Guide,
// "Technical Specifications per Compute Capability"). The runtime reads the device's own
// values from the driver (runtime/driver.h) where a launch depends on them: SM count, the
// dynamic shared memory a block may have.
#pragma once

#include <cstdint>
#include <string_view>

namespace kiln {

struct TargetFacts {
  int warp_size = 32;
  int registers_per_sm = 65536;  // 32-bit registers
  int register_granule = 256;    // registers are allocated per warp in units of this many
  int max_registers_per_thread = 255;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int64_t shared_bytes_per_sm = 0;
};

/// The facts of `arch` (one of compile.h's supported_archs; another arch gets sm_80's).
const TargetFacts& target_facts(std::string_view arch);

}  // namespace kiln
