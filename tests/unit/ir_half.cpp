// Tests of the f32 <-> f16/bf16 conversions: known bit patterns, round-to-nearest-even ties,
// subnormals, overflow, NaN, exhaustive round trips, and (where the compiler has _Float16) a
// cross-check against its conversion on many random floats.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "ir/half.h"

using namespace kiln;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

TEST_CASE("f16: known values", "[ir]") {
  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(-2.5f) == 0xc100);
  CHECK(f32_to_f16(0.0f) == 0x0000);
  CHECK(f32_to_f16(-0.0f) == 0x8000);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);
  CHECK(f32_to_f16(65519.996f) == 0x7bff);  // just below the tie: stays finite
  CHECK(f32_to_f16(65520.0f) == 0x7c00);    // the tie with 65536 rounds to even: infinity
  CHECK(f32_to_f16(1e9f) == 0x7c00);
  CHECK(f32_to_f16(-INFINITY) == 0xfc00);
  CHECK(f32_to_f16(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
  CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);  // half of it: tie to even (zero)
  CHECK(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);     // 1.5 ulp: tie to even (2)
  CHECK(f32_to_f16(std::ldexp(1023.0f, -24)) == 0x03ff);  // largest subnormal
  CHECK(f32_to_f16(std::ldexp(2047.0f, -25)) == 0x0400);  // rounds up into the normals
  CHECK(f32_to_f16(-std::ldexp(1.0f, -24)) == 0x8001);
  // Ties between normal neighbours: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(f32_to_f16(1.0f + std::ldexp(3.0f, -11)) == 0x3c02);
  CHECK(f32_to_f16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)) == 0x3c01);
  uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7c00) == 0x7c00);
  CHECK((nan & 0x03ff) != 0);
  CHECK(std::isnan(f16_to_f32(f32_to_f16(from_bits(0xff800001u)))));  // signalling NaN

  CHECK(f16_to_f32(0x3c00) == 1.0f);
  CHECK(f16_to_f32(0xc100) == -2.5f);
  CHECK(f16_to_f32(0x7bff) == 65504.0f);
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(f16_to_f32(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(f16_to_f32(0x7c00) == INFINITY);
  CHECK(f16_to_f32(0xfc00) == -INFINITY);
  CHECK(std::isnan(f16_to_f32(0x7e00)));
  CHECK(to_bits(f16_to_f32(0x8000)) == 0x80000000u);
}

TEST_CASE("bf16: known values", "[ir]") {
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(-2.5f) == 0xc020);
  CHECK(f32_to_bf16(-0.0f) == 0x8000);
  CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);  // tie: to even
  CHECK(f32_to_bf16(1.0f + std::ldexp(3.0f, -8)) == 0x3f82);  // tie: to even (up)
  CHECK(f32_to_bf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)) == 0x3f81);
  CHECK(f32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds to infinity
  CHECK(f32_to_bf16(INFINITY) == 0x7f80);
  CHECK(f32_to_bf16(-INFINITY) == 0xff80);
  CHECK(f32_to_bf16(from_bits(0x00000001u)) == 0x0000);  // f32 subnormals are kept, rounded
  CHECK(f32_to_bf16(from_bits(0x00018000u)) == 0x0002);  // subnormal tie: to even
  CHECK(f32_to_bf16(from_bits(0x00010000u)) == 0x0001);  // smallest bf16 subnormal
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(from_bits(0x7f800001u)))));  // NaN never becomes inf
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  CHECK(bf16_to_f32(0x0001) == from_bits(0x00010000u));
  CHECK(bf16_to_f32(0x7f80) == INFINITY);
}

TEST_CASE("every f16 and bf16 value survives a round trip through f32", "[ir]") {
  int bad_f16 = 0, bad_bf16 = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    auto x = static_cast<uint16_t>(h);
    bool f16_nan = (h & 0x7c00) == 0x7c00 && (h & 0x03ff);
    bool bf16_nan = (h & 0x7f80) == 0x7f80 && (h & 0x007f);
    if (f16_nan ? !std::isnan(f16_to_f32(x)) : f32_to_f16(f16_to_f32(x)) != x) ++bad_f16;
    if (bf16_nan ? !std::isnan(bf16_to_f32(x)) : f32_to_bf16(bf16_to_f32(x)) != x) ++bad_bf16;
  }
  CHECK(bad_f16 == 0);
  CHECK(bad_bf16 == 0);
}

TEST_CASE("bf16 rounding agrees with exact nearest-even arithmetic on random floats", "[ir]") {
  std::mt19937 rng(7);
  int bad = 0;
  for (int n = 0; n < 200000; ++n) {
    float f = from_bits(static_cast<uint32_t>(rng()));
    if (std::isnan(f) || std::isinf(f)) continue;
    uint16_t h = f32_to_bf16(f);
    // The two bf16 neighbours of f; the result must be the nearer, ties to the even one.
    uint16_t lo = static_cast<uint16_t>(to_bits(f) >> 16), hi = static_cast<uint16_t>(lo + 1);
    double dl = std::fabs(double(f) - double(bf16_to_f32(lo)));
    // Past the largest finite value, rounding continues as if the exponent were unbounded.
    double vh = (hi & 0x7fff) == 0x7f80 ? std::copysign(std::ldexp(1.0, 128), f) : bf16_to_f32(hi);
    double dh = std::fabs(double(f) - vh);
    uint16_t want = dl < dh ? lo : dh < dl ? hi : (lo & 1 ? hi : lo);
    if (h != want) ++bad;
  }
  CHECK(bad == 0);
}

#ifdef __FLT16_MANT_DIG__
TEST_CASE("f16 rounding agrees with the compiler's _Float16 on random floats", "[ir]") {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> exponent(-30, 18);
  int bad = 0;
  for (int n = 0; n < 300000; ++n) {
    // Mostly floats in and around the f16 range, including its subnormals.
    float f = n % 4 == 0 ? from_bits(static_cast<uint32_t>(rng()))
                         : std::ldexp(static_cast<float>(rng() % (1u << 24)) / (1u << 24) + 1.0f,
                                      exponent(rng)) *
                               (rng() & 1 ? 1.0f : -1.0f);
    if (std::isnan(f)) continue;
    _Float16 ref = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &ref, 2);
    if (f32_to_f16(f) != want) ++bad;
    uint16_t h = static_cast<uint16_t>(rng());
    if ((h & 0x7c00) != 0x7c00 && f16_to_f32(h) != static_cast<float>(std::bit_cast<_Float16>(h))) {
      ++bad;
    }
  }
  CHECK(bad == 0);
}
#endif
