// Element types of tensors and expressions.
//
// Storage types are what tensors hold in memory: f32, f16, bf16, i32, i64, u32. Expressions
// compute in a narrower set, the compute types: f32, i32, i64, u32 and bool. A load of an f16
// or bf16 tensor widens to f32 exactly; a store to one rounds to nearest even. bool only
// arises from comparisons and logical operators and is never stored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

// New types go last: the numeric values are not part of any file format, but keeping them
// stable keeps tables indexed by them simple.
enum class DType : uint8_t { f32, f16, bf16, i32, boolean, i64, u32 };

/// The spelling in the spec language: "f32", "f16", "bf16", "i32", "bool", "i64", "u32".
std::string_view to_string(DType t);
/// Inverse of to_string; nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view s);
/// Bytes per element in memory (bool: 1, never stored by kernels).
size_t size_of(DType t);
bool is_float(DType t);    // f32, f16, bf16
bool is_integer(DType t);  // i32, i64, u32
/// True for the types a tensor may have (all but bool).
bool is_storage_type(DType t);
/// The type an element is computed in once loaded: f16 and bf16 widen to f32.
DType compute_type(DType t);
/// The unit roundoff of a 16-bit float (bf16 2^-8, f16 2^-11: the largest relative error of a
/// rounding to it); 0 for every other type.
double narrow_roundoff(DType t);

/// tf32 as tensor cores read an f32 operand: sign, exponent and the top 10 significand bits (the
/// rest cut, toward zero, so a relative error below kTf32Roundoff); `tf32(x)` in the language.
constexpr uint32_t kTf32Mask = 0xFFFFE000u;
constexpr double kTf32Roundoff = 0x1p-10;
/// x's bits with the 13 low ones zeroed: a quiet NaN stays a NaN (its top significand bit is
/// kept); a NaN whose payload lies only in the cut bits becomes an infinity, as the tensor
/// cores read it.
float to_tf32(float x);

}  // namespace kiln
