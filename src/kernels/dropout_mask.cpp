#include "kernels/dropout_mask.h"

#include <cmath>

#include "kernels/cpu_features.h"

#if GPT_X86_64
// GCC 12's AVX-512 shift intrinsics pass an "undefined" register built from itself, which its
// -Wmaybe-uninitialized reports once they are inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/avx512_lanes.h"
#elif GPT_AARCH64
#include <arm_neon.h>
#endif

namespace gpt {

namespace {

// The loops, inlined into one function per instruction set. AVX-512DQ has the 64-bit multiplies
// the hash needs (vpmullq); AVX2 and NEON build them from 32-bit ones.
template <bool Accumulate>
GPT_ALWAYS_INLINE void dropout_loop(const DropoutKeys& keys, uint64_t first, const float* in, float* out, int64_t n) {
  const uint64_t seed = keys.seed;
  const uint32_t threshold = keys.threshold;
  const float scale = keys.keep_scale;
  for (int64_t j = 0; j < n; ++j) {
    const bool kept = dropout_hash_bits(seed, first + static_cast<uint64_t>(j)) >= threshold;
    if constexpr (Accumulate)
      out[j] = kept ? out[j] + in[j] * scale : out[j];
    else
      out[j] = kept ? in[j] * scale : 0.0f;
  }
}

using DropoutLoop = void (*)(const DropoutKeys&, uint64_t, const float*, float*, int64_t);

#if GPT_X86_64
// splitmix64's output, top 24 bits, for eight states.
GPT_TARGET_AVX512 inline __m512i hash_bits(__m512i z) {
  const __m512i mix1 = _mm512_set1_epi64(static_cast<int64_t>(0xBF58476D1CE4E5B9ull));
  const __m512i mix2 = _mm512_set1_epi64(static_cast<int64_t>(0x94D049BB133111EBull));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)), mix1);
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), mix2);
  return _mm512_srli_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 31)), 40);
}

// Sixteen elements at a time, the last ones masked: GCC's vectorisation of the plain loop
// recomputed each state with a multiply and left up to 15 elements per call to scalar code, which
// attention's causal rows (one call per row, of any length) pay on every row.
template <bool Accumulate>
GPT_TARGET_AVX512 void dropout_loop_avx512(const DropoutKeys& keys, uint64_t first, const float* in, float* out,
                                           int64_t n) {
  const __m512i threshold = _mm512_set1_epi64(keys.threshold);
  const __m512i sixteen_steps = _mm512_set1_epi64(static_cast<int64_t>(16 * kSplitmixIncrement));
  const __m512 scale = _mm512_set1_ps(keys.keep_scale);
  // The states seed + (first + j + 1) * increment of elements j .. j + 7 and j + 8 .. j + 15.
  __m512i low = _mm512_add_epi64(_mm512_set1_epi64(static_cast<int64_t>(keys.seed + (first + 1) * kSplitmixIncrement)),
                                 _mm512_mullo_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7),
                                                    _mm512_set1_epi64(static_cast<int64_t>(kSplitmixIncrement))));
  __m512i high = _mm512_add_epi64(low, _mm512_set1_epi64(static_cast<int64_t>(8 * kSplitmixIncrement)));
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 lanes = first_lanes(n - j);
    const __mmask16 kept =
        static_cast<__mmask16>((_mm512_cmpge_epu64_mask(hash_bits(low), threshold) |
                                static_cast<unsigned>(_mm512_cmpge_epu64_mask(hash_bits(high), threshold)) << 8) &
                               lanes);
    const __m512 x = _mm512_maskz_loadu_ps(kept, in + j);
    if constexpr (Accumulate) {
      const __m512 acc = _mm512_maskz_loadu_ps(kept, out + j);
      _mm512_mask_storeu_ps(out + j, kept, _mm512_add_ps(acc, _mm512_mul_ps(x, scale)));
    } else {
      _mm512_mask_storeu_ps(out + j, lanes, _mm512_maskz_mul_ps(kept, x, scale));
    }
    low = _mm512_add_epi64(low, sixteen_steps);
    high = _mm512_add_epi64(high, sixteen_steps);
  }
}
// AVX2 has no 64-bit multiply and the compiler does not vectorise the hash on its own: four
// elements at a time, each multiply built from three 32 x 32 -> 64-bit ones (the high product of
// the high halves falls out of the low 64 bits).
GPT_TARGET_AVX2 inline __m256i multiply_low64(__m256i a, __m256i b) {
  const __m256i cross =
      _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b), _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
  return _mm256_add_epi64(_mm256_mul_epu32(a, b), _mm256_slli_epi64(cross, 32));
}

