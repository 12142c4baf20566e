// Dropout's keep decisions, counter-based: element `index` of the mask with key `seed` is kept
// when the top 24 bits of splitmix64's output at step index + 1 (from state `seed`) reach
// `threshold` = ceil(p * 2^24), the integer form of "uniform [0, 1) >= p". Any element's
// decision is computed directly, on any thread, so masks do not depend on the thread count.
// The range kernels have an AVX-512, an AVX2 and a baseline loop on x86-64, a NEON and a baseline
// loop on aarch64, picked at run time on the calling thread (kernels/cpu_features.h: VectorIsa);
// the hash is integer arithmetic, so every loop gives the same decisions as dropout_kept.
#pragma once

#include <cstdint>

#include "core/rng.h"

namespace gpt {

struct DropoutKeys {
  uint64_t seed = 0;
  uint32_t threshold = 0;  // kept when the element's 24 hash bits are >= threshold
  float keep_scale = 1.0f;
};

// Keys for dropout probability p in [0, 1): threshold ceil(p * 2^24), scale 1 / (1 - p).
DropoutKeys dropout_keys(uint64_t seed, float p);

inline uint32_t dropout_hash_bits(uint64_t seed, uint64_t index) {
  return static_cast<uint32_t>(splitmix64_mix(seed + (index + 1) * kSplitmixIncrement) >> 40);
}
inline bool dropout_kept(const DropoutKeys& keys, uint64_t index) {
  return dropout_hash_bits(keys.seed, index) >= keys.threshold;
}

// out[j] = kept(first + j) ? in[j] * keep_scale : 0 for j < n; in == out allowed. Serial: callers
// parallelise over ranges.
void dropout_apply_range(const DropoutKeys& keys, uint64_t first, const float* in, float* out, int64_t n);
// acc[j] += d[j] * keep_scale where kept(first + j); acc[j] untouched where dropped.
void dropout_accumulate_range(const DropoutKeys& keys, uint64_t first, const float* d, float* acc, int64_t n);

}  // namespace gpt
