// dropout: inverted dropout with a counter-based mask (seed from the Rng, then a hash per element),
// so masks are reproducible and independent of the thread count. DropoutMask is the mask itself,
// shared with the fused ops that apply dropout (attention, residual_projection, the embeddings).
#include "kernels/parallel.h"
#include "ops/op_kernels.h"
#include "ops/ops.h"

namespace gpt {

namespace detail {

DropoutMask DropoutMask::make(float p, Rng& rng, bool training) {
  DropoutMask mask;
  if (!training || p <= 0.0f) return mask;
  GPT_CHECK(p < 1.0f, "dropout probability must be below 1");
  mask.active = true;
  mask.p = p;
  mask.keep_scale = 1.0f / (1.0f - p);
  mask.seed = rng.next_u64();
  return mask;
}

void DropoutMask::apply_in_place(float* values, int64_t n) const {
  if (!active) return;
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
  for (int64_t i = 0; i < n; ++i) values[i] = kept(i) ? values[i] * keep_scale : 0.0f;
}

}  // namespace detail

Tensor dropout(Graph& g, const Tensor& x, float p, Rng& rng, bool training) {
  const detail::DropoutMask mask = detail::DropoutMask::make(p, rng, training);
  if (!mask.active) return x;
  const int64_t n = x.numel();
  Tensor out = g.make(x.shape, x.requires_grad());
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
  for (int64_t i = 0; i < n; ++i) out.data[i] = mask.apply(x.data[i], i);
  if (out.requires_grad())
    g.record(out, [=] {
      float* dx = x.grad_accumulator();
      const float* dout = out.grad();
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
      for (int64_t i = 0; i < n; ++i)
        if (mask.kept(i)) dx[i] += dout[i] * mask.keep_scale;
    });
  return out;
}

}  // namespace gpt
