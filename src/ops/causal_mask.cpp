// causal_mask_fill: sets entries above the diagonal of the last two axes to a value (for the
// causal mask, -inf before softmax); gradient flows only through the kept entries.
#include "ops/ops.h"

namespace gpt {

Tensor causal_mask_fill(Graph& g, const Tensor& x, float value) {
  GPT_CHECK(x.shape.rank >= 2 && x.shape[-1] == x.shape[-2], "causal mask needs [..., T, T], got " + x.shape.str());
  const int64_t T = x.shape[-1], matrices = x.numel() / (T * T);
  Tensor out = g.make(x.shape, x.requires_grad());
  for (int64_t m = 0; m < matrices; ++m)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) {
        const int64_t at = (m * T + i) * T + j;
        out.data[at] = j > i ? value : x.data[at];
      }
  if (out.requires_grad())
    g.record(out, [=] {
      float* dx = x.grad_accumulator();
      const float* dout = out.grad();
      for (int64_t m = 0; m < matrices; ++m)
        for (int64_t i = 0; i < T; ++i)
          for (int64_t j = 0; j <= i; ++j) dx[(m * T + i) * T + j] += dout[(m * T + i) * T + j];
    });
  return out;
}

}  // namespace gpt
