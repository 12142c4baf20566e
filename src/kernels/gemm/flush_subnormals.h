// MXCSR's flush-to-zero and denormals-are-zero for this thread while in scope (when `on`): how
// the SIMD families that run the bfloat16 arithmetic on float32 FMAs get its flushing
// (kernels/bfloat16.h). x86 only: on other CPUs the bfloat16 arithmetic runs on the portable
// family, which flushes in code, so no family there asks for it.
#pragma once

#include "core/check.h"
#include "kernels/cpu_features.h"

#if GPT_X86_64
#include <immintrin.h>
#endif

namespace gpt::gemm_detail {

class FlushSubnormals {
 public:
  explicit FlushSubnormals(bool on) : on_(on) {
    if (!on_) return;
#if GPT_X86_64
    saved_ = _mm_getcsr();
    _mm_setcsr(saved_ | 0x8040u);
#else
    GPT_CHECK(false, "flushing subnormals through MXCSR on a CPU without it");
#endif
  }
  ~FlushSubnormals() {
#if GPT_X86_64
    if (on_) _mm_setcsr(saved_);
#endif
  }
  FlushSubnormals(const FlushSubnormals&) = delete;
  FlushSubnormals& operator=(const FlushSubnormals&) = delete;

 private:
  bool on_;
  [[maybe_unused]] unsigned saved_ = 0;
};

}  // namespace gpt::gemm_detail
