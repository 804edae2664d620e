// `kiln compile SPEC --emit=header`: a C++ header of typed launchers for a spec's kernels, so
// that applications call `swiglu(kernels.swiglu, stream, a, b, y, M, N)` instead of building
// pointer and symbol arrays by hand. Needs no LLVM; the generated code needs only the runtime.
#pragma once

#include <string>

#include "ir/program.h"

namespace kiln {

/// The header for `p`; `ns` names the C++ namespace of the launchers (a C identifier).
std::string emit_header(const Program& p, const std::string& ns);

}  // namespace kiln
