// Element types: spellings, sizes and the storage -> compute type mapping (see dtype.h).
#include "ir/dtype.h"

#include <bit>

namespace kiln {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i32:
      return "i32";
    case DType::boolean:
      return "bool";
    case DType::i64:
      return "i64";
    case DType::u32:
      return "u32";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t :
       {DType::f32, DType::f16, DType::bf16, DType::i32, DType::boolean, DType::i64, DType::u32}) {
    if (to_string(t) == s) return t;
  }
  return std::nullopt;
}

size_t size_of(DType t) {
  switch (t) {
    case DType::f32:
    case DType::i32:
    case DType::u32:
      return 4;
    case DType::i64:
      return 8;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::boolean:
      return 1;
  }
  return 0;
}

bool is_float(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16;
}

bool is_integer(DType t) {
  return t == DType::i32 || t == DType::i64 || t == DType::u32;
}

bool is_storage_type(DType t) {
  return t != DType::boolean;
}

DType compute_type(DType t) {
  return t == DType::f16 || t == DType::bf16 ? DType::f32 : t;
}

float to_tf32(float x) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & kTf32Mask);
}

double narrow_roundoff(DType t) {
  return t == DType::bf16 ? 0x1p-8 : t == DType::f16 ? 0x1p-11 : 0;
}

}  // namespace kiln
