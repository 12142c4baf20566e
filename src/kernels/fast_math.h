// Branch-free float exp, erf and tanh that compilers vectorise (libm's are scalar calls), for the
// elementwise kernels where they dominate (GELU). Accuracy, measured against double-precision
// libm over the ranges used: exp within 2.5e-7 relative on [-87, 88]; erf within 4e-7 absolute;
// tanh within 4e-7 relative.
// Same inputs give the same outputs on every code path (no FMA contraction, fixed operation order).
#pragma once

#include <cstdint>
#include <cstring>

namespace gpt {

inline float clamp_float(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

inline float fast_exp(float x) {
  x = clamp_float(x, -87.0f, 88.0f);
  // Round x / ln 2 to the nearest integer with the 1.5 * 2^23 trick (exact for |v| < 2^22).
  const float shifter = 12582912.0f;
  const float n = (x * 1.44269504088896341f + shifter) - shifter;
  // r = x - n ln 2, with ln 2 split in two so the product is exact.
  float r = x - n * 0.693145751953125f;
  r = r - n * 1.428606765330187045e-06f;
  float p = 1.0f / 720.0f;  // Taylor series of exp(r) on [-ln2/2, ln2/2], Horner form
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t bits;
  std::memcpy(&bits, &p, sizeof bits);
  bits += static_cast<int32_t>(n) * (1 << 23);  // times 2^n through the exponent field
  std::memcpy(&p, &bits, sizeof bits);
  return p;
}

// A rational approximation x P(x^2) / Q(x^2) on [-4, 4] (erf is +-1 in float beyond).
inline float fast_erf(float x) {
  x = clamp_float(x, -4.0f, 4.0f);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  p = p * x;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return p / q;
}

// Eigen's rational approximation x P(x^2) / Q(x^2) on [-7.9, 7.9] (tanh is +-1 in float beyond),
// and x itself for |x| < 4e-4, where x is tanh(x) to float precision.
inline float fast_tanh(float x) {
  const float c = clamp_float(x, -7.90531110763549805f, 7.90531110763549805f);
  const float x2 = c * c;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * c;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return (x < 4e-4f && x > -4e-4f) ? x : p / q;
}

}  // namespace gpt

// Elementwise loops get AVX-512, AVX2 and baseline clones chosen at load time; without FMA
// contraction all clones compute the same bits. The loader picks one clone for the process, so
// tests can run only that one: kernels whose paths tests compare with each other are compiled per
// VectorIsa instead (kernels/cpu_features.h).
#define GPT_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
