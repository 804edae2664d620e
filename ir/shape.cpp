// Shapes (see shape.h).
#include "ir/shape.h"

namespace kiln {

std::string Dim::to_string() const {
  return is_fixed() ? std::to_string(value()) : name();
}

std::string dims_text(const std::vector<Dim>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].to_string();
  return s + "]";
}

std::string product_text(const std::vector<Dim>& dims) {
  if (dims.empty()) return "1";
  std::string out;
  for (const Dim& d : dims) out += (out.empty() ? "" : "*") + d.to_string();
  return out;
}

}  // namespace kiln
