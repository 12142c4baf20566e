// Single-precision matrix multiply, the one kernel that most of the time goes into.
//   C[M,N] = op(A) op(B)          (accumulate = false)
//   C[M,N] += op(A) op(B)         (accumulate = true)
// op(A) is A stored [M,K] (trans_a = false) or A^T with A stored [K,M]; op(B) likewise with B
// stored [K,N] or [N,K]. Leading dimensions are in floats. Transposes are handled while packing,
// never materialised.
// Results do not depend on the thread count or the code path: every C element is summed in the
// same k order by exactly one thread, with a fused multiply-add per term, both in the AVX2+FMA
// micro-kernel (or AVX-512's) and in the portable one (std::fma), so all paths are bit-identical.
// A single row times a transposed matrix (M = 1, trans_b: a Linear layer on one token) takes a
// dot-product path instead of packing; its summation order differs from the tiled path's.
#pragma once

#include <cstdint>

#include "core/aligned_buffer.h"

namespace gpt {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate);

// op(B) packed once into the GEMM's internal layout, for a right-hand matrix that many products
// reuse unchanged (inference weights): C[M,N] (+)= A[M,K] op(B), with A not transposed, then
// skips the per-call packing. Results are the same bits as gemm()'s. Packed for the kernel active
// when it was built (gemm_force_portable afterwards is an error).
class PackedMatrix {
 public:
  PackedMatrix() = default;
  PackedMatrix(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb);
  int64_t K() const { return K_; }
  int64_t N() const { return N_; }
  int64_t nr() const { return nr_; }
  const float* data() const { return data_.data(); }

 private:
  int64_t K_ = 0, N_ = 0, nr_ = 0;
  AlignedBuffer<float> data_;
};
void gemm_prepacked(int64_t M, const float* A, int64_t lda, const PackedMatrix& B, float* C, int64_t ldc,
                    bool accumulate);

// For callers that run a team of threads themselves and give each thread a share of the output
// columns (the sampler's forward: one parallel region per step). Both run on the calling thread
// only and give the same bits as the full products, whatever the split.
// gemm_prepacked restricted to columns [column_begin, column_end); column_begin is a multiple of
// B.nr() (column_end may be N).
void gemm_prepacked_columns(int64_t M, const float* A, int64_t lda, const PackedMatrix& B, int64_t column_begin,
                            int64_t column_end, float* C, int64_t ldc, bool accumulate);
// gemm with M = 1, trans_b: c[0..N) (+)= a[0..K) B^T for B stored [N, K] (the dot-product path).
void row_times_transposed_serial(int64_t N, int64_t K, const float* a, const float* B, int64_t ldb, float* c,
                                 bool accumulate);

// Which micro-kernel gemm() uses, chosen from the CPU's features at run time: "avx512",
// "avx2-fma" or "portable"; and its vector width in floats (1 for portable).
const char* gemm_kernel_name();
int gemm_vector_width();
// Forces the portable micro-kernel (tests compare both paths bit for bit).
void gemm_force_portable(bool force);

}  // namespace gpt
