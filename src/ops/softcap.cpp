// softcap: cap * tanh(x / cap), elementwise (the model's optional logit soft-cap); its kernels
// live in kernels/softcap.cpp, shared with the sampler's executor.
#include "kernels/softcap.h"
#include "ops/ops.h"

namespace gpt {

Tensor softcap(Graph& g, const Tensor& x, float cap) {
  GPT_CHECK(cap > 0, "softcap needs a positive cap, got " + std::to_string(cap));
  const int64_t n = x.numel();
  Tensor y = g.make(x.shape, x.requires_grad());
  softcap_forward(x.data, y.data, n, cap);
  if (y.requires_grad()) g.record(y, [=] { softcap_backward(x.data, y.grad(), x.grad_accumulator(), n, cap); });
  return y;
}

}  // namespace gpt
