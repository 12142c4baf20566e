// norm_linear: linear(norm(x)) without keeping the normalised activations (layernorm or rmsnorm,
// kernels/norm.h).
// A pre-LN Transformer normalises its residual stream before every projection that reads it
// (ln_1 -> c_attn, ln_2 -> c_fc, ln_f -> lm_head). The stream itself is kept anyway (the next
// residual add and this backward need it), so backward recomputes the normalised rows from it and
// the saved row statistics, with the same calls as forward (bit-identical), into a borrowed
// buffer; the composition would keep a [rows, C] tensor per projection for the whole step.
#include <cstring>

#include "kernels/gemm.h"
#include "kernels/norm.h"
#include "ops/op_kernels.h"
#include "ops/ops.h"

namespace gpt {

Tensor norm_linear(Graph& g, Norm norm, const Tensor& x, const Tensor& ln_weight, const Tensor& ln_bias,
                   const Tensor& weight, const Tensor& bias, Dtype inputs) {
  const int64_t C = x.shape.last(), rows = x.shape.rows();
  GPT_CHECK(ln_weight.shape == Shape{C},
            std::string(norm_name(norm)) + " weight " + ln_weight.shape.str() + " for input " + x.shape.str());
  if (defined(ln_bias)) {
    GPT_CHECK(norm == Norm::layernorm, "a bias for " + std::string(norm_name(norm)));
    GPT_CHECK(ln_bias.shape == Shape{C}, "layernorm bias " + ln_bias.shape.str());
  }
  GPT_CHECK(weight.shape.rank == 2 && weight.shape[1] == C,
            "linear weight " + weight.shape.str() + " does not match input " + x.shape.str());
  const int64_t out_features = weight.shape[0];
  if (defined(bias)) GPT_CHECK(bias.shape == Shape{out_features}, "linear bias shape " + bias.shape.str());
  Shape out_shape = x.shape;
  out_shape.dims[out_shape.rank - 1] = out_features;
  Tensor y =
      g.make(out_shape, detail::any_grad(x, ln_weight, weight) || ln_bias.requires_grad() || bias.requires_grad());
  float* mean = g.scratch(rows);
  float* rstd = g.scratch(rows);
  const std::size_t normed_count = static_cast<std::size_t>(rows * C);
  {
    Borrowed normed(g, normed_count);
    norm_forward(norm, x.data, ln_weight.data, ln_bias.data, normed.data(), mean, rstd, rows, C);
    detail::linear_forward(normed.data(), weight.data, bias.data, y.data, rows, C, out_features, inputs);
  }
  if (y.requires_grad()) {
    Graph* graph = &g;
    g.record(y, [=] {
      Borrowed normed(*graph, normed_count);
      norm_forward(norm, x.data, ln_weight.data, ln_bias.data, normed.data(), mean, rstd, rows, C);
      detail::linear_backward(normed.data(), weight.data, y.grad(), {}, weight.grad_accumulator(),
                              bias.grad_accumulator(), rows, C, out_features, inputs);
      if (!x.requires_grad() && !ln_weight.requires_grad() && !ln_bias.requires_grad()) return;
      float* d_normed = normed.data();  // the normalised rows are no longer needed: reuse the buffer
      gemm(false, false, rows, C, out_features, y.grad(), out_features, weight.data, C, d_normed, C, false, inputs);
      norm_backward(norm, x.data, ln_weight.data, mean, rstd, d_normed, x.grad_accumulator(),
                    ln_weight.grad_accumulator(), ln_bias.grad_accumulator(), rows, C);
    });
  }
  return y;
}

}  // namespace gpt
