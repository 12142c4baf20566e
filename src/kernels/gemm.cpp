#include "kernels/gemm.h"

#include "kernels/fast_math.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/aligned_buffer.h"
#include "core/check.h"
#include "kernels/bfloat16.h"
#include "kernels/fma_probe.h"
#include "kernels/parallel.h"

namespace gpt {

namespace {

// Cache blocks (in elements): an MC x KC block of packed A and a KC x NC panel of packed B stay in
// L2; one KC x NR sliver of B stays in L1. The register tile MR x NR depends on the kernel.
// Packed operands hold k steps: one float per k (float32 inputs), or one bfloat16 pair (k, k+1)
// in a uint32 (bfloat16 inputs, the layout VDPBF16PS reads), so KC is even. KC counts 4-byte
// steps: a K block of pairs spans 2 KC values of k (Kernel::kc_values), which halves how often C
// is read and written back, the same cache footprint.
constexpr int64_t KC = 256;
constexpr int64_t MC = 48;   // a multiple of every kernel's MR
constexpr int64_t NC = 128;  // a multiple of every kernel's NR
constexpr int64_t kMaxMR = 12;
constexpr int64_t kMaxTile = kMaxMR * 32;

bool g_force_portable = false;

bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}
bool cpu_has_avx512_bf16() {
  static const bool has = cpu_has_avx512() && __builtin_cpu_supports("avx512bf16");
  return has;
}

// Packing is pure copying (no arithmetic, so no effect on results) but a tenth of a training
// step: the copies are compiled for each ISA so they move whole vector registers.

// Packs op(A)[i0 : i0+mc, p0 : p0+kc] into MR-row slivers: for each k, MR consecutive values.
// Rows past mc are zero so the micro-kernel never branches on edges. kRounded: the values are
// rounded to bfloat16 (kept as float32) and k is padded with zeros to an even count, the steps
// VDPBF16PS takes, so that every bfloat16 path does the same multiply-adds.
template <bool kRounded>
GPT_VECTOR_CLONES void pack_a_floats(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc,
                                     int64_t p0, int64_t kc, float* out) {
  const auto value = [](float x) { return kRounded ? round_through_bfloat16(x) : x; };
  const int64_t steps = kRounded ? (kc + 1) / 2 * 2 : kc;
  for (int64_t ir = 0; ir < mc; ir += MR, out += MR * steps) {
    const int64_t rows = std::min(MR, mc - ir);
    if (trans_a) {  // A stored [K, M]: each k is a contiguous run of rows
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = A + (p0 + k) * lda + i0 + ir;
        float* dst = out + k * MR;
        for (int64_t r = 0; r < rows; ++r) dst[r] = value(src[r]);
        for (int64_t r = rows; r < MR; ++r) dst[r] = 0.0f;
      }
    } else {  // A stored [M, K]: each row is contiguous in k. Transpose in 8 x 8 tiles.
      constexpr int64_t kTile = 8;
      const float* rows_begin = A + (i0 + ir) * lda + p0;
      for (int64_t k0 = 0; k0 < kc; k0 += kTile) {
        const int64_t kn = std::min(kTile, kc - k0);
        for (int64_t r0 = 0; r0 < MR; r0 += kTile)
          for (int64_t k = 0; k < kn; ++k) {
            float* dst = out + (k0 + k) * MR + r0;
            for (int64_t r = 0; r < std::min(kTile, MR - r0); ++r)
              dst[r] = r0 + r < rows ? value(rows_begin[(r0 + r) * lda + k0 + k]) : 0.0f;
          }
      }
    }
    for (int64_t i = kc * MR; i < steps * MR; ++i) out[i] = 0.0f;
  }
}
void pack_a(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            float* out) {
  pack_a_floats<false>(MR, trans_a, A, lda, i0, mc, p0, kc, out);
}
void pack_a_rounded(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                    int64_t kc, float* out) {
  pack_a_floats<true>(MR, trans_a, A, lda, i0, mc, p0, kc, out);
}

