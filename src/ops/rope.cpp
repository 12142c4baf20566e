// rope: rotary position embeddings on the q and k heads of a packed q|k|v tensor (kernels/rope.h),
// at positions 0 .. T-1; v is copied. Backward rotates the gradient back (the transpose).
#include "kernels/rope.h"

#include <cstring>

#include "kernels/parallel.h"
#include "ops/ops.h"

namespace gpt {

Tensor rope(Graph& g, const Tensor& qkv, int n_head, int n_kv_head, const RopeTable& table) {
  GPT_CHECK(qkv.shape.rank == 3, "rope input must be [B, T, (H + 2 KV) hs], got " + qkv.shape.str());
  const int64_t B = qkv.shape[0], T = qkv.shape[1], width = qkv.shape[2];
  const int64_t hs = 2 * table.half, rotated = (n_head + n_kv_head) * hs;
  GPT_CHECK(hs > 0 && width == rotated + n_kv_head * hs,
            "rope: " + qkv.shape.str() + " is not q|k|v of heads of size " + std::to_string(hs));
  GPT_CHECK(T <= table.positions, "rope table shorter than the sequence");
  Tensor y = g.make(qkv.shape, qkv.requires_grad());
  const int64_t rows = B * T, heads = n_head + n_kv_head;
  const float* x = qkv.data;
  float* out = y.data;
#pragma omp parallel for schedule(static) if (rows * width > kParallelMinElementwise)
  for (int64_t r = 0; r < rows; ++r) {
    rope_rotate(table, r % T, x + r * width, out + r * width, heads);
    std::memcpy(out + r * width + rotated, x + r * width + rotated, (width - rotated) * sizeof(float));
  }
  if (y.requires_grad()) {
    const RopeTable* t = &table;
    g.record(y, [=] {
      const float* dy = y.grad();
      float* dx = qkv.grad_accumulator();
#pragma omp parallel for schedule(static) if (rows * width > kParallelMinElementwise)
      for (int64_t r = 0; r < rows; ++r) {
        rope_rotate_backward(*t, r % T, dy + r * width, dx + r * width, heads);
        for (int64_t j = rotated; j < width; ++j) dx[r * width + j] += dy[r * width + j];
      }
    });
  }
  return y;
}

}  // namespace gpt
