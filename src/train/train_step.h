// One optimizer step: this process's micro-batches of forward + backward, the gradient sync,
// global-norm clipping, the optimizer (on this process's shard), zero-grad. Every random draw is keyed by (seed,
// iteration, micro-batch), so a micro-batch's rows, dropout masks, loss and gradient are the same whichever process
// computes it and whatever ran before. Shared by the training loop and `gpt bench`.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "data/data_order.h"
#include "data/dataset.h"
#include "model/gpt.h"
#include "train/gradient_sync.h"
#include "train/optimizer.h"
#include "train/train_config.h"

namespace gpt {

struct StepSettings {
  int64_t batch_size, block_size, accumulation_steps;
  double grad_clip;
  uint64_t seed;
  DataOrder order = DataOrder::random;
};
// The config's.
StepSettings step_settings(const TrainConfig& config);

struct StepResult {
  double loss;       // mean over the micro-batches
  double grad_norm;  // before clipping
  bool finite() const;
};

// Forward and backward of micro-batch `micro` of iteration `iter`: its gradient, scaled by
// 1 / accumulation_steps, is added to the parameters' gradients. Returns its loss.
double accumulate_micro_batch(Gpt& model, Graph& graph, TokenView split, const StepSettings& settings, int64_t iter,
                              int64_t micro, Batch& batch);

// The iteration's gradient, synchronized across processes and clipped; weights and optimizer
// state are untouched.
StepResult compute_step_gradient(Gpt& model, Graph& graph, GradientSync& sync, TokenView split,
                                 const StepSettings& settings, int64_t iter, Batch& batch);
// The update: only if loss and norm are finite, the optimizer at `lr`; then zeroes the gradients.
void apply_step(Gpt& model, Optimizer& optimizer, GradientSync& sync, const StepResult& result, double lr);

// Both: computes the iteration's gradient, clips, and only if loss and norm are finite applies the
// optimizer at `lr`.
StepResult train_step(Gpt& model, Graph& graph, Optimizer& optimizer, GradientSync& sync, TokenView split,
                      const StepSettings& settings, int64_t iter, double lr, Batch& batch);

}  // namespace gpt
