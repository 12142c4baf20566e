// residual_projection: residual + dropout(act(x) W^T + b), how each half of a Transformer block
// ends (attention's c_proj with act = identity, the MLP's c_proj with its activation; a gated one,
// swiglu, takes x twice the projection's input width). act goes through kernels/activation.h both
// ways; only the identity skips the kernels (and the buffer).
// As a composition this keeps act(x) (4C wide in the MLP), the projection, and the projection
// after dropout, all for the whole step. Fused, the projection is written into the output and
// dropout plus the residual add are applied in place; act(x) lives in a borrowed buffer while
// forward needs it and is recomputed from x in backward. The mask is the dropout op's
// counter-based hash, so backward regenerates it. Every value is computed with the same calls,
// in the same order, as the composition linear -> dropout -> add (bit-identical; tested).
#include <cstring>

#include "kernels/gemm.h"
#include "kernels/parallel.h"
#include "kernels/row_sum.h"
#include "ops/op_kernels.h"
#include "ops/ops.h"

namespace gpt {

Tensor residual_projection(Graph& g, const Tensor& residual, const Tensor& x, Activation act, const Tensor& weight,
                           const Tensor& bias, float dropout_p, Rng& rng, bool training, Dtype inputs) {
  GPT_CHECK(weight.shape.rank == 2, "projection weight must be [out, in], got " + weight.shape.str());
  const int64_t in = weight.shape[1], out_features = weight.shape[0], rows = x.shape.rows();
  GPT_CHECK(x.shape.last() == activation_input_width(act, in),
            "projection input " + x.shape.str() + " does not match weight " + weight.shape.str());
  GPT_CHECK(residual.shape.last() == out_features && residual.shape.rows() == rows,
            "residual " + residual.shape.str() + " does not match the projection's output");
  if (defined(bias)) GPT_CHECK(bias.shape == Shape{out_features}, "projection bias shape " + bias.shape.str());
  const detail::DropoutMask mask = detail::DropoutMask::make(dropout_p, rng, training);
  const int64_t n_in = rows * in, n = rows * out_features;  // n_in: act(x)'s values

  Tensor out = g.make(residual.shape, detail::any_grad(residual, x, weight) || bias.requires_grad());
  {
    const float* input = x.data;
    Borrowed activated(g, is_identity(act) ? 0 : static_cast<std::size_t>(n_in));
    if (!is_identity(act)) {
      activation_forward(act, x.data, activated.data(), rows, in);
      input = activated.data();
    }
    detail::linear_forward(input, weight.data, bias.data, out.data, rows, in, out_features, inputs);
  }
  mask.apply_in_place(out.data, n);
  accumulate(residual.data, out.data, n);

  if (out.requires_grad()) {
    Graph* graph = &g;
    g.record(out, [=] {
      float* dy = out.grad();
      if (const Tensor::GradTarget dr = residual.grad_target(); dr.data) {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
        for (int64_t i = 0; i < n; ++i) dr.data[i] = (dr.accumulate ? dr.data[i] : 0.0f) + dy[i];  // 0 + -0 is +0
      }
      // d(projection): the output's gradient through the dropout mask, in place (nothing reads
      // the output's gradient after this op).
      mask.apply_in_place(dy, n);
      if (is_identity(act)) {
        detail::linear_backward(x.data, weight.data, dy, x.grad_target(), weight.grad_accumulator(),
                                bias.grad_accumulator(), rows, in, out_features, inputs);
        return;
      }
      {
        Borrowed activated(*graph, static_cast<std::size_t>(n_in));
        activation_forward(act, x.data, activated.data(), rows, in);
        detail::linear_backward(activated.data(), weight.data, dy, {}, weight.grad_accumulator(),
                                bias.grad_accumulator(), rows, in, out_features, inputs);
      }
      if (!x.requires_grad()) return;
      // d(act(x)) = dy W, then through act'. When x has no gradient yet (the MLP's hidden layer
      // feeds only this op), that product is computed in x's own gradient buffer, which takes the
      // place act(x) just gave back: one hidden-sized buffer alive here instead of two. (A gated
      // activation's gradient is twice as wide as d(act(x)): that is overwritten from a borrowed one.)
      if (x.grad_can_be_overwritten() && !is_gated(act)) {
        float* dx = x.grad_to_overwrite();
        gemm(false, false, rows, in, out_features, dy, out_features, weight.data, in, dx, in, false, inputs);
        activation_backward(act, x.data, dx, dx, rows, in, GradWrite::overwrite);
        return;
      }
      Borrowed d_activated(*graph, static_cast<std::size_t>(n_in));
      gemm(false, false, rows, in, out_features, dy, out_features, weight.data, in, d_activated.data(), in, false,
           inputs);
      const Tensor::GradTarget dx = x.grad_target();
      activation_backward(act, x.data, d_activated.data(), dx.data, rows, in,
                          dx.accumulate ? GradWrite::accumulate : GradWrite::overwrite);
    });
  }
  return out;
}

}  // namespace gpt
