// See shape_record.h.
#include "bundle/shape_record.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "bundle/json_reader.h"

namespace kiln::shapes {

namespace {

// Names are identifiers and hashes hex digits; anything else is escaped all the same.
void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  out += '"';
}

Recorded read_line(const json::Json& j) {
  if (!j.is_object())
    json::fail("", fmt::format("expected a JSON object, got {}", json::type_name(j)));
  json::Obj o(j, "");
  Recorded r;
  r.kernel = o.nonempty_str("kernel");
  r.hash = o.nonempty_str("hash");
  const json::Json& shape = o.get("shape", "an object");
  if (!shape.is_object()) {
    json::fail("shape", fmt::format("expected an object, got {}", json::type_name(shape)));
  }
  for (const auto& [name, v] : shape.items()) {
    r.shape[name] = json::read_integer(v, json::key_path("shape", name), 1,
                                       std::numeric_limits<int64_t>::max());
  }
  return r;
}

}  // namespace

std::string record_line(std::string_view kernel, std::string_view hash,
                        std::span<const std::string> symbols, std::span<const int64_t> values) {
  std::string out = "{\"kernel\":";
  append_json_string(out, kernel);
  out += ",\"hash\":";
  append_json_string(out, hash);
  out += ",\"shape\":{";
  for (size_t i = 0; i < symbols.size() && i < values.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, symbols[i]);
    out += fmt::format(":{}", values[i]);
  }
  out += "}}\n";
  return out;
}

Result<std::vector<Recorded>> parse(std::string_view text, std::string_view origin) {
  std::vector<Recorded> out;
  int line = 0;
  while (!text.empty()) {
    ++line;
    size_t end = text.find('\n');
    std::string_view l = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (l.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Result<Recorded> r = json::parse_document<Recorded>(l, fmt::format("{}:{}", origin, line),
                                                        "a recorded shape", read_line);
    if (!r.ok()) return r.status();
    r->line = line;
    out.push_back(std::move(*r));
  }
  return out;
}

Result<std::vector<Recorded>> read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::error(
        fmt::format("{}: cannot open the recorded shapes: {}", path, std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::error(fmt::format("{}: read error", path));
  return parse(text.str(), path);
}

}  // namespace kiln::shapes
