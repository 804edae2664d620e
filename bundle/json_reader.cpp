// See json_reader.h.
#include "bundle/json_reader.h"

#include <cmath>
#include <limits>

namespace kiln::json {

void fail(const std::string& path, std::string reason) {
  throw Invalid{path, std::move(reason)};
}

std::string key_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string index_path(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

const char* type_name(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

int64_t read_integer(const Json& v, const std::string& path, int64_t lo, int64_t hi) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::string range = "an integer";
  if (hi < kMax) {
    range = fmt::format("an integer in {}..{}", lo, hi);
  } else if (lo > std::numeric_limits<int64_t>::min()) {
    range = fmt::format("an integer >= {}", lo);
  }
  if (!v.is_number_integer()) fail(path, fmt::format("expected {}, got {}", range, type_name(v)));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMax)) {
    fail(path, fmt::format("expected {}", range));
  }
  int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) fail(path, fmt::format("expected {}, got {}", range, x));
  return x;
}

Obj::Obj(const Json& j, std::string path) : j_(j), path_(std::move(path)) {
  if (!j.is_object()) fail(path_, fmt::format("expected an object, got {}", type_name(j)));
}

const Json* Obj::find(std::string_view key) const {
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

const Json& Obj::get(std::string_view key, const char* expected) const {
  const Json* v = find(key);
  if (v == nullptr) fail(at(key), fmt::format("missing (expected {})", expected));
  return *v;
}

std::string Obj::str(std::string_view key) const {
  const Json& v = get(key, "a string");
  if (!v.is_string()) fail(at(key), fmt::format("expected a string, got {}", type_name(v)));
  return v.get<std::string>();
}

std::string Obj::nonempty_str(std::string_view key) const {
  std::string s = str(key);
  if (s.empty()) fail(at(key), "expected a non-empty string");
  return s;
}

bool Obj::boolean(std::string_view key) const {
  const Json& v = get(key, "a boolean");
  if (!v.is_boolean()) fail(at(key), fmt::format("expected a boolean, got {}", type_name(v)));
  return v.get<bool>();
}

int64_t Obj::integer(std::string_view key, int64_t lo, int64_t hi) const {
  return read_integer(get(key, "an integer"), at(key), lo, hi);
}

double Obj::nonnegative(std::string_view key) const {
  const Json& v = get(key, "a number >= 0");
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
    fail(at(key), "expected a number >= 0");
  }
  return v.get<double>();
}

const Json& Obj::array(std::string_view key) const {
  const Json& v = get(key, "an array");
  if (!v.is_array()) fail(at(key), fmt::format("expected an array, got {}", type_name(v)));
  return v;
}

std::vector<std::string> Obj::strings(std::string_view key) const {
  const Json& a = array(key);
  std::vector<std::string> out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string()) {
      fail(index_path(at(key), i), fmt::format("expected a string, got {}", type_name(a[i])));
    }
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

}  // namespace kiln::json
