//===- FloatRounding.h - exact rounding to narrow float formats -*- C++ -*-===//
//
// Rounds doubles to f32, bf16 and f16 to nearest, ties to even, as IEEE 754
// and the GPU's conversion instructions do: overflow goes to infinity, f16
// subnormals are kept, NaN stays NaN. Also encodes and decodes the 16-bit
// storage formats for host buffers.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_INTERPRETER_FLOATROUNDING_H
#define KFUSE_INTERPRETER_FLOATROUNDING_H

#include <cstdint>

namespace kfuse {

/// `value` rounded to the nearest f32 (ties to even), as a double.
double roundToF32(double value);
/// `value` rounded to the nearest bf16 (ties to even), as a double.
double roundToBF16(double value);
/// `value` rounded to the nearest f16 (ties to even, subnormals kept).
double roundToF16(double value);

/// The bf16 bit pattern of `value` rounded to bf16 (NaN: quiet 0x7fc0).
uint16_t toBF16Bits(double value);
double fromBF16Bits(uint16_t bits);
/// The f16 bit pattern of `value` rounded to f16 (NaN: quiet 0x7e00).
uint16_t toF16Bits(double value);
double fromF16Bits(uint16_t bits);

} // namespace kfuse

#endif // KFUSE_INTERPRETER_FLOATROUNDING_H
