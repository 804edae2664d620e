// Shapes: one Dim per dimension, a fixed extent or a symbol bound at launch. Part of the IR
// core (kiln_ir_core), which the bundle and the runtime share with the rest of the IR.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace kiln {

/// One dimension of a shape: a fixed extent (> 0) or a symbol bound at launch.
struct Dim {
  std::variant<int64_t, std::string> v;

  static Dim fixed(int64_t n) { return Dim{n}; }
  static Dim symbol(std::string s) { return Dim{std::move(s)}; }
  bool is_fixed() const { return std::holds_alternative<int64_t>(v); }
  int64_t value() const { return std::get<int64_t>(v); }
  const std::string& name() const { return std::get<std::string>(v); }
  std::string to_string() const;  // "128" or "N"
  friend bool operator==(const Dim&, const Dim&) = default;
};

/// "[M, 128]"
std::string dims_text(const std::vector<Dim>& dims);

/// "H*W": the product of `dims` ("N" for one dimension, "1" for none).
std::string product_text(const std::vector<Dim>& dims);

}  // namespace kiln
