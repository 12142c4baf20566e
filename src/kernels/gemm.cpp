#include "kernels/gemm.h"

#include "kernels/fast_math.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/aligned_buffer.h"
#include "core/check.h"
#include "kernels/parallel.h"

namespace gpt {

namespace {

// Cache blocks (in elements): an MC x KC block of packed A and a KC x NC panel of packed B stay in
// L2; one KC x NR sliver of B stays in L1. The register tile MR x NR depends on the kernel.
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

// Packing is pure copying (no arithmetic, so no effect on results) but a tenth of a training
// step: the copies are compiled for each ISA so they move whole vector registers.

// Packs op(A)[i0 : i0+mc, p0 : p0+kc] into MR-row slivers: for each k, MR consecutive values.
// Rows past mc are zero so the micro-kernel never branches on edges.
GPT_VECTOR_CLONES void pack_a(int64_t MR, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                              int64_t kc, float* out) {
  for (int64_t ir = 0; ir < mc; ir += MR, out += MR * kc) {
    const int64_t rows = std::min(MR, mc - ir);
    if (trans_a) {  // A stored [K, M]: each k is a contiguous run of rows
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = A + (p0 + k) * lda + i0 + ir;
        float* dst = out + k * MR;
        for (int64_t r = 0; r < rows; ++r) dst[r] = src[r];
        for (int64_t r = rows; r < MR; ++r) dst[r] = 0.0f;
      }
    } else {  // A stored [M, K]: each row is contiguous in k; write it with stride MR
      for (int64_t r = 0; r < rows; ++r) {
        const float* src = A + (i0 + ir + r) * lda + p0;
        for (int64_t k = 0; k < kc; ++k) out[k * MR + r] = src[k];
      }
      for (int64_t r = rows; r < MR; ++r)
        for (int64_t k = 0; k < kc; ++k) out[k * MR + r] = 0.0f;
    }
  }
}

// Packs op(B)[p0 : p0+kc, j0 : j0+nc] into NR-column slivers: for each k, NR consecutive values.
GPT_VECTOR_CLONES void pack_b_sliver(int64_t NR, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc,
                                     int64_t j, int64_t cols, float* out) {
  if (!trans_b) {  // B stored [K, N]: each k is a contiguous run of columns
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = B + (p0 + k) * ldb + j;
      float* dst = out + k * NR;
      for (int64_t c = 0; c < cols; ++c) dst[c] = src[c];
      for (int64_t c = cols; c < NR; ++c) dst[c] = 0.0f;
    }
  } else {  // B stored [N, K]: each column is contiguous in k. Transpose in 8 x 8 tiles.
    constexpr int64_t kTile = 8;
    for (int64_t k0 = 0; k0 < kc; k0 += kTile) {
      const int64_t kn = std::min(kTile, kc - k0);
      for (int64_t c0 = 0; c0 < NR; c0 += kTile)
        for (int64_t k = 0; k < kn; ++k) {
          float* dst = out + (k0 + k) * NR + c0;
          for (int64_t c = 0; c < kTile; ++c) dst[c] = c0 + c < cols ? B[(j + c0 + c) * ldb + p0 + k0 + k] : 0.0f;
        }
    }
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

// Portable: the same FMA chain per element with std::fma (6 x 16 tile).
template <int kRows, bool kDirectA>
void micro_kernel_portable(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                           bool load_c) {
  constexpr int64_t MR = 6, NR = 16;
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t j = 0; j < NR; ++j) {
      float acc = load_c ? c[r * ldc + j] : 0.0f;
      for (int64_t k = 0; k < kc; ++k) acc = std::fma(kDirectA ? a[r * lda + k] : a[k * MR + r], b[k * NR + j], acc);
      c[r * ldc + j] = acc;
    }
  }
}

using MicroKernel = void (*)(int64_t, const float*, int64_t, const float*, float*, int64_t, bool);
using MicroKernels = std::array<MicroKernel, kMaxMR>;  // [rows - 1]

// Each ISA's kernels for 1 .. MR rows, indexed by rows - 1.
template <bool kDirectA, std::size_t... R>
constexpr MicroKernels avx512_kernels(std::index_sequence<R...>) {
  return {&micro_kernel_avx512<static_cast<int>(R) + 1, kDirectA>...};
}
template <bool kDirectA, std::size_t... R>
constexpr MicroKernels avx2_kernels(std::index_sequence<R...>) {
  return {&micro_kernel_avx2<static_cast<int>(R) + 1, kDirectA>...};
}
template <bool kDirectA, std::size_t... R>
constexpr MicroKernels portable_kernels(std::index_sequence<R...>) {
  return {&micro_kernel_portable<static_cast<int>(R) + 1, kDirectA>...};
}

