// Conversions between f32 and the 16-bit float formats, bit-exact with the GPU's
// cvt.rn.{f16,bf16}.f32 (round to nearest even, NaN stays NaN, overflow goes to infinity).
// Written by hand: the C++20 toolchain here has no std::bfloat16_t.
#pragma once

#include <cstdint>

namespace kiln {

uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);

}  // namespace kiln
