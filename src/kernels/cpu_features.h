// What this CPU can run, detected once at run time and capped by GPT_MAX_ISA, and which code path
// the vector kernels take. The GEMM's micro-kernel families (kernels/gemm/dispatch.cpp), the row
// and range kernels (dropout masks, softmax rows, layernorm rows) and the peak probes choose from
// these flags; nothing else asks the CPU. x86-64 (cpuid) and aarch64 (getauxval on Linux,
// sysctlbyname on macOS); on any other CPU only the portable code runs.
#pragma once

#include <optional>
#include <string>

// The architecture the code is compiled for: x86-64 compiles the x86 paths (target attributes,
// <immintrin.h>), aarch64 the NEON ones (<arm_neon.h>); each family file of kernels/gemm/ is built
// only for its architecture (src/CMakeLists.txt).
#if defined(__x86_64__) || defined(_M_X64)
#define GPT_X86_64 1
#elif defined(__aarch64__) || defined(_M_ARM64)
#define GPT_AARCH64 1
#endif

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
  bool neon = false;  // aarch64's Advanced SIMD (every aarch64 CPU has it)
};
// Whether AMX's bfloat16 tiles run here: the tiles and the AVX512_BF16 their packing uses, which
// comes with AMX-BF16 on every CPU so far (checked all the same).
inline bool runs_amx_tiles(const CpuFeatures& features) { return features.amx_bf16 && features.avx512bf16; }
// What this process may use: the CPU's features less those above GPT_MAX_ISA's cap, so every
// kernel choice, on every thread, sees the capped CPU.
const CpuFeatures& cpu_features();

// GPT_MAX_ISA, a cap on the instruction sets the process uses (as oneDNN's ONEDNN_MAX_CPU_ISA), so
// that an AVX-512 machine can measure what an AVX2 one runs. Each level allows those below it on
// its architecture (x86-64: portable < avx2 < avx512 < avx512_bf16 < amx; aarch64: portable <
// neon); a level the architecture does not have caps nothing. It changes which kernels run, never
// the bits: every family of a dtype and arithmetic computes the same ones.
enum class MaxIsa { portable, avx2, avx512, avx512_bf16, amx, neon };
inline constexpr MaxIsa kMaxIsas[] = {MaxIsa::portable,    MaxIsa::avx2, MaxIsa::avx512,
                                      MaxIsa::avx512_bf16, MaxIsa::amx,  MaxIsa::neon};
inline constexpr const char* kMaxIsaVariable = "GPT_MAX_ISA";
const char* max_isa_name(MaxIsa cap);

struct MaxIsaSetting {
  std::optional<MaxIsa> cap;  // none: no cap
  std::string error;          // why the value names no level (empty when it does)
};
// GPT_MAX_ISA's value (nullptr: unset), case-insensitive; unset or empty is no cap.
MaxIsaSetting parse_max_isa(const char* value);
// This process's setting, read once. An invalid value caps nothing here: gpt's main refuses it
// before any kernel is chosen, so the library never has to.
const MaxIsaSetting& max_isa_setting();
// `detected` as a CPU without the instruction sets above `cap` would report it.
CpuFeatures capped(CpuFeatures detected, MaxIsa cap);

// The row and range kernels are compiled once per instruction set and the best one this CPU has
// runs. Each path computes the same bits (integer hashing, or float arithmetic in a fixed order
// without FMA contraction), which the tests check by running every path this CPU supports.
// On aarch64 NEON is part of the baseline: the compiler vectorises the baseline paths with it, so
// the neon path differs only where a kernel has NEON code of its own (dropout masks).
enum class VectorIsa { avx512, avx2, neon, baseline };
#if GPT_X86_64
inline constexpr VectorIsa kVectorIsas[] = {VectorIsa::avx512, VectorIsa::avx2, VectorIsa::baseline};
#elif GPT_AARCH64
inline constexpr VectorIsa kVectorIsas[] = {VectorIsa::neon, VectorIsa::baseline};
#else
inline constexpr VectorIsa kVectorIsas[] = {VectorIsa::baseline};
#endif
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

// One function per VectorIsa of this architecture, the one for `isa`.
template <typename Function>
Function vector_path(VectorIsa isa, Function avx512, Function avx2, Function baseline) {
  return isa == VectorIsa::avx512 ? avx512 : isa == VectorIsa::avx2 ? avx2 : baseline;
}
template <typename Function>
Function vector_path(VectorIsa isa, Function neon, Function baseline) {
  return isa == VectorIsa::neon ? neon : baseline;
}

// The calling thread's path of a kernel whose functions are NAME_avx512, NAME_avx2 and
// NAME_baseline on x86-64, NAME_neon and NAME_baseline on aarch64, NAME_baseline elsewhere.
#if GPT_X86_64
#define GPT_VECTOR_PATH(name) ::gpt::vector_path(::gpt::vector_isa(), name##_avx512, name##_avx2, name##_baseline)
#elif GPT_AARCH64
#define GPT_VECTOR_PATH(name) ::gpt::vector_path(::gpt::vector_isa(), name##_neon, name##_baseline)
#else
#define GPT_VECTOR_PATH(name) name##_baseline
#endif

// The target attributes of the x86 VectorIsa paths (AVX-512DQ has the 64-bit multiplies dropout's
// hash needs), and the inlining that puts a shared body into each path.
#if GPT_X86_64
#define GPT_TARGET_AVX512 __attribute__((target("avx512f,avx512dq")))
#define GPT_TARGET_AVX2 __attribute__((target("avx2")))
#endif
#define GPT_ALWAYS_INLINE inline __attribute__((always_inline))

}  // namespace gpt
