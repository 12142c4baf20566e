// ema_decay: an exponential moving average of the weights, which evaluations measure and the run's
// model holds while training goes on from the weights. Kept as the optimizer's state buffer "ema",
// so resume points and ZeRO-1 carry it as they carry the moments. After update n = 1, 2, ...:
//   A = d A + (1 - d) W,  d = min(ema_decay, 1 - 1/n)
// the plain mean of the weights until the window 1 / (1 - ema_decay) is full: no warmup key, and
// the starting weights never weigh more than in a mean.
#pragma once

#include <memory>

#include "train/optimizer.h"

namespace gpt {

class AveragedOptimizer final : public Optimizer {
 public:
  AveragedOptimizer(std::unique_ptr<Optimizer> inner, double decay);
  // The wrapped optimizer's name: a resume point records the optimizer, and the average is its state.
  const char* name() const override { return inner_->name(); }
  void step(double lr) override;
  std::vector<NamedBuffer> state() override;
  // The average over this process's shard into the same floats of `target`, a store of the same
  // layout (the weights themselves before the first update).
  void copy_average(ParamStore& target) const;

 private:
  std::unique_ptr<Optimizer> inner_;
  double decay_;
  AlignedBuffer<float> average_;  // element k is the store's float shard().begin + k
};

}  // namespace gpt
