//===- FloatRounding.cpp - exact rounding to narrow float formats --------===//

#include "interpreter/FloatRounding.h"

#include <cmath>
#include <cstring>

namespace kfuse {

namespace {
/// A binary floating-point format: `precision` significand bits (with the
/// implicit one), normal exponents in [minExponent, maxExponent].
struct FloatFormat {
  int precision;
  int minExponent;
  int maxExponent;
};
constexpr FloatFormat kBF16{8, -126, 127};
constexpr FloatFormat kF16{11, -14, 15};
} // namespace

/// Rounds through integer rounding of the scaled significand: scaling by a
/// power of two is exact in double for every value these formats reach, and
/// std::nearbyint rounds half to even in the default rounding mode. Clamping
/// the exponent at the format's minimum gives its subnormals one fixed
/// quantum, as IEEE 754 gradual underflow does.
static double roundToFormat(double value, FloatFormat format) {
  if (!std::isfinite(value) || value == 0.0)
    return value;
  int exponent = std::ilogb(value);
  if (exponent < format.minExponent)
    exponent = format.minExponent;
  int quantumExponent = exponent - (format.precision - 1);
  double rounded = std::ldexp(
      std::nearbyint(std::ldexp(value, -quantumExponent)), quantumExponent);
  double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, 1 - format.precision),
                                format.maxExponent);
  if (std::fabs(rounded) > maxFinite)
    return std::copysign(INFINITY, value);
  return rounded;
}

double roundToF32(double value) {
  // The C++ double-to-float conversion rounds to nearest even.
  return static_cast<double>(static_cast<float>(value));
}

double roundToBF16(double value) { return roundToFormat(value, kBF16); }

double roundToF16(double value) { return roundToFormat(value, kF16); }

uint16_t toBF16Bits(double value) {
  if (std::isnan(value))
    return std::signbit(value) ? 0xffc0 : 0x7fc0;
  // A bf16 value is an f32 whose low 16 bits are zero.
  float asFloat = static_cast<float>(roundToBF16(value));
  uint32_t bits;
  std::memcpy(&bits, &asFloat, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);
}

double fromBF16Bits(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float asFloat;
  std::memcpy(&asFloat, &wide, sizeof(asFloat));
  return asFloat;
}

uint16_t toF16Bits(double value) {
  uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  if (std::isnan(value))
    return sign | 0x7e00;
  double rounded = std::fabs(roundToF16(value));
  if (std::isinf(rounded))
    return sign | 0x7c00;
  if (rounded < std::ldexp(1.0, kF16.minExponent)) // zero or subnormal
    return sign | static_cast<uint16_t>(std::ldexp(rounded, 24));
  int exponent = std::ilogb(rounded);
  auto mantissa =
      static_cast<uint16_t>(std::ldexp(rounded, 10 - exponent) - 1024.0);
  return sign | static_cast<uint16_t>((exponent + 15) << 10) | mantissa;
}

double fromF16Bits(uint16_t bits) {
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  int exponentBits = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  if (exponentBits == 0x1f)
    return mantissa ? std::copysign(NAN, sign) : sign * INFINITY;
  if (exponentBits == 0)
    return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponentBits - 25);
}

} // namespace kfuse
