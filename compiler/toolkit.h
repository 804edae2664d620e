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

/// What a cubin's own records (its .nv.info attributes) say about `entry`: the registers a
/// thread takes (EIATTR_REGCOUNT) and its local memory frame in bytes (EIATTR_FRAME_SIZE: spill
/// slots and local arrays). `found` is false when the cubin names no such entry or cannot be read.
struct CubinFacts {
  bool found = false;
  int registers = 0;
  int frame_bytes = 0;
};
CubinFacts cubin_facts(const std::string& cubin, const std::string& entry);

/// How an image is assembled: by nvJitLink, which has ptxas compile it as relocatable code
/// (separate compilation, in process), or by the toolkit's ptxas as a whole program (a process
/// per call). compile.cpp's `assembly_for` says which kernels take which, and why.
enum class Assembly { separate, whole_program };

/// Assembles `ptx` for `arch` ("sm_90") as `how` says; PTX with wgmma or setmaxnreg always
/// whole-program, as nvJitLink's separate compilation degrades both (toolkit.cpp). Fails (never
/// throws) when the assembler is missing or rejects the PTX; the message carries its error log.
/// The registers, spills and shared memory reported are `entry`'s when it is named and the PTX
/// holds several entries.
Result<Cubin> assemble_cubin(const std::string& ptx, const std::string& arch,
                             const std::string& entry = "", Assembly how = Assembly::separate);

}  // namespace kiln
