// bfloat16: the upper 16 bits of a float32 (8 exponent bits, 7 mantissa bits), and the one
// arithmetic every bfloat16 kernel path reproduces bit for bit.
//
// Rounding (float32 -> bfloat16) is our own, the same on every path: round to nearest even;
// zeros and subnormals become a zero of the same sign (as VCVTNE2PS2BF16 does); infinities
// stay; a NaN stays a quiet NaN. So a rounded input is never subnormal.
//
// A product's sum: each C element is acc <- fma(a[k], b[k], acc) for k in order, in float32 with
// round to nearest even, a subnormal accumulator read as zero and a subnormal result flushed to
// zero. A product of two bfloat16 values is exact in float32, so this is what AVX512_BF16's
// VDPBF16PS computes for a pair when the pair's first k sits in its odd (high) half: the
// instruction adds the odd element's product first, then the even one's, each as a fused
// multiply-add with subnormal inputs read as zero and results flushed (Intel SDM; checked against
// the instruction on Sapphire Rapids over 64 million random pairs, normal and subnormal ranges).
// It is also what a float32 FMA computes on rounded inputs with MXCSR's flush-to-zero and
// denormals-are-zero bits set, which is how CPUs without that instruction, or with a slow one,
// run it.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace gpt {

// The float32 bits of x rounded to bfloat16 (the low 16 bits zero). The cases are selects, not
// branches, so that packing loops vectorise.
inline uint32_t rounded_bfloat16_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const uint32_t magnitude = bits & 0x7fffffffu;
  // Normal numbers and infinities: add half an ulp (ties to the even result) and truncate.
  // Infinity's low bits are zero, so it stays infinity; the largest floats round up to it.
  const uint32_t nearest = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  const uint32_t quiet_nan = (bits | 0x00400000u) & 0xffff0000u;
  const uint32_t signed_zero = bits & 0x80000000u;  // for zeros and subnormals
  const uint32_t finite = magnitude < 0x00800000u ? signed_zero : nearest;
  return magnitude > 0x7f800000u ? quiet_nan : finite;
}

inline uint16_t round_to_bfloat16(float x) { return static_cast<uint16_t>(rounded_bfloat16_bits(x) >> 16); }

inline float bfloat16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// x rounded to bfloat16, as a float32.
inline float round_through_bfloat16(float x) {
  const uint32_t bits = rounded_bfloat16_bits(x);
  float y;
  std::memcpy(&y, &bits, sizeof y);
  return y;
}

// Two consecutive k values of a row or column as VDPBF16PS reads them, `first` (k) in the odd
// half so that the instruction adds it first.
inline uint32_t bfloat16_pair(float first, float second) {
  return (rounded_bfloat16_bits(second) >> 16) | rounded_bfloat16_bits(first);
}

// A subnormal float32 becomes a zero of the same sign (the flush-to-zero rule).
inline float flush_subnormal(float x) { return std::fabs(x) < FLT_MIN ? std::copysign(0.0f, x) : x; }

// One step of the sum for bfloat16 values a and b and an accumulator that is already flushed
// (every value this returns is). x86's flush-to-zero calls a result tiny when, rounded to float's
// 24 bits with an unbounded exponent, it is below FLT_MIN; std::fma rounds onto the subnormal grid
// instead. They differ only for exact results in [FLT_MIN - 2^-150, FLT_MIN - 2^-151), which fma
// carries up to FLT_MIN and x86 flushes: there the exact value decides. a b has 16 significant
// bits, so its sum with acc is exact in double wherever that boundary is in question.
inline float bfloat16_multiply_add(float a, float b, float acc) {
  const float r = std::fma(a, b, acc);
  if (std::fabs(r) == FLT_MIN && std::fabs(static_cast<double>(a) * b + acc) < FLT_MIN - 0x1p-151)
    return std::copysign(0.0f, r);
  return flush_subnormal(r);
}

}  // namespace gpt
