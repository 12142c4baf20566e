// Sums and maxima of a row in 16 interleaved lanes (element j goes to lane j % 16), the lanes
// then combined in a fixed tree. Without -ffast-math a compiler must add a plain running sum in
// index order, one dependent add after another; 16 independent lanes vectorise (one AVX-512 or
// two AVX2 registers) and the order, hence every bit, is the same on every ISA and thread count.
// Header-only so that each GPT_VECTOR_CLONES caller inlines it for its own target.
#pragma once

#include <cstdint>

namespace gpt {

constexpr int kSumLanes = 16;

inline float combine_lanes(float* lanes) {
  for (int width = kSumLanes / 2; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lanes[l] = lanes[l] + lanes[l + width];
  return lanes[0];
}

// sum over j < n of term(j).
template <typename Term>
inline float lane_sum(int64_t n, Term term) {
  float lanes[kSumLanes] = {};
  int64_t j = 0;
  for (; j + kSumLanes <= n; j += kSumLanes)
    for (int l = 0; l < kSumLanes; ++l) lanes[l] += term(j + l);
  for (int l = 0; j + l < n; ++l) lanes[l] += term(j + l);
  return combine_lanes(lanes);
}

// max over j < n of term(j) (n >= 1).
template <typename Term>
inline float lane_max(int64_t n, Term term) {
  float lanes[kSumLanes];
  for (int l = 0; l < kSumLanes; ++l) lanes[l] = term(0);
  int64_t j = 0;
  for (; j + kSumLanes <= n; j += kSumLanes)
    for (int l = 0; l < kSumLanes; ++l) {
      const float x = term(j + l);
      lanes[l] = x > lanes[l] ? x : lanes[l];
    }
  for (int l = 0; j + l < n; ++l) {
    const float x = term(j + l);
    lanes[l] = x > lanes[l] ? x : lanes[l];
  }
  for (int width = kSumLanes / 2; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lanes[l] = lanes[l + width] > lanes[l] ? lanes[l + width] : lanes[l];
  return lanes[0];
}

}  // namespace gpt