template <bool Accumulate>
GPT_TARGET_AVX2 void dropout_loop_avx2(const DropoutKeys& keys, uint64_t first, const float* in, float* out,
                                       int64_t n) {
  const __m256i increment = _mm256_set1_epi64x(static_cast<int64_t>(kSplitmixIncrement));
  const __m256i mix1 = _mm256_set1_epi64x(static_cast<int64_t>(0xBF58476D1CE4E5B9ull));
  const __m256i mix2 = _mm256_set1_epi64x(static_cast<int64_t>(0x94D049BB133111EBull));
  const __m256i below = _mm256_set1_epi64x(static_cast<int64_t>(keys.threshold) - 1);
  const __m256i four_steps = _mm256_set1_epi64x(static_cast<int64_t>(4 * kSplitmixIncrement));
  const __m256i to_low_halves = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  const __m128 scale = _mm_set1_ps(keys.keep_scale);
  // The states seed + (first + j + 1) * increment of elements j .. j + 3, advanced by 4 steps.
  __m256i state =
      _mm256_add_epi64(_mm256_set1_epi64x(static_cast<int64_t>(keys.seed + (first + 1) * kSplitmixIncrement)),
                       multiply_low64(_mm256_setr_epi64x(0, 1, 2, 3), increment));
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    __m256i z = state;
    z = multiply_low64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), mix1);
    z = multiply_low64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), mix2);
    z = _mm256_srli_epi64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 31)), 40);
    const __m256i kept64 = _mm256_cmpgt_epi64(z, below);  // 24-bit values: the signed compare is exact
    const __m128 kept = _mm_castsi128_ps(_mm256_castsi256_si128(_mm256_permutevar8x32_epi32(kept64, to_low_halves)));
    const __m128 scaled = _mm_mul_ps(_mm_loadu_ps(in + j), scale);
    if constexpr (Accumulate) {
      const __m128 acc = _mm_loadu_ps(out + j);
      _mm_storeu_ps(out + j, _mm_blendv_ps(acc, _mm_add_ps(acc, scaled), kept));
    } else {
      _mm_storeu_ps(out + j, _mm_and_ps(scaled, kept));
    }
    state = _mm256_add_epi64(state, four_steps);
  }
  dropout_loop<Accumulate>(keys, first + static_cast<uint64_t>(j), in + j, out + j, n - j);
}
#elif GPT_AARCH64
// NEON has no 64-bit lane multiply either: the AVX2 loop's construction, two lanes per register.
inline uint64x2_t multiply_low64(uint64x2_t a, uint32x2_t b_low, uint32x2_t b_high) {
  const uint32x2_t a_low = vmovn_u64(a), a_high = vshrn_n_u64(a, 32);
  const uint64x2_t cross = vmlal_u32(vmull_u32(a_high, b_low), a_low, b_high);
  return vaddq_u64(vmull_u32(a_low, b_low), vshlq_n_u64(cross, 32));
}

