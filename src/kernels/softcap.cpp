// Soft-capping kernels: parallel over fixed chunks above a size, each a vectorised range.
#include "kernels/softcap.h"

#include <algorithm>

#include "kernels/fast_math.h"
#include "kernels/parallel.h"

namespace gpt {

namespace {

constexpr int64_t kChunk = 4096;

// x / cap as PyTorch writes it (logits / cap), not x * (1 / cap).
GPT_VECTOR_CLONES void softcap_forward_range(const float* x, float* y, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) y[i] = cap * fast_tanh(x[i] / cap);
}

GPT_VECTOR_CLONES void softcap_backward_range(const float* x, const float* dy, float* dx, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) {
    const float t = fast_tanh(x[i] / cap);
    dx[i] += dy[i] * (1.0f - t * t);
  }
}

}  // namespace

void softcap_forward(const float* x, float* y, int64_t n, float cap) {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwiseTranscendental)
  for (int64_t c = 0; c < n; c += kChunk) softcap_forward_range(x + c, y + c, std::min(kChunk, n - c), cap);
}

void softcap_backward(const float* x, const float* dy, float* dx, int64_t n, float cap) {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwiseTranscendental)
  for (int64_t c = 0; c < n; c += kChunk) softcap_backward_range(x + c, dy + c, dx + c, std::min(kChunk, n - c), cap);
}

}  // namespace gpt