// Packs op(B)[p0 : p0+kc, j0 : j0+nc] into NR-column slivers: for each k, NR consecutive values
// (kRounded as for A).
template <bool kRounded>
GPT_VECTOR_CLONES void pack_b_floats(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc,
                                     int64_t j, int64_t cols, float* out) {
  const auto value = [](float x) { return kRounded ? round_through_bfloat16(x) : x; };
  if (!trans_b) {  // B stored [K, N]: each k is a contiguous run of columns
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = B + (p0 + k) * ldb + j;
      float* dst = out + k * NR;
      for (int64_t c = 0; c < cols; ++c) dst[c] = value(src[c]);
      for (int64_t c = cols; c < NR; ++c) dst[c] = 0.0f;
    }
  } else {  // B stored [N, K]: each column is contiguous in k. Transpose in 8 x 8 tiles.
    constexpr int64_t kTile = 8;
    for (int64_t k0 = 0; k0 < kc; k0 += kTile) {
      const int64_t kn = std::min(kTile, kc - k0);
      for (int64_t c0 = 0; c0 < NR; c0 += kTile)
        for (int64_t k = 0; k < kn; ++k) {
          float* dst = out + (k0 + k) * NR + c0;
          for (int64_t c = 0; c < kTile; ++c) {
            dst[c] = value(c0 + c < cols ? B[(j + c0 + c) * ldb + p0 + k0 + k] : 0.0f);
          }
        }
    }
  }
  if (kRounded && kc % 2 != 0)
    for (int64_t c = 0; c < NR; ++c) out[kc * NR + c] = 0.0f;
}
void pack_b_sliver(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j,
                   int64_t cols, float* out) {
  pack_b_floats<false>(NR, trans_b, B, ldb, p0, kc, j, cols, out);
}
void pack_b_sliver_rounded(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j,
                           int64_t cols, float* out) {
  pack_b_floats<true>(NR, trans_b, B, ldb, p0, kc, j, cols, out);
}

// The VDPBF16PS packing: the same slivers, each step a bfloat16 pair (k, k+1) with k in the odd
// half (kernels/bfloat16.h), the pair past an odd kc padded with zero.
GPT_VECTOR_CLONES void pack_a_bfloat16(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc,
                                       int64_t p0, int64_t kc, uint32_t* out) {
  const int64_t steps = (kc + 1) / 2;
  for (int64_t ir = 0; ir < mc; ir += MR, out += MR * steps) {
    const int64_t rows = std::min(MR, mc - ir);
    for (int64_t s = 0; s < steps; ++s) {
      const bool has_second = 2 * s + 1 < kc;
      uint32_t* dst = out + s * MR;
      if (trans_a) {  // A stored [K, M]: each k is a contiguous run of rows
        const float* first = A + (p0 + 2 * s) * lda + i0 + ir;
        const float* second = first + lda;
        for (int64_t r = 0; r < rows; ++r) dst[r] = bfloat16_pair(first[r], has_second ? second[r] : 0.0f);
      } else {  // A stored [M, K]: a pair is two neighbours in a row
        for (int64_t r = 0; r < rows; ++r) {
          const float* src = A + (i0 + ir + r) * lda + p0 + 2 * s;
          dst[r] = bfloat16_pair(src[0], has_second ? src[1] : 0.0f);
        }
      }
      for (int64_t r = rows; r < MR; ++r) dst[r] = 0;
    }
  }
}

GPT_VECTOR_CLONES void pack_b_sliver_bfloat16(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0,
                                              int64_t kc, int64_t j, int64_t cols, uint32_t* out) {
  const int64_t steps = (kc + 1) / 2;
  for (int64_t s = 0; s < steps; ++s) {
    const bool has_second = 2 * s + 1 < kc;
    uint32_t* dst = out + s * NR;
    if (!trans_b) {  // B stored [K, N]: each k is a contiguous run of columns
      const float* first = B + (p0 + 2 * s) * ldb + j;
      const float* second = first + ldb;
      for (int64_t c = 0; c < cols; ++c) dst[c] = bfloat16_pair(first[c], has_second ? second[c] : 0.0f);
    } else {  // B stored [N, K]: a pair is two neighbours in a column
      for (int64_t c = 0; c < cols; ++c) {
        const float* src = B + (j + c) * ldb + p0 + 2 * s;
        dst[c] = bfloat16_pair(src[0], has_second ? src[1] : 0.0f);
      }
    }
    for (int64_t c = cols; c < NR; ++c) dst[c] = 0;
  }
}

// Every micro-kernel computes c[kRows x NR] (row stride ldc) = (load_c ? c : 0) + sum_k a[k] b[k]
// with one fused multiply-add per term in k order, so all of them round identically. kRows is MR
// for full slivers and the remainder for the last one, so a partial sliver costs only its rows.

// A is read either packed (a[k * MR + r], kDirectA = false) or straight from a row-major matrix
// (a[r * lda + k], kDirectA = true: no packing for the non-transposed case).

