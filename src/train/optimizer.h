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
#include "train/clip.h"

namespace gpt {

struct TrainConfig;

// Every optimizer updates the floats `shard` of the store (all of it, or one process's part when
// optimizer state is sharded across processes); its state buffers hold that range only.
class Optimizer {
 public:
  Optimizer(ParamStore& params, StoreRange shard) : params_(params), shard_(shard) {}
  virtual ~Optimizer() = default;

  virtual const char* name() const = 0;  // the config's "optimizer" value
  // One update of every parameter from its gradient at learning rate `lr`.
  virtual void step(double lr) = 0;
  // The per-parameter state, each buffer in the parameter store's layout restricted to shard():
  // element k is the store's float shard().begin + k.
  virtual std::vector<NamedBuffer> state() = 0;
  StoreRange shard() const { return shard_; }
  ParamStore& params() const { return params_; }

  int64_t step_count() const { return step_; }
  void set_step_count(int64_t step) { step_ = step; }

 protected:
  ParamStore& params_;
  StoreRange shard_;
  int64_t step_ = 0;
};

// Which parameters an optimizer updates (nullptr: all of them).
using SlotFilter = bool (*)(const ParamStore::Slot& slot);

// AdamW step for step as PyTorch's single-tensor torch.optim.AdamW. State: exp_avg, exp_avg_sq
// (zero for parameters outside `only`, which it leaves alone).
struct AdamWSettings {
  double beta1 = 0.9, beta2 = 0.99, eps = 1e-8, weight_decay = 0.1;
};
class AdamW final : public Optimizer {
 public:
  AdamW(ParamStore& params, AdamWSettings settings, StoreRange shard, SlotFilter only = nullptr);
  const char* name() const override { return "adamw"; }
  void step(double lr) override;
  std::vector<NamedBuffer> state() override { return {{"exp_avg", m_.data()}, {"exp_avg_sq", v_.data()}}; }

 private:
  AdamWSettings settings_;
  SlotFilter only_;
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
  Lion(ParamStore& params, LionSettings settings, StoreRange shard);
  const char* name() const override { return "lion"; }
  void step(double lr) override;
  std::vector<NamedBuffer> state() override { return {{"exp_avg", m_.data()}}; }

 private:
  LionSettings settings_;
  AlignedBuffer<float> m_;
};

// A state buffer of zeros for `shard`; when it cannot be had, the error says whose it is.
AlignedBuffer<float> state_buffer(StoreRange shard, const char* optimizer);

// The optimizer the config names ("adamw", "lion" or "muon", train/muon.h), with the config's
// settings, over `shard` (by default the whole store); with ema_decay, it also keeps the weights'
// average (train/weight_average.h).
std::unique_ptr<Optimizer> make_optimizer(const TrainConfig& config, ParamStore& params);
std::unique_ptr<Optimizer> make_optimizer(const TrainConfig& config, ParamStore& params, StoreRange shard);

}  // namespace gpt
