// AdamW (decoupled weight decay) over a ParamStore, step for step as PyTorch's torch.optim.AdamW,
// with nanoGPT's parameter groups: weight decay only on parameters of rank >= 2. The moments live
// in two buffers with the parameter store's layout. Also global-norm gradient clipping.
#pragma once

#include <cstdint>

#include "core/aligned_buffer.h"
#include "core/param_store.h"

namespace gpt {

struct AdamWSettings {
  double beta1 = 0.9, beta2 = 0.99, eps = 1e-8, weight_decay = 0.1;
};

class AdamW {
 public:
  AdamW(ParamStore& params, AdamWSettings settings);

  void step(double lr);
  int64_t step_count() const { return step_; }
  void set_step_count(int64_t step) { step_ = step; }
  float* exp_avg() { return m_.data(); }
  float* exp_avg_sq() { return v_.data(); }

 private:
  ParamStore& params_;
  AdamWSettings settings_;
  AlignedBuffer<float> m_, v_;
  int64_t step_ = 0;
};

// The global L2 norm of all gradients (computed in double, in a fixed order); when max_norm > 0,
// scales every gradient by min(1, max_norm / (norm + 1e-6)) as torch.nn.utils.clip_grad_norm_.
// Returns the norm before clipping.
double clip_grad_norm(ParamStore& params, double max_norm);

}  // namespace gpt
