// Errors, in three channels (see docs/errors.md):
//  - UserError: the user's mistake in a spec, with a source location; rendered like a C
//    compiler's diagnostic (file:line:col: error: message, the line, a caret).
//  - InternalError: a broken invariant inside Kiln; its message says "internal error (bug)".
//  - Expected failures at system boundaries (files, the CUDA driver, JSON) are returned as
//    values (bundle/status.h), never thrown across a library boundary.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kiln {

/// 1-based line and column in a spec's text; {0, 0} means "no location" (IR built by API).
struct SourceLoc {
  uint32_t line = 0;
  uint32_t col = 0;
  bool known() const { return line != 0; }
  friend bool operator==(const SourceLoc&, const SourceLoc&) = default;
};

/// A mistake in the user's input. `what()` is the bare message; use render_diagnostic to
/// show it with its location.
class UserError : public std::runtime_error {
 public:
  UserError(SourceLoc loc, std::string message)
      : std::runtime_error(std::move(message)), loc_(loc) {}
  SourceLoc loc() const { return loc_; }

 private:
  SourceLoc loc_;
};

/// A bug in Kiln: an invariant that should have held did not.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message)
      : std::logic_error("internal error (bug): " + message) {}
};

/// "file:line:col: error: message\n<source line>\n<spaces>^\n". `text` is the whole file;
/// without a known location it is "file: error: message\n".
std::string render_diagnostic(std::string_view file, std::string_view text, SourceLoc loc,
                              std::string_view message);

/// Throws InternalError with the message when `cond` is false.
inline void internal_check(bool cond, const char* message) {
  if (!cond) throw InternalError(message);
}

}  // namespace kiln
