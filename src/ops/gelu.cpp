// gelu: the exact (erf) GELU as an op of its own (the primitive the fused residual_projection is
// tested against); its kernels live in kernels/activation.cpp.
#include "kernels/activation.h"
#include "ops/ops.h"

namespace gpt {

Tensor gelu(Graph& g, const Tensor& x) {
  const int64_t n = x.numel();
  Tensor y = g.make(x.shape, x.requires_grad());
  gelu_forward(x.data, y.data, n);
  if (y.requires_grad()) g.record(y, [=] { gelu_backward(x.data, y.grad(), x.grad_accumulator(), n); });
  return y;
}

}  // namespace gpt
