// activate: an activation as an op of its own (the primitive the fused residual_projection is
// tested against, for every activation); its kernels live in kernels/activation.cpp. A gated
// activation (swiglu) halves the last dimension: each row [gate | up] gives one row of width/2.
#include "kernels/activation.h"
#include "ops/ops.h"

namespace gpt {

Tensor activate(Graph& g, const Tensor& x, Activation act) {
  const int64_t rows = x.shape.rows(), in_width = x.shape.last(), width = is_gated(act) ? in_width / 2 : in_width;
  GPT_CHECK(x.shape.rank >= 1 && activation_input_width(act, width) == in_width,
            std::string(activation_name(act)) + " input " + x.shape.str() + " is not [..., 2 * width] ([gate | up])");
  Shape out_shape = x.shape;
  out_shape.dims[out_shape.rank - 1] = width;
  Tensor y = g.make(out_shape, x.requires_grad());
  activation_forward(act, x.data, y.data, rows, width);
  if (y.requires_grad())
    g.record(y, [=] { activation_backward(act, x.data, y.grad(), x.grad_accumulator(), rows, width); });
  return y;
}

}  // namespace gpt
