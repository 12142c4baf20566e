// ema_decay: an exponential moving average of the weights, which evaluations measure and the run's
// model (model.safetensors) holds, while training goes on from the weights themselves. Averaging
// the last few hundred steps' weights cancels much of their noise; on a small corpus it also
// lowers the validation loss at the end of a decaying schedule.
//
// It is kept by the optimizer as one more state buffer, "ema", so the resume point, resuming on
// another process count and ZeRO-1's sharding carry it as they carry the moments. After update
// n = 1, 2, ... of the weights W:
//   A = d A + (1 - d) W,   d = min(ema_decay, 1 - 1/n)
// which is the plain mean of the weights so far until the window 1 / (1 - ema_decay) is full: the
// average never holds the starting weights longer than a mean would, and needs no warmup key.
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
