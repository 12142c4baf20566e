// linear: y = x W^T + b with W stored [out, in] as PyTorch stores it.
// Forward starts each row of y at b and lets the gemm accumulate onto it (bias add fused);
// backward: dx += dy W, dW += dy^T x, db += column sums of dy.
#include <cstring>

#include "kernels/gemm.h"
#include "kernels/row_sum.h"
#include "ops/op_kernels.h"
#include "ops/ops.h"

namespace gpt {

namespace detail {

void linear_forward(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t in, int64_t out,
                    Dtype inputs) {
  if (b)
    for (int64_t r = 0; r < rows; ++r) std::memcpy(y + r * out, b, out * sizeof(float));
  gemm(false, true, rows, out, in, x, in, w, in, y, out, b != nullptr, inputs);
}

void linear_backward(const float* x, const float* w, const float* dy, Tensor::GradTarget dx, float* dw, float* db,
                     int64_t rows, int64_t in, int64_t out, Dtype inputs) {
  if (dx.data) gemm(false, false, rows, in, out, dy, out, w, in, dx.data, in, dx.accumulate, inputs);
  if (dw) gemm(true, false, out, in, rows, dy, out, x, in, dw, in, true, inputs);
  if (db) accumulate_column_sums(dy, rows, out, db);
}

}  // namespace detail

Tensor linear(Graph& g, const Tensor& x, const Tensor& weight, const Tensor& bias, Dtype inputs) {
  GPT_CHECK(weight.shape.rank == 2, "linear weight must be [out, in], got " + weight.shape.str());
  const int64_t in = weight.shape[1], out_features = weight.shape[0], rows = x.shape.rows();
  GPT_CHECK(x.shape.last() == in, "linear input " + x.shape.str() + " does not match weight " + weight.shape.str());
  if (defined(bias)) GPT_CHECK(bias.shape == Shape{out_features}, "linear bias shape " + bias.shape.str());
  Shape out_shape = x.shape;
  out_shape.dims[out_shape.rank - 1] = out_features;
  Tensor y = g.make(out_shape, detail::any_grad(x, weight) || bias.requires_grad());
  detail::linear_forward(x.data, weight.data, bias.data, y.data, rows, in, out_features, inputs);
  if (y.requires_grad())
    g.record(y, [=] {
      detail::linear_backward(x.data, weight.data, y.grad(), x.grad_target(), weight.grad_accumulator(),
                              bias.grad_accumulator(), rows, in, out_features, inputs);
    });
  return y;
}

}  // namespace gpt
