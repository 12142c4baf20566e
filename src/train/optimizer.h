// Optimizers: a step over the parameter store plus named per-parameter state (PyTorch's
// state_dict idea). The state is a list of buffers in the store's layout, so checkpoints save and
// restore it by name without knowing which optimizer wrote it, and a later data-parallel trainer
// can shard it by slicing the same layout. nanoGPT's parameter groups hold for every optimizer:
// weight decay only on parameters of rank >= 2 (matrices and embeddings).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/param_store.h"

namespace gpt {

struct TrainConfig;

class Optimizer {
 public:
  explicit Optimizer(ParamStore& params) : params_(params) {}
  virtual ~Optimizer() = default;

  virtual const char* name() const = 0;  // the config's "optimizer" value
  // One update of every parameter from its gradient at learning rate `lr`.
  virtual void step(double lr) = 0;
  // The per-parameter state, each buffer in the parameter store's layout.
  virtual std::vector<NamedBuffer> state() = 0;

  int64_t step_count() const { return step_; }
  void set_step_count(int64_t step) { step_ = step; }

 protected:
  ParamStore& params_;
  int64_t step_ = 0;
};

// AdamW step for step as PyTorch's single-tensor torch.optim.AdamW. State: exp_avg, exp_avg_sq.
struct AdamWSettings {
  double beta1 = 0.9, beta2 = 0.99, eps = 1e-8, weight_decay = 0.1;
};
class AdamW final : public Optimizer {
 public:
  AdamW(ParamStore& params, AdamWSettings settings);
  const char* name() const override { return "adamw"; }
  void step(double lr) override;
  std::vector<NamedBuffer> state() override { return {{"exp_avg", m_.data()}, {"exp_avg_sq", v_.data()}}; }

 private:
  AdamWSettings settings_;
  AlignedBuffer<float> m_, v_;
};

// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"):
//   c = beta1 m + (1 - beta1) g;  p = p (1 - lr wd) - lr sign(c);  m = beta2 m + (1 - beta2) g.
// Every coordinate moves by exactly lr, so it wants a learning rate 3-10x below AdamW's and a
// weight decay 3-10x above it. State: exp_avg.
struct LionSettings {
  double beta1 = 0.9, beta2 = 0.99, weight_decay = 0.1;
};
class Lion final : public Optimizer {
 public:
  Lion(ParamStore& params, LionSettings settings);
  const char* name() const override { return "lion"; }
  void step(double lr) override;
  std::vector<NamedBuffer> state() override { return {{"exp_avg", m_.data()}}; }

 private:
  LionSettings settings_;
  AlignedBuffer<float> m_;
};

// The optimizer the config names ("adamw" or "lion"), with the config's settings.
std::unique_ptr<Optimizer> make_optimizer(const TrainConfig& config, ParamStore& params);

// The global L2 norm of all gradients (computed in double, in a fixed order); when max_norm > 0,
// scales every gradient by min(1, max_norm / (norm + 1e-6)) as torch.nn.utils.clip_grad_norm_.
// Returns the norm before clipping.
double clip_grad_norm(ParamStore& params, double max_norm);

}  // namespace gpt
