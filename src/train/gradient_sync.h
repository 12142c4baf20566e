// GradientSync: the step between backward and clipping where processes would agree on one
// gradient. It says which of an iteration's micro-batches this process computes, and turns this
// process's gradients into the iteration's. In one process (LocalGradientSync) every micro-batch
// is local and there is nothing to exchange; a data-parallel trainer implements the same two
// calls over MPI.
#pragma once

#include <cstdint>

#include "core/param_store.h"

namespace gpt {

struct MicroBatchRange {
  int64_t begin, end;  // micro-batch indices [begin, end) of 0 .. accumulation_steps - 1
};

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual MicroBatchRange micro_batches(int64_t accumulation_steps) const = 0;
  // On entry: the gradients and loss sum of this process's micro-batches. On return: those of the
  // whole iteration, the same bits in every process.
  virtual void synchronize(ParamStore& params, double& loss_sum) = 0;
};

class LocalGradientSync final : public GradientSync {
 public:
  MicroBatchRange micro_batches(int64_t accumulation_steps) const override { return {0, accumulation_steps}; }
  void synchronize(ParamStore& /*params*/, double& /*loss_sum*/) override {}
};

}  // namespace gpt
