#include "kernels/gemm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/aligned_buffer.h"

namespace gpt {

namespace {

// Register tile (MR x NR) and cache blocks. A 6x16 tile keeps 12 ymm accumulators plus two B
// vectors and one broadcast in the 16 AVX2 registers. KC x NR floats of packed B (16 KiB) stay in
// L1; an MC x KC block of packed A and a KC x NC panel of B (128 KiB) stay in L2.
constexpr int64_t MR = 6;
constexpr int64_t NR = 16;
constexpr int64_t KC = 256;
constexpr int64_t MC = 48;   // multiple of MR
constexpr int64_t NC = 128;  // multiple of NR

bool g_force_portable = false;

bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

// Packs op(A)[i0 : i0+mc, p0 : p0+kc] into MR-row slivers: for each k, MR consecutive values.
// Rows past mc are zero so the micro-kernel never branches on edges.
void pack_a(bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
  for (int64_t ir = 0; ir < mc; ir += MR) {
    const int64_t rows = std::min(MR, mc - ir);
    for (int64_t k = 0; k < kc; ++k) {
      for (int64_t r = 0; r < MR; ++r) {
        float v = 0.0f;
        if (r < rows) {
          const int64_t i = i0 + ir + r, p = p0 + k;
          v = trans_a ? A[p * lda + i] : A[i * lda + p];
        }
        *out++ = v;
      }
    }
  }
}

// Packs op(B)[p0 : p0+kc, j0 : j0+nc] into NR-column slivers: for each k, NR consecutive values.
void pack_b(bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
  for (int64_t jr = 0; jr < nc; jr += NR) {
    const int64_t cols = std::min(NR, nc - jr);
    if (!trans_b && cols == NR) {
      for (int64_t k = 0; k < kc; ++k) {
        std::memcpy(out, B + (p0 + k) * ldb + j0 + jr, NR * sizeof(float));
        out += NR;
      }
      continue;
    }
    for (int64_t k = 0; k < kc; ++k) {
      for (int64_t c = 0; c < NR; ++c) {
        float v = 0.0f;
        if (c < cols) {
          const int64_t j = j0 + jr + c, p = p0 + k;
          v = trans_b ? B[j * ldb + p] : B[p * ldb + j];
        }
        *out++ = v;
      }
    }
  }
}

// c[MR x NR] (row stride ldc) = (load_c ? c : 0) + sum_k a[k] b[k], one FMA per term in k order.
__attribute__((target("avx2,fma"))) void micro_kernel_avx2(int64_t kc, const float* a, const float* b, float* c,
                                                           int64_t ldc, bool load_c) {
  __m256 acc[MR][2];
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = load_c ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    acc[r][1] = load_c ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
    for (int r = 0; r < MR; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a + r);
      acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
    }
    a += MR;
    b += NR;
  }
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc[r][0]);
    _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
  }
}

void micro_kernel_portable(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool load_c) {
  for (int64_t r = 0; r < MR; ++r) {
    for (int64_t j = 0; j < NR; ++j) {
      float acc = load_c ? c[r * ldc + j] : 0.0f;
      for (int64_t k = 0; k < kc; ++k) acc = std::fma(a[k * MR + r], b[k * NR + j], acc);
      c[r * ldc + j] = acc;
    }
  }
}

using MicroKernel = void (*)(int64_t, const float*, const float*, float*, int64_t, bool);

// Row-vector times transposed matrix (C[1,N] = a[1,K] B^T with B stored [N,K]), the shape of a
// Linear layer on one token while sampling: packing would copy all of B for one row of output,
// so each output is a dot product instead, in 8 lanes (FMA per term in k order within a lane),
// lanes then added pairwise in a fixed tree. The portable version follows the same order.
__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int64_t K) {
  __m256 acc = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), acc);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  for (int64_t r = 0; k < K; ++k, ++r) lanes[r] = std::fma(a[k], b[k], lanes[r]);
  return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
}

