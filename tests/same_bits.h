// Bit-for-bit equality of float results, for tests that prove two code paths compute the same
// thing. It compares the bits: -0 and +0 differ and a NaN matches the same NaN, where == on
// floats says the opposite. A failure names the first element that differs and both bit patterns.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace gpt::testing {

inline ::testing::AssertionResult same_bits(const float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const uint32_t x = std::bit_cast<uint32_t>(a[i]), y = std::bit_cast<uint32_t>(b[i]);
    if (x != y) {
      char message[160];
      std::snprintf(message, sizeof message, "element %zu of %zu differs: %.9g (0x%08x) against %.9g (0x%08x)", i, n,
                    a[i], static_cast<unsigned>(x), b[i], static_cast<unsigned>(y));
      return ::testing::AssertionFailure() << message;
    }
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
  return same_bits(a.data(), b.data(), a.size());
}

inline ::testing::AssertionResult same_bits(float a, float b) { return same_bits(&a, &b, 1); }

}  // namespace gpt::testing
