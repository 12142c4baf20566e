// nanoGPT's learning-rate schedule: linear warmup for warmup_iters, then cosine decay to min_lr
// at lr_decay_iters, min_lr after; constant learning_rate when decay is off.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

#include "train/train_config.h"

namespace gpt {

struct LrSchedule {
  double learning_rate = 1e-3, min_lr = 1e-4;
  int64_t warmup_iters = 100, lr_decay_iters = 5000;
  bool decay = true;

  double at(int64_t it) const {
    if (!decay) return learning_rate;
    if (it < warmup_iters) return learning_rate * static_cast<double>(it + 1) / static_cast<double>(warmup_iters + 1);
    if (it > lr_decay_iters) return min_lr;
    const double ratio = static_cast<double>(it - warmup_iters) / static_cast<double>(lr_decay_iters - warmup_iters);
    const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));
    return min_lr + coeff * (learning_rate - min_lr);
  }
};

inline LrSchedule lr_schedule(const TrainConfig& c) {
  return {c.learning_rate, c.min_lr, c.warmup_iters, c.lr_decay_iters, c.decay_lr};
}

}  // namespace gpt
