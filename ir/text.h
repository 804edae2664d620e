// The text form of the IR: parser, canonical printer and verifier.
//
// parse_program(print(p)) == p for every verified program p. The printer is canonical (one
// spelling per program): it is what the content hash of a kernel is computed from.
#pragma once

#include <string>
#include <string_view>

#include "ir/content_hash.h"
#include "ir/program.h"

namespace kiln {

/// Parses and verifies a whole spec. Throws UserError with the location of the first problem.
Program parse_program(std::string_view text);

/// Canonical text of a program, a kernel or an expression.
std::string print(const Program& p);
std::string print(const KernelDef& k);
std::string print(const Expr& e);

/// Checks the rules of program.h and expr.h (names resolve, each output written exactly once,
/// inputs never written, temporaries defined before use, index variables bound, extents
/// consistent, outputs' left-hand sides cover their declared shapes, reduction indices not
/// bound by the left-hand side and used in their body). Throws UserError. parse_program
/// already calls it; call it on programs built through the API.
void verify(const Program& p);
void verify(const KernelDef& k);

/// content_hash(print(k)) (ir/content_hash.h): the kernel's content hash.
std::string content_hash(const KernelDef& k);

}  // namespace kiln