// AVX-512: 12 x 32 tile, 24 zmm accumulators.
template <int kRows, bool kDirectA>
__attribute__((target("avx512f"))) void micro_kernel_avx512(int64_t kc, const float* a, int64_t lda, const float* b,
                                                            float* c, int64_t ldc, bool load_c) {
  constexpr int MR = 12;
  __m512 acc[kRows][2];
  for (int r = 0; r < kRows; ++r) {
    acc[r][0] = load_c ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load_c ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
    for (int r = 0; r < kRows; ++r) {
      const __m512 ar = _mm512_set1_ps(kDirectA ? a[r * lda + k] : a[k * MR + r]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
    }
    b += 32;
  }
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}

// AVX2 + FMA: 6 x 16 tile, 12 ymm accumulators plus two B vectors and one broadcast.
template <int kRows, bool kDirectA>
__attribute__((target("avx2,fma"))) void micro_kernel_avx2(int64_t kc, const float* a, int64_t lda, const float* b,
                                                           float* c, int64_t ldc, bool load_c) {
  constexpr int MR = 6;
  __m256 acc[kRows][2];
  for (int r = 0; r < kRows; ++r) {
    acc[r][0] = load_c ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    acc[r][1] = load_c ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
    for (int r = 0; r < kRows; ++r) {
      const __m256 ar = _mm256_set1_ps(kDirectA ? a[r * lda + k] : a[k * MR + r]);
      acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
    }
    b += 16;
  }
  for (int r = 0; r < kRows; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc[r][0]);
    _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
  }
}

// Portable: the same FMA chain per element with std::fma (6 x 16 tile). kFlush: the bfloat16
// arithmetic's flush of subnormal accumulators (kernels/bfloat16.h), which the SIMD kernels get
// from MXCSR.
template <int kRows, bool kDirectA, bool kFlush = false>
void micro_kernel_portable(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                           bool load_c) {
  constexpr int64_t MR = 6, NR = 16;
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t j = 0; j < NR; ++j) {
      float acc = load_c ? c[r * ldc + j] : 0.0f;
      if constexpr (kFlush) {
        acc = flush_subnormal(acc);
        for (int64_t k = 0; k < kc; ++k) acc = bfloat16_multiply_add(a[k * MR + r], b[k * NR + j], acc);
      } else {
        for (int64_t k = 0; k < kc; ++k) acc = std::fma(kDirectA ? a[r * lda + k] : a[k * MR + r], b[k * NR + j], acc);
      }
      c[r * ldc + j] = acc;
    }
  }
}

// bfloat16 inputs, AVX512_BF16: a 12 x 32 tile like the float32 kernel's, each VDPBF16PS adding
// a pair of k to 16 accumulators. A subnormal accumulator loaded from c is read as zero by the
// instruction itself.
template <int kRows>
__attribute__((target("avx512f,avx512bf16"))) void micro_kernel_avx512_bf16(int64_t steps, const uint32_t* a,
                                                                            int64_t /*lda*/, const uint32_t* b,
                                                                            float* c, int64_t ldc, bool load_c) {
  constexpr int MR = 12;
  __m512 acc[kRows][2];
  for (int r = 0; r < kRows; ++r) {
    acc[r][0] = load_c ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load_c ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t s = 0; s < steps; ++s) {
    const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_load_si512(b));
    const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_load_si512(b + 16));
    for (int r = 0; r < kRows; ++r) {
      const __m512bh ar = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[s * MR + r])));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);
    }
    b += 32;
  }
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}

template <typename Packed>
using MicroKernel = void (*)(int64_t, const Packed*, int64_t, const Packed*, float*, int64_t, bool);
template <typename Packed>
using MicroKernels = std::array<MicroKernel<Packed>, kMaxMR>;  // [rows - 1]

// Each ISA's kernels for 1 .. MR rows, indexed by rows - 1.
template <bool kDirectA, std::size_t... R>
constexpr MicroKernels<float> avx512_kernels(std::index_sequence<R...>) {
  return {&micro_kernel_avx512<static_cast<int>(R) + 1, kDirectA>...};
}
template <bool kDirectA, std::size_t... R>
constexpr MicroKernels<float> avx2_kernels(std::index_sequence<R...>) {
  return {&micro_kernel_avx2<static_cast<int>(R) + 1, kDirectA>...};
}
template <bool kDirectA, std::size_t... R>
constexpr MicroKernels<float> portable_kernels(std::index_sequence<R...>) {
  return {&micro_kernel_portable<static_cast<int>(R) + 1, kDirectA>...};
}
template <std::size_t... R>
constexpr MicroKernels<uint32_t> avx512_bf16_kernels(std::index_sequence<R...>) {
  return {&micro_kernel_avx512_bf16<static_cast<int>(R) + 1>...};
}
template <std::size_t... R>
constexpr MicroKernels<float> portable_flushing_kernels(std::index_sequence<R...>) {
  return {&micro_kernel_portable<static_cast<int>(R) + 1, false, true>...};
}

// A micro-kernel family with its packing. Packed is float (one k per step) or uint32_t (a
// bfloat16 pair per step). direct_a is empty when A must always be packed.
template <typename Packed>
struct Kernel {
  MicroKernels<Packed> packed_a, direct_a;
  int64_t MR, NR;
  int vector_width;
  const char* name;
  void (*pack_a)(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                 Packed* out);
  void (*pack_b)(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j, int64_t cols,
                 Packed* out);

