#include "train/weight_average.h"

#include <algorithm>

#include "core/copy_values.h"
#include "kernels/parallel.h"

namespace gpt {

AveragedOptimizer::AveragedOptimizer(std::unique_ptr<Optimizer> inner, double decay)
    : Optimizer(inner->params(), inner->shard()),
      inner_(std::move(inner)),
      decay_(decay),
      average_(state_buffer(shard_, "the weight average")) {}

std::vector<NamedBuffer> AveragedOptimizer::state() {
  std::vector<NamedBuffer> buffers = inner_->state();
  buffers.push_back({"ema", average_.data()});
  return buffers;
}

void AveragedOptimizer::step(double lr) {
  inner_->set_step_count(step_);  // a resume sets ours
  inner_->step(lr);
  step_ = inner_->step_count();
  const auto decay = static_cast<float>(std::min(decay_, 1.0 - 1.0 / static_cast<double>(step_)));
  const float weight = 1.0f - decay;
  const float* w = params_.data() + shard_.begin;
  float* a = average_.data();
  const int64_t n = shard_.end - shard_.begin;
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
  for (int64_t k = 0; k < n; ++k) a[k] = decay * a[k] + weight * w[k];
}

void AveragedOptimizer::copy_average(ParamStore& target) const {
  const float* from = step_ == 0 ? params_.data() + shard_.begin : average_.data();
  copy_values(target.data() + shard_.begin, from, shard_.end - shard_.begin);
}

}  // namespace gpt
