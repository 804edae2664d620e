// Shapes (see shape.h).
#include "ir/shape.h"

namespace kiln {

std::string Dim::to_string() const {
  return is_fixed() ? std::to_string(value()) : name();
}

}  // namespace kiln
