// Where the CUDA toolkit pieces the compiler uses live, and the cubin assembler.
//
// The toolkit root is $KILN_CUDA_ROOT, else $CUDA_HOME, else the path configured at build time
// (/usr/local/cuda). libnvJitLink is opened with dlopen on first use, so the kiln binary runs
// (and emits PTX) on machines without it; it then ships PTX only and says why.
#pragma once

#include <string>

#include "bundle/status.h"

namespace kiln {

std::string cuda_root();
std::string libdevice_path();

/// A cubin and what the assembler reported about it.
struct Cubin {
  std::string bytes;
  int registers = 0;
  int spill_bytes = 0;  // spill stores + spill loads
  int shared_bytes = 0;
  std::string info_log;
};

/// Assembles `ptx` for `arch` ("sm_90") with nvJitLink, or with the toolkit's ptxas
/// (whole-program, a process per call) when it uses wgmma or setmaxnreg, which nvJitLink's
/// separate compilation degrades (toolkit.cpp). Fails (never throws) when the assembler is
/// missing or rejects the PTX; the message carries its error log. The registers, spills and
/// shared memory reported are `entry`'s when it is named and the PTX holds several entries.
Result<Cubin> assemble_cubin(const std::string& ptx, const std::string& arch,
                             const std::string& entry = "");

}  // namespace kiln
