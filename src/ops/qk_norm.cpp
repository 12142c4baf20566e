// qk_rmsnorm: QK-norm, a weightless RMSNorm over each q and k head of a packed q|k|v tensor
// (kernels/rmsnorm.h: head_rmsnorm_*); v is copied. Keeps each head's 1/rms for backward.
#include <cstring>

#include "kernels/parallel.h"
#include "kernels/rmsnorm.h"
#include "ops/ops.h"

namespace gpt {

Tensor qk_rmsnorm(Graph& g, const Tensor& qkv, int n_head, int n_kv_head) {
  GPT_CHECK(qkv.shape.rank == 3 && qkv.shape[2] % (n_head + 2 * n_kv_head) == 0,
            "qk_rmsnorm input must be [B, T, (H + 2 KV) hs], got " + qkv.shape.str());
  const int64_t width = qkv.shape[2], rows = qkv.shape.rows(), hs = width / (n_head + 2 * n_kv_head);
  const int64_t heads = n_head + n_kv_head, normed = heads * hs;
  Tensor y = g.make(qkv.shape, qkv.requires_grad());
  float* rstd = y.requires_grad() ? g.scratch(static_cast<std::size_t>(rows * heads)) : nullptr;
  head_rmsnorm_forward(qkv.data, y.data, rstd, rows, width, heads, hs);
  const float* x = qkv.data;
  float* out = y.data;
#pragma omp parallel for schedule(static) if (rows * width > kParallelMinElementwise)
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(out + r * width + normed, x + r * width + normed, (width - normed) * sizeof(float));
  if (y.requires_grad()) {
    g.record(y, [=] {
      const float* dy = y.grad();
      float* dx = qkv.grad_accumulator();
      head_rmsnorm_backward(x, rstd, dy, dx, rows, width, heads, hs);
#pragma omp parallel for schedule(static) if (rows * width > kParallelMinElementwise)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = normed; j < width; ++j) dx[r * width + j] += dy[r * width + j];
    });
  }
  return y;
}

}  // namespace gpt