  // bfloat16 arithmetic: k padded to pairs (VDPBF16PS's steps); for float kernels, subnormals
  // flushed by MXCSR while the micro-kernels run.
  bool bfloat16_steps = false;
  bool flush_with_mxcsr = false;

  // Packed elements per row or column for kc values of k.
  int64_t steps(int64_t kc) const {
    if (!bfloat16_steps) return kc;
    return std::is_same_v<Packed, float> ? (kc + 1) / 2 * 2 : (kc + 1) / 2;
  }
  // Values of k per K block: KC steps.
  int64_t kc_values() const { return std::is_same_v<Packed, float> ? KC : 2 * KC; }
  bool reads_a_in_place() const { return direct_a[0] != nullptr; }
  static const Packed* pack_a_type() { return nullptr; }  // names Packed for generic callers
};

const Kernel<float> kAvx512{avx512_kernels<false>(std::make_index_sequence<12>()),
                            avx512_kernels<true>(std::make_index_sequence<12>()),
                            12,
                            32,
                            16,
                            "avx512",
                            pack_a,
                            pack_b_sliver};
const Kernel<float> kAvx2{avx2_kernels<false>(std::make_index_sequence<6>()),
                          avx2_kernels<true>(std::make_index_sequence<6>()),
                          6,
                          16,
                          8,
                          "avx2-fma",
                          pack_a,
                          pack_b_sliver};
const Kernel<float> kPortable{portable_kernels<false>(std::make_index_sequence<6>()),
                              portable_kernels<true>(std::make_index_sequence<6>()),
                              6,
                              16,
                              1,
                              "portable",
                              pack_a,
                              pack_b_sliver};

// bfloat16 inputs: VDPBF16PS on pairs, or the float32 kernels on rounded inputs (the same bits).
const Kernel<uint32_t> kAvx512Bf16{avx512_bf16_kernels(std::make_index_sequence<12>()),
                                   {},
                                   12,
                                   32,
                                   16,
                                   kVdpbf16psKernel,
                                   pack_a_bfloat16,
                                   pack_b_sliver_bfloat16,
                                   true};
const Kernel<float> kAvx512Rounded{avx512_kernels<false>(std::make_index_sequence<12>()),
                                   {},
                                   12,
                                   32,
                                   16,
                                   "avx512-fma-bf16",
                                   pack_a_rounded,
                                   pack_b_sliver_rounded,
                                   true,
                                   true};
const Kernel<float> kAvx2Rounded{avx2_kernels<false>(std::make_index_sequence<6>()),
                                 {},
                                 6,
                                 16,
                                 8,
                                 "avx2-fma-bf16",
                                 pack_a_rounded,
                                 pack_b_sliver_rounded,
                                 true,
                                 true};
const Kernel<float> kPortableRounded{portable_flushing_kernels(std::make_index_sequence<6>()),
                                     {},
                                     6,
                                     16,
                                     1,
                                     "portable-bf16",
                                     pack_a_rounded,
                                     pack_b_sliver_rounded,
                                     true};

const Kernel<float>& active_kernel() {
  if (g_force_portable) return kPortable;
  if (cpu_has_avx512()) return kAvx512;
  if (cpu_has_avx2_fma()) return kAvx2;
  return kPortable;
}

const char* g_forced_bf16_kernel = nullptr;

// VDPBF16PS where the CPU has it and it outruns FMAs (measured once: on Zen 5 it does twice the
// multiply-adds; on Sapphire Rapids half), else the float32 kernel on rounded inputs.
bool use_vdpbf16ps() {
  if (g_forced_bf16_kernel) return std::string_view(g_forced_bf16_kernel) == kAvx512Bf16.name;
  if (g_force_portable || !cpu_has_avx512_bf16()) return false;
  static const bool faster = vdpbf16ps_speedup() > 1.1;
  return faster;
}
const Kernel<float>& active_rounded_kernel() {
  if (g_forced_bf16_kernel) {
    for (const Kernel<float>* kernel : {&kAvx512Rounded, &kAvx2Rounded})
      if (std::string_view(g_forced_bf16_kernel) == kernel->name) return *kernel;
    return kPortableRounded;
  }
  if (g_force_portable) return kPortableRounded;
  if (cpu_has_avx512()) return kAvx512Rounded;
  if (cpu_has_avx2_fma()) return kAvx2Rounded;
  return kPortableRounded;
}
// Calls f with the bfloat16 kernel in use (a Kernel<uint32_t> or a Kernel<float>).
template <typename F>
decltype(auto) with_bf16_kernel(F&& f) {
  if (use_vdpbf16ps()) return f(kAvx512Bf16);
  return f(active_rounded_kernel());
}

