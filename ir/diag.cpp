// Rendering of user diagnostics, clang style: the location, the message, the offending source
// line and a caret under the column. Tabs before the column are copied so the caret lines up.
#include "ir/diag.h"

#include <fmt/format.h>

namespace kiln {

std::string render_diagnostic(std::string_view file, std::string_view text, SourceLoc loc,
                              std::string_view message) {
  if (!loc.known()) return fmt::format("{}: error: {}\n", file, message);
  std::string out = fmt::format("{}:{}:{}: error: {}\n", file, loc.line, loc.col, message);
  // Find the start of line `loc.line`.
  size_t begin = 0;
  for (uint32_t line = 1; line < loc.line; ++line) {
    size_t nl = text.find('\n', begin);
    if (nl == std::string_view::npos) return out;  // the location is past the text
    begin = nl + 1;
  }
  size_t end = text.find('\n', begin);
  std::string_view src = text.substr(begin, end == std::string_view::npos ? end : end - begin);
  if (!src.empty() && src.back() == '\r') src.remove_suffix(1);
  out += src;
  out += '\n';
  for (size_t i = 0; i + 1 < loc.col; ++i) out += i < src.size() && src[i] == '\t' ? '\t' : ' ';
  out += "^\n";
  return out;
}

}  // namespace kiln
