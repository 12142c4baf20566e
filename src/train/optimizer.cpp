#include "train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/memory.h"
#include "kernels/fast_math.h"
#include "kernels/parallel.h"
#include "train/muon.h"
#include "train/train_config.h"
#include "train/weight_average.h"

namespace gpt {

AlignedBuffer<float> state_buffer(StoreRange shard, const char* optimizer) {
  try {
    return AlignedBuffer<float>(static_cast<std::size_t>(shard.size()));
  } catch (const AllocationFailure& e) {
    throw AllocationFailure(e.bytes(), std::string(optimizer) +
                                           "'s state (buffers as large as the parameters, which grow with n_layer "
                                           "and n_embd)");
  }
}

namespace {

// PyTorch's single-tensor AdamW update, elementwise (vectorised; the same bits on every clone).
GPT_VECTOR_CLONES void adamw_range(float* p, const float* g, float* m, float* v, int64_t n, float decay, float b1,
                                   float one_minus_b1, float b2, float one_minus_b2, float bc2_sqrt, float eps,
                                   float step_size) {
  for (int64_t k = 0; k < n; ++k) {
    p[k] *= decay;
    m[k] = m[k] * b1 + g[k] * one_minus_b1;
    v[k] = v[k] * b2 + one_minus_b2 * g[k] * g[k];
    const float denom = std::sqrt(v[k]) / bc2_sqrt + eps;
    p[k] += -step_size * (m[k] / denom);
  }
}

// Lion's update, elementwise; sign(0) = 0 as torch.sign.
GPT_VECTOR_CLONES void lion_range(float* p, const float* g, float* m, int64_t n, float decay, float b1,
                                  float one_minus_b1, float b2, float one_minus_b2, float lr) {
  for (int64_t k = 0; k < n; ++k) {
    const float c = m[k] * b1 + g[k] * one_minus_b1;
    const float sign = static_cast<float>((c > 0.0f) - (c < 0.0f));
    p[k] = p[k] * decay - lr * sign;
    m[k] = m[k] * b2 + g[k] * one_minus_b2;
  }
}

// Runs update(offset, count, decay) over every parameter's floats inside `shard` (of those `only`
// admits, when given), in fixed chunks (offsets in the store's layout), in parallel when there are
// enough of them; decay is the parameter's decoupled weight-decay factor. The updates are
// elementwise, so how the floats are chunked or sharded changes no result.
template <class Update>
void update_each_parameter(const ParamStore& params, StoreRange shard, double lr, double weight_decay,
                           const Update& update, SlotFilter only = nullptr) {
  constexpr int64_t kChunk = 8192;
  for (const ParamStore::Slot& slot : params.slots()) {
    if (only != nullptr && !only(slot)) continue;
    const float decay = slot.shape.rank >= 2 ? static_cast<float>(1.0 - lr * weight_decay) : 1.0f;
    const int64_t begin = std::max(static_cast<int64_t>(slot.offset), shard.begin);
    const int64_t end = std::min(static_cast<int64_t>(slot.offset) + slot.shape.numel(), shard.end);
    const int64_t n = end - begin;
#pragma omp parallel for schedule(static) if (n > kParallelMinRowReduction)
    for (int64_t c = 0; c < n; c += kChunk) update(begin + c, std::min(kChunk, n - c), decay);
  }
}

}  // namespace

AdamW::AdamW(ParamStore& params, AdamWSettings settings, StoreRange shard, SlotFilter only)
    : Optimizer(params, shard),
      settings_(settings),
      only_(only),
      m_(state_buffer(shard, "AdamW")),
      v_(state_buffer(shard, "AdamW")) {}

void AdamW::step(double lr) {
  ++step_;
  // Scalars in double, as PyTorch computes them in Python, then applied in float.
  const double bias_correction1 = 1.0 - std::pow(settings_.beta1, static_cast<double>(step_));
  const double bias_correction2 = 1.0 - std::pow(settings_.beta2, static_cast<double>(step_));
  const auto step_size = static_cast<float>(lr / bias_correction1);
  const auto bc2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  const auto b1 = static_cast<float>(settings_.beta1), b2 = static_cast<float>(settings_.beta2),
             eps = static_cast<float>(settings_.eps);
  const auto one_minus_b1 = static_cast<float>(1.0 - settings_.beta1),
             one_minus_b2 = static_cast<float>(1.0 - settings_.beta2);
  float* p = params_.data();
  const float* g = params_.grad();
  float *m = m_.data(), *v = v_.data();  // state element k is the store's float shard_.begin + k
  update_each_parameter(
      params_, shard_, lr, settings_.weight_decay,
      [&](int64_t c, int64_t count, float decay) {
        const int64_t k = c - shard_.begin;
        adamw_range(p + c, g + c, m + k, v + k, count, decay, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps,
                    step_size);
      },
      only_);
}

Lion::Lion(ParamStore& params, LionSettings settings, StoreRange shard)
    : Optimizer(params, shard), settings_(settings), m_(state_buffer(shard, "Lion")) {}

void Lion::step(double lr) {
  ++step_;
  const auto b1 = static_cast<float>(settings_.beta1), b2 = static_cast<float>(settings_.beta2);
  const auto one_minus_b1 = static_cast<float>(1.0 - settings_.beta1),
             one_minus_b2 = static_cast<float>(1.0 - settings_.beta2);
  const auto rate = static_cast<float>(lr);
  float* p = params_.data();
  const float* g = params_.grad();
  float* m = m_.data();  // state element k is the store's float shard_.begin + k
  update_each_parameter(params_, shard_, lr, settings_.weight_decay, [&](int64_t c, int64_t count, float decay) {
    lion_range(p + c, g + c, m + (c - shard_.begin), count, decay, b1, one_minus_b1, b2, one_minus_b2, rate);
  });
}

namespace {

std::unique_ptr<Optimizer> make_stepper(const TrainConfig& config, ParamStore& params, StoreRange shard) {
  if (config.optimizer == OptimizerKind::muon)
    return std::make_unique<Muon>(params,
                                  MuonSettings{config.muon_lr, config.muon_momentum, config.learning_rate,
                                               AdamWSettings{config.beta1, config.beta2, 1e-8, config.weight_decay},
                                               config.matmul_dtype(), config.muon_weight_decay},
                                  shard);
  if (config.optimizer == OptimizerKind::lion)
    return std::make_unique<Lion>(params, LionSettings{config.lion_beta1, config.lion_beta2, config.weight_decay},
                                  shard);
  return std::make_unique<AdamW>(params, AdamWSettings{config.beta1, config.beta2, 1e-8, config.weight_decay}, shard);
}

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const TrainConfig& config, ParamStore& params, StoreRange shard) {
  std::unique_ptr<Optimizer> stepper = make_stepper(config, params, shard);
  if (config.ema_decay == 0) return stepper;
  return std::make_unique<AveragedOptimizer>(std::move(stepper), config.ema_decay);
}

std::unique_ptr<Optimizer> make_optimizer(const TrainConfig& config, ParamStore& params) {
  return make_optimizer(config, params, {0, static_cast<int64_t>(params.padded_floats())});
}

}  // namespace gpt