float dot_portable(const float* a, const float* b, int64_t K) {
  float lanes[8] = {};
  int64_t k = 0;
  for (; k + 8 <= K; k += 8)
    for (int r = 0; r < 8; ++r) lanes[r] = std::fma(a[k + r], b[k + r], lanes[r]);
  for (int64_t r = 0; k < K; ++k, ++r) lanes[r] = std::fma(a[k], b[k], lanes[r]);
  return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
}

void row_times_transposed(bool simd, int64_t N, int64_t K, const float* a, const float* B, int64_t ldb, float* c,
                          bool accumulate) {
  const auto dot = simd ? dot_avx2 : dot_portable;
#pragma omp parallel for schedule(static) if (N * K >= (1 << 18))
  for (int64_t j = 0; j < N; ++j) {
    const float d = dot(a, B + j * ldb, K);
    c[j] = accumulate ? c[j] + d : d;
  }
}

struct PackBuffers {
  AlignedBuffer<float> a{static_cast<std::size_t>(MC * KC)};
  AlignedBuffer<float> b{static_cast<std::size_t>(KC * NC)};
};

// One MC x NC tile of C over the whole K range, by one thread.
void compute_tile(MicroKernel kernel, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate, int64_t i0,
                  int64_t j0) {
  thread_local PackBuffers buffers;  // allocated once per thread, reused by every call
  const int64_t mc = std::min(MC, M - i0);
  const int64_t nc = std::min(NC, N - j0);
  alignas(64) float edge[MR * NR];
  for (int64_t p0 = 0; p0 < K; p0 += KC) {
    const int64_t kc = std::min(KC, K - p0);
    const bool load_c = accumulate || p0 > 0;
    pack_a(trans_a, A, lda, i0, mc, p0, kc, buffers.a.data());
    pack_b(trans_b, B, ldb, p0, kc, j0, nc, buffers.b.data());
    for (int64_t jr = 0; jr < nc; jr += NR) {
      const int64_t cols = std::min(NR, nc - jr);
      for (int64_t ir = 0; ir < mc; ir += MR) {
        const int64_t rows = std::min(MR, mc - ir);
        const float* a = buffers.a.data() + ir * kc;
        const float* b = buffers.b.data() + jr * kc;
        float* c = C + (i0 + ir) * ldc + j0 + jr;
        if (rows == MR && cols == NR) {
          kernel(kc, a, b, c, ldc, load_c);
          continue;
        }
        // Edge tile: run the full kernel on a local copy, write back only the valid part.
        if (load_c)
          for (int64_t r = 0; r < rows; ++r) std::memcpy(edge + r * NR, c + r * ldc, cols * sizeof(float));
        kernel(kc, a, b, edge, NR, load_c);
        for (int64_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, edge + r * NR, cols * sizeof(float));
      }
    }
  }
}

}  // namespace

const char* gemm_kernel_name() { return (!g_force_portable && cpu_has_avx2_fma()) ? "avx2-fma" : "portable"; }
void gemm_force_portable(bool force) { g_force_portable = force; }

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i) std::memset(C + i * ldc, 0, N * sizeof(float));
    return;
  }
  const bool simd = !g_force_portable && cpu_has_avx2_fma();
  if (M == 1 && !trans_a && trans_b) {
    row_times_transposed(simd, N, K, A, B, ldb, C, accumulate);
    return;
  }
  const MicroKernel kernel = simd ? micro_kernel_avx2 : micro_kernel_portable;
  const int64_t tiles_m = (M + MC - 1) / MC;
  const int64_t tiles_n = (N + NC - 1) / NC;
  const int64_t tiles = tiles_m * tiles_n;
  // Small products are not worth waking the thread team; inside an enclosing parallel region
  // OpenMP runs this loop on the calling thread alone.
  const bool parallel = tiles > 1 && M * N * K >= (1 << 18);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tiles; ++t) {
    compute_tile(kernel, trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate, (t / tiles_n) * MC,
                 (t % tiles_n) * NC);
  }
}

}  // namespace gpt
