// MXCSR's flush-to-zero and denormals-are-zero for this thread while in scope (when `on`): how
// the SIMD families that run the bfloat16 arithmetic on float32 FMAs get its flushing
// (kernels/bfloat16.h). x86 only; an aarch64 family would set FPCR's FZ bit instead.
#pragma once

#include <immintrin.h>

namespace gpt::gemm_detail {

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

}  // namespace gpt::gemm_detail
