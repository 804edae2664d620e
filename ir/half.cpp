// f32 <-> f16/bf16 conversions by bit manipulation, round to nearest even, matching the GPU's
// cvt.rn instructions: overflow rounds to infinity, subnormals are kept (no flush to zero), and
// every NaN becomes the canonical NaN 0x7fff.
#include "ir/half.h"

#include <cstring>

namespace kiln {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

constexpr uint16_t kCanonicalNaN = 0x7fff;

}  // namespace

uint16_t f32_to_bf16(float f) {
  uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return kCanonicalNaN;
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; a carry out of the
  // mantissa bumps the exponent, and the largest finite values round up to infinity.
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float bf16_to_f32(uint16_t h) {
  return float_of(static_cast<uint32_t>(h) << 16);
}

uint16_t f32_to_f16(float f) {
  uint32_t u = bits_of(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return kCanonicalNaN;
  if (u >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (incl. inf) rounds to infinity
  if (u >= 0x38800000u) {                       // >= 2^-14: a normal f16
    uint32_t h = ((((u >> 23) - 127 + 15) << 10) | ((u & 0x7fffffu) >> 13));
    uint32_t rest = u & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry may reach inf: fine
    return static_cast<uint16_t>(sign | h);
  }
  if (u < 0x33000000u) return sign;  // below 2^-25: rounds to zero (2^-25 itself ties to 0)
  // A subnormal f16: value = mant * 2^(e - 150) = h * 2^-24, so h = mant >> (126 - e).
  uint32_t e = u >> 23;
  uint32_t mant = (u & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126 - e;  // 14..24
  uint32_t h = mant >> shift;
  uint32_t rest = mant & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;  // may carry into the smallest normal
  return static_cast<uint16_t>(sign | h);
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return float_of(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return float_of(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return float_of(sign);
  uint32_t e = 113;  // normalize the subnormal mant * 2^-24
  while (!(mant & 0x400u)) {
    mant <<= 1;
    --e;
  }
  return float_of(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

}  // namespace kiln
