// The recorded-shapes file: what an application launched, written by the runtime under
// KILN_RECORD_SHAPES=FILE (runtime/shape_recorder.h) and read by `kiln tune --shapes-from
// FILE`. One JSON object per line (JSON lines), each a (kernel, symbol values) pair:
//
//   {"kernel":"softmax","hash":"fnv1a:0123456789abcdef","shape":{"M":4096,"N":1000}}
//
// `kernel` is the kernel's name, `hash` the manifest's KernelInfo::hash (a kernel edited since
// is told apart), `shape` every symbol of the kernel with its value (>= 1), in the manifest's
// symbol order. Each process writes a pair once, in one write() to a file opened O_APPEND, so
// lines of concurrent threads and processes never interleave; the file may hold one pair
// several times (once per process), and a reader deduplicates. Empty lines are allowed.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/status.h"

namespace kiln::shapes {

struct Recorded {
  std::string kernel;
  std::string hash;
  std::map<std::string, int64_t> shape;
  int line = 0;  // 1-based line of the file it was read from
};

/// One line of the file, newline included. `symbols` and `values` have the same length.
std::string record_line(std::string_view kernel, std::string_view hash,
                        std::span<const std::string> symbols, std::span<const int64_t> values);

/// Every line of `text`, in order (duplicates kept). A malformed line is an error naming
/// "ORIGIN:LINE" and what is wrong.
Result<std::vector<Recorded>> parse(std::string_view text, std::string_view origin);

/// parse() of the file at `path`, which must exist.
Result<std::vector<Recorded>> read(const std::string& path);

}  // namespace kiln::shapes
