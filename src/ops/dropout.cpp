// dropout: inverted dropout with a counter-based mask (seed from the Rng, then a hash per element),
// so masks are reproducible and independent of the thread count.
#include "ops/ops.h"

namespace gpt {

Tensor dropout(Graph& g, const Tensor& x, float p, Rng& rng, bool training) {
  if (!training || p <= 0.0f) return x;
  GPT_CHECK(p < 1.0f, "dropout probability must be below 1");
  const int64_t n = x.numel();
  const uint64_t seed = rng.next_u64();
  const float keep_scale = 1.0f / (1.0f - p);
  Tensor out = g.make(x.shape, x.requires_grad());
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) out.data[i] = detail::hash_uniform(seed, i) < p ? 0.0f : x.data[i] * keep_scale;
  if (out.requires_grad())
    g.record(out, [=] {
      float* dx = x.grad_accumulator();
      const float* dout = out.grad();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
      for (int64_t i = 0; i < n; ++i)
        if (detail::hash_uniform(seed, i) >= p) dx[i] += dout[i] * keep_scale;
    });
  return out;
}

}  // namespace gpt
