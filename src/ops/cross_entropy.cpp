// cross_entropy: mean over rows of logsumexp(logits) - logits[target], fused with the softmax.
// Backward: dlogits = (softmax - onehot) * dloss / N; the 1/N is the mean's, so gradient
// accumulation over micro-batches must scale the loss, not this op.
#include <cmath>
#include <string>

#include "kernels/parallel.h"
#include "ops/ops.h"

namespace gpt {

namespace {

void cross_entropy_forward(const float* logits, const int32_t* targets, float* row_lse, float* row_loss, int64_t N,
                           int64_t V) {
#pragma omp parallel for schedule(static) if (N * V > kParallelMinRowReduction)
  for (int64_t r = 0; r < N; ++r) {
    const float* lr = logits + r * V;
    float max = lr[0];
    for (int64_t j = 1; j < V; ++j) max = std::fmax(max, lr[j]);
    float total = 0.0f;
    for (int64_t j = 0; j < V; ++j) total += std::exp(lr[j] - max);
    row_lse[r] = max + std::log(total);
    row_loss[r] = row_lse[r] - lr[targets[r]];
  }
}

void cross_entropy_backward(const float* logits, const int32_t* targets, const float* row_lse, float dloss,
                            float* dlogits, int64_t N, int64_t V) {
  const float scale = dloss / static_cast<float>(N);
#pragma omp parallel for schedule(static) if (N * V > kParallelMinRowReduction)
  for (int64_t r = 0; r < N; ++r) {
    const float* lr = logits + r * V;
    float* dr = dlogits + r * V;
    for (int64_t j = 0; j < V; ++j) dr[j] += std::exp(lr[j] - row_lse[r]) * scale;
    dr[targets[r]] -= scale;
  }
}

}  // namespace

Tensor cross_entropy(Graph& g, const Tensor& logits, const int32_t* targets) {
  GPT_CHECK(logits.shape.rank == 2, "cross_entropy logits must be [N, V], got " + logits.shape.str());
  const int64_t N = logits.shape[0], V = logits.shape[1];
  for (int64_t r = 0; r < N; ++r)
    GPT_CHECK(targets[r] >= 0 && targets[r] < V, "target " + std::to_string(targets[r]) + " outside the vocabulary");
  Tensor loss = g.make(Shape{}, logits.requires_grad());
  float* row_lse = g.scratch(N);
  float* row_loss = g.scratch(N);
  cross_entropy_forward(logits.data, targets, row_lse, row_loss, N, V);
  double total = 0.0;  // summed in row order: the same value on any thread count
  for (int64_t r = 0; r < N; ++r) total += row_loss[r];
  loss.data[0] = static_cast<float>(total / static_cast<double>(N));
  if (loss.requires_grad()) {
    int32_t* saved = static_cast<int32_t*>(g.arena().allocate_bytes(N * sizeof(int32_t)));
    for (int64_t r = 0; r < N; ++r) saved[r] = targets[r];
    g.record(loss, [=] {
      cross_entropy_backward(logits.data, saved, row_lse, loss.grad()[0], logits.grad_accumulator(), N, V);
    });
  }
  return loss;
}

}  // namespace gpt
