// The learning-rate schedule: linear warmup for warmup_iters, then learning_rate held until the
// last lr_cooldown_fraction of the span to lr_decay_iters, over which it falls to min_lr by half a
// cosine or a straight line; min_lr after. nanoGPT's is the cosine over the whole span (fraction
// 1); a straight fall over the last part is the warmup-stable-decay schedule of Hu et al. 2024
// (MiniCPM) and modded-nanogpt. Constant learning_rate when decay is off.
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
  LrDecayShape shape = LrDecayShape::cosine;
  double cooldown_fraction = 1.0;

  double at(int64_t it) const {
    if (!decay) return learning_rate;
    if (it < warmup_iters) return learning_rate * static_cast<double>(it + 1) / static_cast<double>(warmup_iters + 1);
    if (it > lr_decay_iters) return min_lr;
    const double ratio = static_cast<double>(it - warmup_iters) / static_cast<double>(lr_decay_iters - warmup_iters);
    // With the whole span (fraction 1) the fall's progress is the ratio itself, bit for bit.
    const double stable = 1.0 - cooldown_fraction;
    if (ratio < stable) return learning_rate;
    const double progress = (ratio - stable) / cooldown_fraction;
    const double coeff =
        shape == LrDecayShape::cosine ? 0.5 * (1.0 + std::cos(std::numbers::pi * progress)) : 1.0 - progress;
    return min_lr + coeff * (learning_rate - min_lr);
  }
};

inline LrSchedule lr_schedule(const TrainConfig& c) {
  return {c.learning_rate, c.min_lr,         c.warmup_iters,        c.lr_decay_iters,
          c.decay_lr,      c.lr_decay_shape, c.lr_cooldown_fraction};
}

}  // namespace gpt