struct Kernel {
  MicroKernels packed_a, direct_a;
  int64_t MR, NR;
  int vector_width;
  const char* name;
};

const Kernel kAvx512{avx512_kernels<false>(std::make_index_sequence<12>()),
                     avx512_kernels<true>(std::make_index_sequence<12>()),
                     12,
                     32,
                     16,
                     "avx512"};
const Kernel kAvx2{avx2_kernels<false>(std::make_index_sequence<6>()),
                   avx2_kernels<true>(std::make_index_sequence<6>()),
                   6,
                   16,
                   8,
                   "avx2-fma"};
const Kernel kPortable{portable_kernels<false>(std::make_index_sequence<6>()),
                       portable_kernels<true>(std::make_index_sequence<6>()),
                       6,
                       16,
                       1,
                       "portable"};

const Kernel& active_kernel() {
  if (g_force_portable) return kPortable;
  if (cpu_has_avx512()) return kAvx512;
  if (cpu_has_avx2_fma()) return kAvx2;
  return kPortable;
}

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

// Grow-only buffers: after the first steps of a run no call allocates.
struct GrowableBuffer {
  AlignedBuffer<float> buffer;
  float* get(std::size_t n) {
    if (buffer.size() < n) buffer = AlignedBuffer<float>(n);
    return buffer.data();
  }
};
GrowableBuffer g_packed_b;  // shared by the team: one K block of all of op(B), packed once per call
GrowableBuffer g_packed_a;  // likewise for a transposed A

// Runs the micro-kernels of rows [i0, i0+mc) x columns [j0, j0+nc) against the shared packed B
// (slivers of NR columns, each kc x NR). A non-transposed A is read in place (packed_a null); a
// transposed one comes packed for the whole K block (MR-row slivers, each kc x MR). The last
// sliver runs the kernel for just its rows.
void multiply_block(const Kernel& kernel, const float* A, int64_t lda, int64_t p0, const float* packed_a,
                    const float* packed_b, int64_t kc, int64_t i0, int64_t mc, int64_t j0, int64_t nc, float* C,
                    int64_t ldc, bool load_c) {
  const int64_t MR = kernel.MR, NR = kernel.NR;
  alignas(64) float edge[kMaxTile];
  for (int64_t ir = 0; ir < mc; ir += MR) {
    const int64_t rows = std::min(MR, mc - ir);
    const float* a = packed_a ? packed_a + (i0 + ir) / MR * MR * kc : A + (i0 + ir) * lda + p0;
    const MicroKernel micro = (packed_a ? kernel.packed_a : kernel.direct_a)[rows - 1];
    for (int64_t jr = j0; jr < j0 + nc; jr += NR) {
      const int64_t cols = std::min(NR, j0 + nc - jr);
      const float* b = packed_b + (jr / NR) * NR * kc;
      float* c = C + (i0 + ir) * ldc + jr;
      if (cols == NR) {
        micro(kc, a, lda, b, c, ldc, load_c);
        continue;
      }
      // Edge tile: run the kernel on a local copy of full width, write back only the valid part.
      if (load_c)
        for (int64_t r = 0; r < rows; ++r) std::memcpy(edge + r * NR, c + r * ldc, cols * sizeof(float));
      micro(kc, a, lda, b, edge, NR, load_c);
      for (int64_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, edge + r * NR, cols * sizeof(float));
    }
  }
}

}  // namespace

const char* gemm_kernel_name() { return active_kernel().name; }
int gemm_vector_width() { return active_kernel().vector_width; }
void gemm_force_portable(bool force) { g_force_portable = force; }

