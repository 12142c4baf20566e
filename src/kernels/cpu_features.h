// What this CPU can run, detected once at run time, and which code path the vector kernels take.
// The GEMM's micro-kernel families (kernels/gemm/dispatch.cpp) and the row and range kernels
// (dropout masks, softmax rows, layernorm rows) choose from these flags; nothing else asks the CPU.
// x86-64 today; aarch64 detection (NEON, SVE) belongs here too.
#pragma once

namespace gpt {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512dq = false;
  bool avx512bf16 = false;  // VDPBF16PS
  // AMX tiles with TDPBF16PS, usable by this process: the CPU has them and Linux granted the
  // tile state (asked once, when the features are first read).
  bool amx_bf16 = false;
};
const CpuFeatures& cpu_features();

// The row and range kernels are compiled once per instruction set and the best one this CPU has
// runs. Each path computes the same bits (integer hashing, or float arithmetic in a fixed order
// without FMA contraction), which the tests check by running every path this CPU supports.
enum class VectorIsa { avx512, avx2, baseline };
inline constexpr VectorIsa kVectorIsas[] = {VectorIsa::avx512, VectorIsa::avx2, VectorIsa::baseline};
const char* vector_isa_name(VectorIsa isa);
bool cpu_supports(VectorIsa isa);
// The calling thread's path: the forced one (a ForcedVectorIsaScope), else the best this CPU
// has. Kernels that open a parallel region read it before, on the calling thread.
VectorIsa vector_isa();

// Forces `isa` on the calling thread while in scope (tests); it must be one this CPU supports.
class ForcedVectorIsaScope {
 public:
  explicit ForcedVectorIsaScope(VectorIsa isa);
  ~ForcedVectorIsaScope();
  ForcedVectorIsaScope(const ForcedVectorIsaScope&) = delete;
  ForcedVectorIsaScope& operator=(const ForcedVectorIsaScope&) = delete;

 private:
  const VectorIsa* saved_;
  VectorIsa isa_;
};

// One function per VectorIsa, the one for `isa`.
template <typename Function>
Function vector_path(VectorIsa isa, Function avx512, Function avx2, Function baseline) {
  return isa == VectorIsa::avx512 ? avx512 : isa == VectorIsa::avx2 ? avx2 : baseline;
}

// The target attributes of the VectorIsa paths (AVX-512DQ has the 64-bit multiplies dropout's
// hash needs), and the inlining that puts a shared body into each of them.
#define GPT_TARGET_AVX512 __attribute__((target("avx512f,avx512dq")))
#define GPT_TARGET_AVX2 __attribute__((target("avx2")))
#define GPT_ALWAYS_INLINE inline __attribute__((always_inline))

}  // namespace gpt