// MXCSR's flush-to-zero and denormals-are-zero for this thread, while in scope (when `on`).
class FlushSubnormals {
 public:
  explicit FlushSubnormals(bool on) : on_(on) {
    if (!on_) return;
    saved_ = _mm_getcsr();
    _mm_setcsr(saved_ | 0x8040u);
  }
  ~FlushSubnormals() {
    if (on_) _mm_setcsr(saved_);
  }
  FlushSubnormals(const FlushSubnormals&) = delete;
  FlushSubnormals& operator=(const FlushSubnormals&) = delete;

 private:
  bool on_;
  unsigned saved_ = 0;
};

// Row-vector times transposed matrix (C[1,N] = a[1,K] B^T with B stored [N,K]), the shape of a
// Linear layer on one token while sampling: packing would copy all of B for one row of output,
// so each output is a dot product instead, in 8 lanes (FMA per term in k order within a lane),
// lanes then added pairwise in a fixed tree. Eight outputs are computed together so their FMA
// chains overlap; the portable version follows the same order, so both give the same bits.
inline float reduce_lanes(const float* lanes) {
  return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
}

__attribute__((target("avx2,fma"))) void dots_avx2(const float* a, const float* B, int64_t ldb, int64_t K, int64_t rows,
                                                   float* out) {
  constexpr int kRows = 8;
  for (int64_t j0 = 0; j0 < rows; j0 += kRows) {
    const int64_t n = std::min<int64_t>(kRows, rows - j0);
    __m256 acc[kRows];
    for (auto& x : acc) x = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
      const __m256 av = _mm256_loadu_ps(a + k);
      for (int r = 0; r < kRows; ++r)
        if (r < n) acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(B + (j0 + r) * ldb + k), av, acc[r]);
    }
    for (int r = 0; r < n; ++r) {
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, acc[r]);
      for (int64_t kk = k, lane = 0; kk < K; ++kk, ++lane)
        lanes[lane] = std::fma(B[(j0 + r) * ldb + kk], a[kk], lanes[lane]);
      out[j0 + r] = reduce_lanes(lanes);
    }
  }
}

void dots_portable(const float* a, const float* B, int64_t ldb, int64_t K, int64_t rows, float* out) {
  for (int64_t j = 0; j < rows; ++j) {
    const float* b = B + j * ldb;
    float lanes[8] = {};
    int64_t k = 0;
    for (; k + 8 <= K; k += 8)
      for (int r = 0; r < 8; ++r) lanes[r] = std::fma(b[k + r], a[k + r], lanes[r]);
    for (int64_t lane = 0; k < K; ++k, ++lane) lanes[lane] = std::fma(b[k], a[k], lanes[lane]);
    out[j] = reduce_lanes(lanes);
  }
}

constexpr int64_t kDotBlock = 64;

void row_times_transposed_block(bool simd, int64_t j0, int64_t rows, int64_t K, const float* a, const float* B,
                                int64_t ldb, float* c, bool accumulate) {
  float out[kDotBlock];
  (simd ? dots_avx2 : dots_portable)(a, B + j0 * ldb, ldb, K, rows, out);
  for (int64_t r = 0; r < rows; ++r) c[j0 + r] = accumulate ? c[j0 + r] + out[r] : out[r];
}

void row_times_transposed(bool simd, int64_t N, int64_t K, const float* a, const float* B, int64_t ldb, float* c,
                          bool accumulate) {
  // Fixed blocks of rows; with two or more threads each keeps its share of B in its own cache.
  const int64_t blocks = (N + kDotBlock - 1) / kDotBlock;
#pragma omp parallel for schedule(static) if (N * K >= kParallelMinMatVec && blocks > 1)
  for (int64_t blk = 0; blk < blocks; ++blk)
    row_times_transposed_block(simd, blk * kDotBlock, std::min(kDotBlock, N - blk * kDotBlock), K, a, B, ldb, c,
                               accumulate);
}

// Grow-only buffers: after the first steps of a run no call allocates. Both packed formats are
// 4 bytes per element.
struct GrowableBuffer {
  AlignedBuffer<float> buffer;
  template <typename Packed>
  Packed* get(std::size_t n) {
    static_assert(sizeof(Packed) == sizeof(float));
    if (buffer.size() < n) buffer = AlignedBuffer<float>(n);
    return reinterpret_cast<Packed*>(buffer.data());
  }
};
GrowableBuffer g_packed_b;  // shared by the team: one K block of all of op(B), packed once per call
GrowableBuffer g_packed_a;  // likewise for an A that is packed

