// Single-precision matrix multiply, the one kernel that most of the time goes into.
//   C[M,N] = op(A) op(B)          (accumulate = false)
//   C[M,N] += op(A) op(B)         (accumulate = true)
// op(A) is A stored [M,K] (trans_a = false) or A^T with A stored [K,M]; op(B) likewise with B
// stored [K,N] or [N,K]. Leading dimensions are in floats. Transposes are never materialised:
// float32 micro-kernels read op(A) in place in either storage order, and op(B) and bfloat16
// operands are transposed while they are packed.
// Results do not depend on the thread count or the code path: every C element is summed in the
// same k order by exactly one thread, with a fused multiply-add per term, both in the AVX2+FMA
// micro-kernel (or AVX-512's) and in the portable one (std::fma), so all paths are bit-identical.
// A single row times a transposed matrix (M = 1, trans_b: a Linear layer on one token) takes a
// dot-product path instead of packing; its summation order differs from the tiled path's.
//
// With bfloat16 inputs (Dtype::bfloat16) both operands are rounded to bfloat16 while they are
// packed and each C element is accumulated in float32 over pairs of k, in k order, with the
// arithmetic of AVX512_BF16's VDPBF16PS (kernels/bfloat16.h): that instruction where the CPU has
// it, an exact emulation elsewhere, the same bits on both and on any thread count. Every shape,
// M = 1 included, takes the tiled path.
//
// Any thread may multiply at any time: a call's state (its kernel, its packed operands) belongs to
// the calling thread. gemm.cpp is the blocked driver; kernels/gemm/ holds its parts: the packing,
// one file per micro-kernel family, the dispatch among them, and the one-row path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/aligned_buffer.h"
#include "kernels/cpu_features.h"
#include "kernels/dtype.h"

namespace gpt {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate, Dtype inputs = Dtype::float32);

// op(B) packed once into the GEMM's internal layout, for a right-hand matrix that many products
// reuse unchanged (inference weights): C[M,N] (+)= A[M,K] op(B), with A not transposed, then
// skips the per-call packing. Results are the same bits as gemm()'s with the same `inputs`
// (bfloat16: the weights are rounded once, here). Packed for the kernel the building thread
// would run, which every product with it then runs, whatever is forced later.
class PackedMatrix {
 public:
  PackedMatrix() = default;
  PackedMatrix(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, Dtype inputs = Dtype::float32);
  // Packs another op(B) into this matrix, keeping its storage when that is large enough: a loop
  // that repacks per-thread matrices (attention's keys and values) allocates nothing once warm.
  void pack(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, Dtype inputs = Dtype::float32);
  int64_t K() const { return K_; }
  int64_t N() const { return N_; }
  int64_t nr() const { return nr_; }
  Dtype dtype() const { return dtype_; }
  const char* kernel_name() const { return kernel_name_; }
  const float* data() const { return data_.data(); }  // bfloat16 pairs for Dtype::bfloat16

