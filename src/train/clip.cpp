#include "train/clip.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/fast_math.h"

namespace gpt {

namespace {

// Sum of squares in 8 double lanes (element k into lane k % 8), lanes added in order: the loop
// vectorises and the result is the same on every ISA.
GPT_VECTOR_CLONES double sum_of_squares(const float* g, int64_t n) {
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(g[k + l]) * static_cast<double>(g[k + l]);
  for (int l = 0; k + l < n; ++l) lanes[l] += static_cast<double>(g[k + l]) * static_cast<double>(g[k + l]);
  double s = 0.0;
  for (double lane : lanes) s += lane;
  return s;
}

}  // namespace

void chunk_sums_of_squares(const float* g, int64_t total, int64_t first, int64_t last, double* sums) {
#pragma omp parallel for schedule(static)
  for (int64_t c = first; c < last; ++c)
    sums[c - first] = sum_of_squares(g + c * kNormChunk, std::min(kNormChunk, total - c * kNormChunk));
}

double norm_of_chunk_sums(const double* sums, int64_t chunks) {
  double sum = 0.0;
  for (int64_t c = 0; c < chunks; ++c) sum += sums[c];
  return std::sqrt(sum);
}

float clip_coefficient(double norm, double max_norm) {
  if (!(max_norm > 0.0) || !std::isfinite(norm)) return 1.0f;
  return static_cast<float>(std::min(1.0, max_norm / (norm + 1e-6)));
}

void scale_floats(float* g, int64_t n, float coefficient) {
  if (coefficient == 1.0f) return;  // x * 1 == x: skipping changes no bit
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) g[k] *= coefficient;
}

double clip_grad_norm(ParamStore& params, double max_norm) {
  const auto total = static_cast<int64_t>(params.padded_floats());  // padding is always zero
  const int64_t chunks = norm_chunks(total);
  thread_local std::vector<double> sums;  // grows once: no allocation per step
  sums.resize(static_cast<std::size_t>(chunks));
  chunk_sums_of_squares(params.grad(), total, 0, chunks, sums.data());
  const double norm = norm_of_chunk_sums(sums.data(), chunks);
  scale_floats(params.grad(), total, clip_coefficient(norm, max_norm));
  return norm;
}

}  // namespace gpt