// splitmix64's output, top 24 bits, for two states.
inline uint64x2_t hash_bits(uint64x2_t z) {
  const uint64_t mix1 = 0xBF58476D1CE4E5B9ull, mix2 = 0x94D049BB133111EBull;
  const uint32x2_t mix1_low = vdup_n_u32(static_cast<uint32_t>(mix1)), mix1_high = vdup_n_u32(mix1 >> 32);
  const uint32x2_t mix2_low = vdup_n_u32(static_cast<uint32_t>(mix2)), mix2_high = vdup_n_u32(mix2 >> 32);
  z = multiply_low64(veorq_u64(z, vshrq_n_u64(z, 30)), mix1_low, mix1_high);
  z = multiply_low64(veorq_u64(z, vshrq_n_u64(z, 27)), mix2_low, mix2_high);
  return vshrq_n_u64(veorq_u64(z, vshrq_n_u64(z, 31)), 40);
}

// Four elements at a time: two registers of states, their decisions narrowed into one mask.
template <bool Accumulate>
void dropout_loop_neon(const DropoutKeys& keys, uint64_t first, const float* in, float* out, int64_t n) {
  const uint64x2_t threshold = vdupq_n_u64(keys.threshold);
  const uint64x2_t four_steps = vdupq_n_u64(4 * kSplitmixIncrement);
  const float32x4_t scale = vdupq_n_f32(keys.keep_scale);
  // The states seed + (first + j + 1) * increment of elements j, j + 1 and j + 2, j + 3.
  const uint64_t state0 = keys.seed + (first + 1) * kSplitmixIncrement;
  const uint64_t pairs[4] = {state0, state0 + kSplitmixIncrement, state0 + 2 * kSplitmixIncrement,
                             state0 + 3 * kSplitmixIncrement};
  uint64x2_t low = vld1q_u64(pairs), high = vld1q_u64(pairs + 2);
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const uint32x4_t kept =
        vcombine_u32(vmovn_u64(vcgeq_u64(hash_bits(low), threshold)), vmovn_u64(vcgeq_u64(hash_bits(high), threshold)));
    const float32x4_t scaled = vmulq_f32(vld1q_f32(in + j), scale);
    if constexpr (Accumulate) {
      const float32x4_t acc = vld1q_f32(out + j);
      vst1q_f32(out + j, vbslq_f32(kept, vaddq_f32(acc, scaled), acc));
    } else {
      vst1q_f32(out + j, vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(scaled), kept)));
    }
    low = vaddq_u64(low, four_steps);
    high = vaddq_u64(high, four_steps);
  }
  dropout_loop<Accumulate>(keys, first + static_cast<uint64_t>(j), in + j, out + j, n - j);
}
#endif
template <bool Accumulate>
void dropout_loop_baseline(const DropoutKeys& keys, uint64_t first, const float* in, float* out, int64_t n) {
  dropout_loop<Accumulate>(keys, first, in, out, n);
}

template <bool Accumulate>
DropoutLoop loop() {
#if GPT_X86_64
  return vector_path<DropoutLoop>(vector_isa(), dropout_loop_avx512<Accumulate>, dropout_loop_avx2<Accumulate>,
                                  dropout_loop_baseline<Accumulate>);
#elif GPT_AARCH64
  return vector_path<DropoutLoop>(vector_isa(), dropout_loop_neon<Accumulate>, dropout_loop_baseline<Accumulate>);
#else
  return dropout_loop_baseline<Accumulate>;
#endif
}

}  // namespace

DropoutKeys dropout_keys(uint64_t seed, float p) {
  // p * 2^24 is exact in double, so bits >= ceil(p * 2^24) exactly when bits * 2^-24 >= p.
  return {seed, static_cast<uint32_t>(std::ceil(static_cast<double>(p) * 0x1.0p24)), 1.0f / (1.0f - p)};
}

void dropout_apply_range(const DropoutKeys& keys, uint64_t first, const float* in, float* out, int64_t n) {
  loop<false>()(keys, first, in, out, n);
}

void dropout_accumulate_range(const DropoutKeys& keys, uint64_t first, const float* d, float* acc, int64_t n) {
  loop<true>()(keys, first, d, acc, n);
}

}  // namespace gpt