 private:
  int64_t K_ = 0, N_ = 0, nr_ = 0;
  Dtype dtype_ = Dtype::float32;
  const char* kernel_name_ = nullptr;
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

// Which micro-kernel gemm() uses on the calling thread, chosen from the CPU's features at run time
// (or forced): one of gemm_kernels(Dtype::float32) for float32 inputs ("avx512", "avx2-fma" or
// "portable"), one of gemm_kernels(Dtype::bfloat16) for bfloat16; and the float32 kernel's vector
// width in floats (1 for portable).
const char* gemm_kernel_name(Dtype inputs = Dtype::float32);
int gemm_vector_width();
// For logs: the products' input format and the kernel that runs them (saying so when bfloat16 is
// emulated, which is exact but slower than float32), and the GPT_MAX_ISA cap if there is one.
std::string describe_matmul(Dtype inputs);
// For `gpt --version`: the kernels a run here chooses (float32, bfloat16, the row kernels), and
// the cap if there is one: "float32 avx2-fma, bfloat16 avx2-fma-bf16, rows avx2; GPT_MAX_ISA=avx2".
std::string describe_kernels();
// The kernels this CPU can run for `inputs`, the automatic choice's candidates fastest first. All
// of one dtype give the same bits. float32: "avx512", "avx2-fma" (float32 FMAs), "portable".
// bfloat16: "avx512-bf16" (VDPBF16PS), "avx512-fma-bf16", "avx2-fma-bf16" (float32 FMAs on rounded
// inputs), "portable-bf16".
std::vector<const char*> gemm_kernels(Dtype inputs);
// The bfloat16 kernels of one arithmetic this CPU runs (sequential: as above; tiles: "amx-bf16"
// where AMX is usable, and "portable-amx-bf16", its emulation, everywhere).
std::vector<const char*> bfloat16_kernels(Bf16Arithmetic arithmetic);
inline constexpr const char* kVdpbf16psKernel = "avx512-bf16";
inline constexpr const char* kAmxKernel = "amx-bf16";
inline constexpr const char* kPortableAmxKernel = "portable-amx-bf16";

// The arithmetic of this process's bfloat16 products (sequential or tiles): the fastest one here
// until set (by a run's `bf16_arithmetic` setting, before its products start; automatic: the
// fastest). A kernel forced on a thread (ForcedKernelScope) brings its own arithmetic.
Bf16Arithmetic fastest_bf16_arithmetic();
Bf16Arithmetic bf16_arithmetic();
void set_bf16_arithmetic(Bf16Arithmetic arithmetic);
// Whether this CPU's VDPBF16PS outruns its FMAs (measured once: on Zen 5 it does twice the
// multiply-adds; on Sapphire Rapids half), so that sequential bfloat16 products run on it; false
// without AVX512_BF16 (or above GPT_MAX_ISA's cap).
bool vdpbf16ps_outruns_fmas();
// What a run's "dtype": "auto" becomes, and why, in words for its log.
struct AutoDtype {
  Dtype dtype;
  std::string reason;
};
// The rule, for any CPU's (capped) features: bfloat16 where the bfloat16 products of `arithmetic`
// (automatic: the fastest, tiles where AMX runs) run on bfloat16 instructions, AMX's TDPBF16PS
// for tiles or VDPBF16PS for sequential where it outruns the FMAs; float32 elsewhere, where they
// would be float32 FMAs on rounded inputs (or AMX emulated): no faster, and less precise. `cap`
// is only named in the reason. aarch64 has none: its NEON kernels have no bfloat16 products.
AutoDtype choose_auto_dtype(const CpuFeatures& features, Bf16Arithmetic arithmetic, bool vdpbf16ps_outruns_fmas,
                            std::optional<MaxIsa> cap);
// The rule on this process's CPU as GPT_MAX_ISA caps it (measuring VDPBF16PS once where it exists).
AutoDtype auto_dtype(Bf16Arithmetic arithmetic);
// Whether bfloat16 products run on VDPBF16PS now (else on FMAs).
bool gemm_bfloat16_uses_vdpbf16ps();

// Forces the kernel of `inputs`' products on the calling thread while in scope (tests, benchmarks),
// then restores the previous choice; nullptr: the automatic choice. The product's OpenMP threads
// run what the calling thread chose; other threads are not affected. `kernel` must be one of
// gemm_kernels(inputs), or for bfloat16 one of bfloat16_kernels(either arithmetic).
class ForcedKernelScope {
 public:
  ForcedKernelScope(Dtype inputs, const char* kernel);
  ~ForcedKernelScope();
  ForcedKernelScope(const ForcedKernelScope&) = delete;
  ForcedKernelScope& operator=(const ForcedKernelScope&) = delete;

 private:
  Dtype inputs_;
  const char* saved_;
};

}  // namespace gpt