namespace {

// The blocked product: for each K block, op(B) is packed (or taken prepacked), then the work
// items run. `prepacked` is null or holds every K block of op(B) in the packed sliver layout.
void gemm_blocked(const Kernel& kernel, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                  int64_t lda, const float* B, int64_t ldb, const float* prepacked, float* C, int64_t ldc,
                  bool accumulate) {
  // Work items: MC-row blocks times column chunks (a multiple of NR), enough of them to balance
  // the threads. op(B), and a transposed A, are packed once per K block and shared by the items.
  const int64_t NR = kernel.NR, MR = kernel.MR;
  const int64_t slivers = (N + NR - 1) / NR;
  const int64_t slivers_a = trans_a ? (M + MR - 1) / MR : 0;
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
  float* packed_b = prepacked ? nullptr
                              : (omp_in_parallel() ? own_packed_b : g_packed_b)
                                    .get(static_cast<std::size_t>(slivers * NR * std::min(K, KC)));
  float* packed_a = trans_a ? (omp_in_parallel() ? own_packed_a : g_packed_a)
                                  .get(static_cast<std::size_t>(slivers_a * MR * std::min(K, KC)))
                            : nullptr;
  for (int64_t p0 = 0; p0 < K; p0 += KC) {
    const int64_t kc = std::min(KC, K - p0);
    const bool load_c = accumulate || p0 > 0;
    const float* block_b = prepacked ? prepacked + p0 * slivers * NR : packed_b;
    // The work of one K block, this thread's contiguous share of each loop. No worksharing
    // constructs: the serial case may run inside a caller's parallel loop (attention), where an
    // orphaned `omp for` would bind to the caller's team.
    auto k_block = [&](int64_t thread, int64_t team) {
      const int64_t pack_b_items = prepacked ? 0 : slivers;
      const int64_t packs = pack_b_items + slivers_a;
      for (int64_t s = packs * thread / team; s < packs * (thread + 1) / team; ++s) {
        if (s < pack_b_items) {
          pack_b_sliver(NR, trans_b, B, ldb, p0, kc, s * NR, std::min(NR, N - s * NR), packed_b + s * NR * kc);
        } else {
          const int64_t i = (s - pack_b_items) * MR;
          pack_a(MR, true, A, lda, i, std::min(MR, M - i), p0, kc, packed_a + i * kc);
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

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  if (zero_or_trivial(M, N, K, C, ldc, accumulate)) return;
  const Kernel& kernel = active_kernel();
  if (M == 1 && !trans_a && trans_b) {
    row_times_transposed(kernel.vector_width > 1, N, K, A, B, ldb, C, accumulate);
    return;
  }
  gemm_blocked(kernel, trans_a, trans_b, M, N, K, A, lda, B, ldb, nullptr, C, ldc, accumulate);
}

PackedMatrix::PackedMatrix(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb) : K_(K), N_(N) {
  const Kernel& kernel = active_kernel();
  nr_ = kernel.NR;
  const int64_t slivers = (N + nr_ - 1) / nr_;
  data_ = AlignedBuffer<float>(static_cast<std::size_t>(std::max<int64_t>(1, K * slivers * nr_)));
  for (int64_t p0 = 0; p0 < K; p0 += KC) {
    const int64_t kc = std::min(KC, K - p0);
    for (int64_t s = 0; s < slivers; ++s)
      pack_b_sliver(nr_, trans_b, B, ldb, p0, kc, s * nr_, std::min(nr_, N - s * nr_),
                    data_.data() + p0 * slivers * nr_ + s * nr_ * kc);
  }
}

void gemm_prepacked(int64_t M, const float* A, int64_t lda, const PackedMatrix& B, float* C, int64_t ldc,
                    bool accumulate) {
  if (zero_or_trivial(M, B.N(), B.K(), C, ldc, accumulate)) return;
  const Kernel& kernel = active_kernel();
  GPT_CHECK(kernel.NR == B.nr(), "matrix packed for another GEMM kernel");
  gemm_blocked(kernel, false, false, M, B.N(), B.K(), A, lda, nullptr, 0, B.data(), C, ldc, accumulate);
}

void gemm_prepacked_columns(int64_t M, const float* A, int64_t lda, const PackedMatrix& B, int64_t column_begin,
                            int64_t column_end, float* C, int64_t ldc, bool accumulate) {
  const Kernel& kernel = active_kernel();
  GPT_CHECK(kernel.NR == B.nr(), "matrix packed for another GEMM kernel");
  GPT_CHECK(column_begin % B.nr() == 0 && column_begin <= column_end && column_end <= B.N(), "column range");
  if (M <= 0 || column_begin == column_end) return;
  if (B.K() == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i)
        std::memset(C + i * ldc + column_begin, 0, (column_end - column_begin) * sizeof(float));
    return;
  }
  const int64_t slivers = (B.N() + B.nr() - 1) / B.nr();
  for (int64_t p0 = 0; p0 < B.K(); p0 += KC) {
    const int64_t kc = std::min(KC, B.K() - p0);
    // Row blocks of MC as gemm_blocked makes them, so partial slivers fall where they do there.
    for (int64_t i0 = 0; i0 < M; i0 += MC)
      multiply_block(kernel, A, lda, p0, nullptr, B.data() + p0 * slivers * B.nr(), kc, i0, std::min(MC, M - i0),
                     column_begin, column_end - column_begin, C, ldc, accumulate || p0 > 0);
  }
}

void row_times_transposed_serial(int64_t N, int64_t K, const float* a, const float* B, int64_t ldb, float* c,
                                 bool accumulate) {
  const bool simd = active_kernel().vector_width > 1;
  for (int64_t j0 = 0; j0 < N; j0 += kDotBlock)
    row_times_transposed_block(simd, j0, std::min(kDotBlock, N - j0), K, a, B, ldb, c, accumulate);
}

}  // namespace gpt
