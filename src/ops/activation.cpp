// activate: an activation as an op of its own (the primitive the fused residual_projection is
// tested against, for every activation); its kernels live in kernels/activation.cpp.
#include "kernels/activation.h"
#include "ops/ops.h"

namespace gpt {

Tensor activate(Graph& g, const Tensor& x, Activation act) {
  const int64_t n = x.numel();
  Tensor y = g.make(x.shape, x.requires_grad());
  activation_forward(act, x.data, y.data, n);
  if (y.requires_grad()) g.record(y, [=] { activation_backward(act, x.data, y.grad(), x.grad_accumulator(), n); });
  return y;
}

}  // namespace gpt
