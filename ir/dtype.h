// Element types of tensors and expressions.
//
// Storage types are what tensors hold in memory: f32, f16, bf16, i32. Expressions compute
// in a narrower set, the compute types: f32, i32 and bool. A load of an f16 or bf16 tensor
// widens to f32 exactly; a store to one rounds to nearest even. bool only arises from
// comparisons and is never stored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

enum class DType : uint8_t { f32, f16, bf16, i32, boolean };

/// The spelling in the spec language: "f32", "f16", "bf16", "i32", "bool".
std::string_view to_string(DType t);
/// Inverse of to_string; nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view s);
/// Bytes per element in memory (bool: 1, never stored by kernels).
size_t size_of(DType t);
bool is_float(DType t);  // f32, f16, bf16
/// True for the types a tensor may have (all but bool).
bool is_storage_type(DType t);
/// The type an element is computed in once loaded: f16 and bf16 widen to f32.
DType compute_type(DType t);

}  // namespace kiln
