// A training run's setup, in each process of a world of one or more: the data, the model (fresh,
// resumed from out_dir or fine-tuned from a checkpoint), the gradient sync and the optimizer, and
// the loop state it starts from. Every process agrees that setup succeeded before any waits for
// another; rank 0 alone reads the checkpoint and sends what the others need.
#pragma once

#include <atomic>
#include <memory>

#include "data/dataset.h"
#include "distributed/world.h"
#include "io/checkpoint.h"
#include "model/gpt.h"
#include "train/gradient_sync.h"
#include "train/optimizer.h"
#include "train/train_config.h"

namespace gpt {

struct RunParts {
  TrainConfig config;  // the run's config; fine-tuning takes the checkpoint's architecture
  std::unique_ptr<Dataset> data;
  std::unique_ptr<Gpt> model;
  std::unique_ptr<GradientSync> sync;
  std::unique_ptr<Optimizer> optimizer;
  TrainingState state;  // where the loop starts: fresh, or the resumed checkpoint's
  bool resumed() const { return config.init_from.kind == InitKind::resume; }
};

// "dtype": "auto" resolved to the Dtype the run multiplies in, the same on every process of `world`:
// bfloat16 only where each one's bfloat16 products of `arithmetic` run natively (auto_dtype in
// kernels/gemm.h). Rank 0 logs the choice and why. Any other dtype is left as it is.
void resolve_dtype(TrainConfig& config, const World& world, Bf16Arithmetic arithmetic);

// `stop_signal` (may be null) interrupts the preparation of a text corpus.
RunParts set_up_run(const TrainConfig& config, const World& world, const std::atomic<int>* stop_signal);

}  // namespace gpt
