// One optimizer step: gradient_accumulation_steps micro-batches of forward + backward, global-norm
// clipping, AdamW, zero-grad. Shared by the training loop and `gpt bench`.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "data/dataset.h"
#include "model/gpt.h"
#include "train/adamw.h"

namespace gpt {

struct StepSettings {
  int64_t batch_size, block_size, accumulation_steps;
  double grad_clip;
};

struct StepResult {
  double loss;       // mean over the micro-batches
  double grad_norm;  // before clipping
  bool finite() const;
};

// Computes gradients, clips, and only if loss and norm are finite applies AdamW at `lr`.
StepResult train_step(Gpt& model, Graph& graph, AdamW& optimizer, const std::vector<int32_t>& split,
                      const StepSettings& settings, double lr, Rng& rng, Batch& batch);

}  // namespace gpt