// Runs the micro-kernels of rows [i0, i0+mc) x columns [j0, j0+nc) against the shared packed B
// (slivers of NR columns, each `steps` x NR). A non-transposed float32 A is read in place
// (packed_a null); otherwise A comes packed for the whole K block (MR-row slivers, each
// `steps` x MR). The last sliver runs the kernel for just its rows.
template <typename Packed>
void multiply_block(const Kernel<Packed>& kernel, const float* A, int64_t lda, int64_t p0, const Packed* packed_a,
                    const Packed* packed_b, int64_t kc, int64_t i0, int64_t mc, int64_t j0, int64_t nc, float* C,
                    int64_t ldc, bool load_c) {
  const int64_t MR = kernel.MR, NR = kernel.NR, steps = kernel.steps(kc);
  alignas(64) float edge[kMaxTile];
  for (int64_t ir = 0; ir < mc; ir += MR) {
    const int64_t rows = std::min(MR, mc - ir);
    const Packed* a =
        packed_a ? packed_a + (i0 + ir) / MR * MR * steps : reinterpret_cast<const Packed*>(A + (i0 + ir) * lda + p0);
    const MicroKernel<Packed> micro = (packed_a ? kernel.packed_a : kernel.direct_a)[rows - 1];
    for (int64_t jr = j0; jr < j0 + nc; jr += NR) {
      const int64_t cols = std::min(NR, j0 + nc - jr);
      const Packed* b = packed_b + (jr / NR) * NR * steps;
      float* c = C + (i0 + ir) * ldc + jr;
      if (cols == NR) {
        micro(steps, a, lda, b, c, ldc, load_c);
        continue;
      }
      // Edge tile: run the kernel on a local copy of full width, write back only the valid part.
      if (load_c)
        for (int64_t r = 0; r < rows; ++r) std::memcpy(edge + r * NR, c + r * ldc, cols * sizeof(float));
      micro(steps, a, lda, b, edge, NR, load_c);
      for (int64_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, edge + r * NR, cols * sizeof(float));
    }
  }
}

}  // namespace

const char* gemm_kernel_name(Dtype inputs) {
  if (inputs == Dtype::bfloat16) return with_bf16_kernel([](const auto& kernel) { return kernel.name; });
  return active_kernel().name;
}
int gemm_vector_width() { return active_kernel().vector_width; }
std::string describe_matmul(Dtype inputs) {
  if (inputs == Dtype::float32) return std::string("matrix products: float32 (") + active_kernel().name + " kernel)";
  const std::string line =
      std::string("matrix products: bfloat16 inputs, float32 sums (") + gemm_kernel_name(Dtype::bfloat16) + " kernel";
  if (use_vdpbf16ps()) return line + ")";
  if (cpu_has_avx512_bf16()) return line + "; this CPU's VDPBF16PS measured slower than its FMAs)";
  return line + "; no AVX512_BF16 here: no faster than float32)";
}
void gemm_force_portable(bool force) { g_force_portable = force; }
void gemm_force_bfloat16_kernel(const char* name) { g_forced_bf16_kernel = name; }
bool gemm_bfloat16_uses_vdpbf16ps() { return use_vdpbf16ps(); }
std::vector<const char*> gemm_bfloat16_kernels() {
  std::vector<const char*> names;
  if (cpu_has_avx512_bf16()) names.push_back(kAvx512Bf16.name);
  if (cpu_has_avx512()) names.push_back(kAvx512Rounded.name);
  if (cpu_has_avx2_fma()) names.push_back(kAvx2Rounded.name);
  names.push_back(kPortableRounded.name);
  return names;
}

