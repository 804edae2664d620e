// Reading JSON documents that users and tools write (bundle manifests, autotune caches) with
// errors that name the file and the JSON path of the bad field:
//   "cache.json: entries[1].key.gpu.sm_count: expected an integer in 1..2147483647, got 0".
// A reader throws Invalid (via fail) from deep inside; parse_document turns that, malformed
// JSON and anything else into one error Status. Never crashes on hostile input.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/status.h"

namespace kiln::json {

using Json = nlohmann::json;

/// What is wrong, and where ("" for the document itself).
struct Invalid {
  std::string path;
  std::string reason;
};

[[noreturn]] void fail(const std::string& path, std::string reason);
/// "a.b" and "a[3]" paths.
std::string key_path(const std::string& path, std::string_view key);
std::string index_path(const std::string& path, size_t i);
/// "an object", "a string", "an integer", ... for error messages.
const char* type_name(const Json& j);
/// An integer in lo..hi at `path`, else fail() saying which range and what was found.
int64_t read_integer(const Json& v, const std::string& path, int64_t lo, int64_t hi);

/// A JSON object being read at `path`; every accessor fails with the field's path.
class Obj {
 public:
  Obj(const Json& j, std::string path);
  const std::string& path() const { return path_; }
  std::string at(std::string_view key) const { return key_path(path_, key); }
  const Json* find(std::string_view key) const;
  const Json& get(std::string_view key, const char* expected) const;
  std::string str(std::string_view key) const;
  std::string nonempty_str(std::string_view key) const;
  bool boolean(std::string_view key) const;
  int64_t integer(std::string_view key, int64_t lo, int64_t hi) const;
  double nonnegative(std::string_view key) const;  // a finite number >= 0
  const Json& array(std::string_view key) const;
  std::vector<std::string> strings(std::string_view key) const;  // an array of strings

 private:
  const Json& j_;
  std::string path_;
};

/// Parses `text` and runs `read(json)`; any failure becomes "ORIGIN: PATH: reason",
/// "ORIGIN: invalid JSON: ..." or "ORIGIN: cannot read WHAT: ...".
template <class T, class Read>
Result<T> parse_document(std::string_view text, std::string_view origin, std::string_view what,
                         Read&& read) {
  try {
    Json j = Json::parse(text.begin(), text.end());
    return read(j);
  } catch (const Invalid& e) {
    if (e.path.empty()) return Status::error(fmt::format("{}: {}", origin, e.reason));
    return Status::error(fmt::format("{}: {}: {}", origin, e.path, e.reason));
  } catch (const Json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    std::string_view msg = e.what();
    if (size_t p = msg.find("] "); p != std::string_view::npos) msg.remove_prefix(p + 2);
    return Status::error(fmt::format("{}: invalid JSON: {}", origin, msg));
  } catch (const std::exception& e) {
    return Status::error(fmt::format("{}: cannot read {}: {}", origin, what, e.what()));
  }
}

}  // namespace kiln::json
