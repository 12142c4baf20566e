// layernorm over the last axis as an op: the kernels (kernels/layernorm.cpp) plus the tape record.
#include "kernels/layernorm.h"
#include "ops/ops.h"

namespace gpt {

Tensor layernorm(Graph& g, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const int64_t C = x.shape.last(), rows = x.shape.rows();
  GPT_CHECK(weight.shape == Shape{C}, "layernorm weight " + weight.shape.str() + " for input " + x.shape.str());
  if (defined(bias)) GPT_CHECK(bias.shape == Shape{C}, "layernorm bias " + bias.shape.str());
  Tensor y = g.make(x.shape, detail::any_grad(x, weight) || bias.requires_grad());
  float* mean = g.scratch(rows);
  float* rstd = g.scratch(rows);
  layernorm_forward(x.data, weight.data, bias.data, y.data, mean, rstd, rows, C);
  if (y.requires_grad())
    g.record(y, [=] {
      layernorm_backward(x.data, weight.data, mean, rstd, y.grad(), x.grad_accumulator(), weight.grad_accumulator(),
                         bias.grad_accumulator(), rows, C);
    });
  return y;
}

}  // namespace gpt