namespace {

// Where a K block of a prepacked op(B) starts: the blocks before it hold p0 k values.
template <typename Packed>
int64_t prepacked_block_offset(const Kernel<Packed>& kernel, int64_t p0, int64_t slivers) {
  return kernel.steps(p0) * slivers * kernel.NR;
}

// The blocked product: for each K block, op(B) is packed (or taken prepacked), then the work
// items run. `prepacked` is null or holds every K block of op(B) in the packed sliver layout.
template <typename Packed>
void gemm_blocked(const Kernel<Packed>& kernel, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  const float* A, int64_t lda, const float* B, int64_t ldb,
                  std::type_identity_t<const Packed*> prepacked, float* C, int64_t ldc, bool accumulate) {
  // Work items: MC-row blocks times column chunks (a multiple of NR), enough of them to balance
  // the threads. op(B), and A when it is packed, are packed once per K block and shared.
  const int64_t NR = kernel.NR, MR = kernel.MR;
  const bool pack_whole_a = trans_a || !kernel.reads_a_in_place();
  const int64_t slivers = (N + NR - 1) / NR;
  const int64_t slivers_a = pack_whole_a ? (M + MR - 1) / MR : 0;
  const int64_t blocks_m = (M + MC - 1) / MC;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  // At least 4 items per thread and a multiple of the thread count where the columns allow it,
  // so static scheduling stays balanced.
  int64_t chunks_n = 1;
  while ((blocks_m * chunks_n < 4 * threads || (blocks_m * chunks_n) % threads != 0) && chunks_n < slivers) ++chunks_n;
  const int64_t chunk_slivers = (slivers + chunks_n - 1) / chunks_n;
  chunks_n = (slivers + chunk_slivers - 1) / chunk_slivers;
  const int64_t items = blocks_m * chunks_n;
  const bool parallel = items > 1 && M * N * K >= (1 << 18) && threads > 1;
  // Inside an enclosing parallel region each thread runs its own product: its own buffers.
  thread_local GrowableBuffer own_packed_a, own_packed_b;
  const int64_t block_steps = kernel.steps(std::min(K, kernel.kc_values()));
  Packed* packed_b = prepacked ? nullptr
                               : (omp_in_parallel() ? own_packed_b : g_packed_b)
                                     .get<Packed>(static_cast<std::size_t>(slivers * NR * block_steps));
  Packed* packed_a = pack_whole_a ? (omp_in_parallel() ? own_packed_a : g_packed_a)
                                        .get<Packed>(static_cast<std::size_t>(slivers_a * MR * block_steps))
                                  : nullptr;
  for (int64_t p0 = 0; p0 < K; p0 += kernel.kc_values()) {
    const int64_t kc = std::min(kernel.kc_values(), K - p0), steps = kernel.steps(kc);
    const bool load_c = accumulate || p0 > 0;
    const Packed* block_b = prepacked ? prepacked + prepacked_block_offset(kernel, p0, slivers) : packed_b;
    // The work of one K block, this thread's contiguous share of each loop. No worksharing
    // constructs: the serial case may run inside a caller's parallel loop (attention), where an
    // orphaned `omp for` would bind to the caller's team.
    auto k_block = [&](int64_t thread, int64_t team) {
      const FlushSubnormals flush(kernel.flush_with_mxcsr);
      const int64_t pack_b_items = prepacked ? 0 : slivers;
      const int64_t packs = pack_b_items + slivers_a;
      for (int64_t s = packs * thread / team; s < packs * (thread + 1) / team; ++s) {
        if (s < pack_b_items) {
          kernel.pack_b(NR, trans_b, B, ldb, p0, kc, s * NR, std::min(NR, N - s * NR), packed_b + s * NR * steps);
        } else {
          const int64_t i = (s - pack_b_items) * MR;
          kernel.pack_a(MR, trans_a, A, lda, i, std::min(MR, M - i), p0, kc, packed_a + i * steps);
        }
      }
      if (team > 1) {
#pragma omp barrier
      }
      for (int64_t item = items * thread / team; item < items * (thread + 1) / team; ++item) {
        const int64_t i0 = (item / chunks_n) * MC, mc = std::min(MC, M - i0);
        const int64_t j0 = (item % chunks_n) * chunk_slivers * NR, nc = std::min(chunk_slivers * NR, N - j0);
        multiply_block(kernel, A, lda, p0, packed_a, block_b, kc, i0, mc, j0, nc, C, ldc, load_c);
      }
    };
    // Small products (attention's, each inside the caller's own parallel loop) skip the cost of
    // opening a parallel region.
    if (parallel) {
#pragma omp parallel
      k_block(omp_get_thread_num(), omp_get_num_threads());
    } else {
      k_block(0, 1);
    }
  }
}

bool zero_or_trivial(int64_t M, int64_t N, int64_t K, float* C, int64_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return true;
  if (K > 0) return false;
  if (!accumulate)
    for (int64_t i = 0; i < M; ++i) std::memset(C + i * ldc, 0, N * sizeof(float));
  return true;
}

// Packs every K block of op(B) into `out`, in the layout gemm_blocked reads as `prepacked`.
template <typename Packed>
void pack_whole_b(const Kernel<Packed>& kernel, bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb,
                  Packed* out) {
  const int64_t NR = kernel.NR, slivers = (N + NR - 1) / NR;
  for (int64_t p0 = 0; p0 < K; p0 += kernel.kc_values()) {
    const int64_t kc = std::min(kernel.kc_values(), K - p0);
    Packed* block = out + prepacked_block_offset(kernel, p0, slivers);
    for (int64_t s = 0; s < slivers; ++s)
      kernel.pack_b(NR, trans_b, B, ldb, p0, kc, s * NR, std::min(NR, N - s * NR), block + s * NR * kernel.steps(kc));
  }
}

// gemm_prepacked_columns for one packed format.
template <typename Packed>
void prepacked_columns(const Kernel<Packed>& kernel, int64_t M, const float* A, int64_t lda, const Packed* packed,
                       int64_t K, int64_t N, int64_t column_begin, int64_t column_end, float* C, int64_t ldc,
                       bool accumulate) {
  const int64_t MR = kernel.MR, NR = kernel.NR, slivers = (N + NR - 1) / NR;
  thread_local GrowableBuffer own_packed_a;
  const FlushSubnormals flush(kernel.flush_with_mxcsr);
  for (int64_t p0 = 0; p0 < K; p0 += kernel.kc_values()) {
    const int64_t kc = std::min(kernel.kc_values(), K - p0);
    Packed* packed_a = nullptr;
    if (!kernel.reads_a_in_place()) {
      packed_a = own_packed_a.get<Packed>(static_cast<std::size_t>((M + MR - 1) / MR * MR * kernel.steps(kc)));
      kernel.pack_a(MR, false, A, lda, 0, M, p0, kc, packed_a);
    }
    // Row blocks of MC as gemm_blocked makes them, so partial slivers fall where they do there.
    for (int64_t i0 = 0; i0 < M; i0 += MC)
      multiply_block(kernel, A, lda, p0, packed_a, packed + prepacked_block_offset(kernel, p0, slivers), kc, i0,
                     std::min(MC, M - i0), column_begin, column_end - column_begin, C, ldc, accumulate || p0 > 0);
  }
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate, Dtype inputs) {
  if (zero_or_trivial(M, N, K, C, ldc, accumulate)) return;
  if (inputs == Dtype::bfloat16) {
    with_bf16_kernel([&](const auto& kernel) {
      gemm_blocked(kernel, trans_a, trans_b, M, N, K, A, lda, B, ldb, nullptr, C, ldc, accumulate);
    });
    return;
  }
  const Kernel<float>& kernel = active_kernel();
  if (M == 1 && !trans_a && trans_b) {
    row_times_transposed(kernel.vector_width > 1, N, K, A, B, ldb, C, accumulate);
    return;
  }
  gemm_blocked<float>(kernel, trans_a, trans_b, M, N, K, A, lda, B, ldb, nullptr, C, ldc, accumulate);
}

namespace {

// Calls f with the kernel that multiplies `inputs` (a Kernel<float> or, for VDPBF16PS, a
// Kernel<uint32_t>).
template <typename F>
decltype(auto) with_kernel(Dtype inputs, F&& f) {
  if (inputs == Dtype::bfloat16) return with_bf16_kernel(f);
  return f(active_kernel());
}

// A packed matrix's data in its kernel's element type, after checking it was packed for it.
template <typename Packed>
const Packed* packed_data(const Kernel<Packed>& kernel, const PackedMatrix& B) {
  GPT_CHECK(kernel.name == B.kernel_name(), "matrix packed for another GEMM kernel");
  return reinterpret_cast<const Packed*>(B.data());
}

}  // namespace

PackedMatrix::PackedMatrix(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, Dtype inputs)
    : K_(K), N_(N), dtype_(inputs) {
  with_kernel(inputs, [&](const auto& kernel) {
    using Packed = std::remove_cvref_t<decltype(*kernel.pack_a_type())>;
    nr_ = kernel.NR;
    kernel_name_ = kernel.name;
    const int64_t slivers = (N + nr_ - 1) / nr_;
    data_ = AlignedBuffer<float>(static_cast<std::size_t>(std::max<int64_t>(1, kernel.steps(K) * slivers * nr_)));
    pack_whole_b(kernel, trans_b, K, N, B, ldb, reinterpret_cast<Packed*>(data_.data()));
  });
}

void gemm_prepacked(int64_t M, const float* A, int64_t lda, const PackedMatrix& B, float* C, int64_t ldc,
                    bool accumulate) {
  if (zero_or_trivial(M, B.N(), B.K(), C, ldc, accumulate)) return;
  with_kernel(B.dtype(), [&](const auto& kernel) {
    gemm_blocked(kernel, false, false, M, B.N(), B.K(), A, lda, nullptr, 0, packed_data(kernel, B), C, ldc, accumulate);
  });
}

void gemm_prepacked_columns(int64_t M, const float* A, int64_t lda, const PackedMatrix& B, int64_t column_begin,
                            int64_t column_end, float* C, int64_t ldc, bool accumulate) {
  GPT_CHECK(column_begin % B.nr() == 0 && column_begin <= column_end && column_end <= B.N(), "column range");
  if (M <= 0 || column_begin == column_end) return;
  if (B.K() == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i)
        std::memset(C + i * ldc + column_begin, 0, (column_end - column_begin) * sizeof(float));
    return;
  }
  with_kernel(B.dtype(), [&](const auto& kernel) {
    prepacked_columns(kernel, M, A, lda, packed_data(kernel, B), B.K(), B.N(), column_begin, column_end, C, ldc,
                      accumulate);
  });
}

void row_times_transposed_serial(int64_t N, int64_t K, const float* a, const float* B, int64_t ldb, float* c,
                                 bool accumulate) {
  const bool simd = active_kernel().vector_width > 1;
  for (int64_t j0 = 0; j0 < N; j0 += kDotBlock)
    row_times_transposed_block(simd, j0, std::min(kDotBlock, N - j0), K, a, B, ldb, c, accumulate);
}

}  // namespace gpt
