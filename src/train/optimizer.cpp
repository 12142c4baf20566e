#include "train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/fast_math.h"
#include "kernels/parallel.h"
#include "train/train_config.h"

namespace gpt {

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

// Sum of squares in 8 double lanes (element k into lane k % 8), lanes added in order: the loop
// vectorises and the result is the same on every ISA.
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

// Runs update(offset, count, decay) over every parameter in fixed chunks (offsets in the store's
// layout), each parameter's chunks in parallel when it is large enough; decay is its decoupled
// weight-decay factor.
template <class Update>
void update_each_parameter(const ParamStore& params, double lr, double weight_decay, const Update& update) {
  constexpr int64_t kChunk = 8192;
  for (const ParamStore::Slot& slot : params.slots()) {
    const float decay = slot.shape.rank >= 2 ? static_cast<float>(1.0 - lr * weight_decay) : 1.0f;
    const auto offset = static_cast<int64_t>(slot.offset);
    const int64_t n = slot.shape.numel();
#pragma omp parallel for schedule(static) if (n > kParallelMinRowReduction)
    for (int64_t c = 0; c < n; c += kChunk) update(offset + c, std::min(kChunk, n - c), decay);
  }
}

GPT_VECTOR_CLONES double sum_of_squares(const float* g, int64_t n) {
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(g[k + l]) * static_cast<double>(g[k + l]);
  for (int l = 0; k + l < n; ++l) lanes[l] += static_cast<double>(g[k + l]) * static_cast<double>(g[k + l]);
  double s = 0.0;
  for (double lane : lanes) s += lane;
  return s;
}

}  // namespace

AdamW::AdamW(ParamStore& params, AdamWSettings settings)
    : Optimizer(params), settings_(settings), m_(params.padded_floats()), v_(params.padded_floats()) {}

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
  float *p = params_.data(), *m = m_.data(), *v = v_.data();
  const float* g = params_.grad();
  update_each_parameter(params_, lr, settings_.weight_decay, [&](int64_t c, int64_t count, float decay) {
    adamw_range(p + c, g + c, m + c, v + c, count, decay, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, step_size);
  });
}

Lion::Lion(ParamStore& params, LionSettings settings)
    : Optimizer(params), settings_(settings), m_(params.padded_floats()) {}

void Lion::step(double lr) {
  ++step_;
  const auto b1 = static_cast<float>(settings_.beta1), b2 = static_cast<float>(settings_.beta2);
  const auto one_minus_b1 = static_cast<float>(1.0 - settings_.beta1),
             one_minus_b2 = static_cast<float>(1.0 - settings_.beta2);
  const auto rate = static_cast<float>(lr);
  float *p = params_.data(), *m = m_.data();
  const float* g = params_.grad();
  update_each_parameter(params_, lr, settings_.weight_decay, [&](int64_t c, int64_t count, float decay) {
    lion_range(p + c, g + c, m + c, count, decay, b1, one_minus_b1, b2, one_minus_b2, rate);
  });
}

std::unique_ptr<Optimizer> make_optimizer(const TrainConfig& config, ParamStore& params) {
  if (config.optimizer == "lion")
    return std::make_unique<Lion>(params, LionSettings{config.lion_beta1, config.lion_beta2, config.weight_decay});
  GPT_CHECK(config.optimizer == "adamw", "unknown optimizer " + config.optimizer);
  return std::make_unique<AdamW>(params, AdamWSettings{config.beta1, config.beta2, 1e-8, config.weight_decay});
}

double clip_grad_norm(ParamStore& params, double max_norm) {
  // Fixed chunks, each summed by one thread, then added in chunk order: thread-independent.
  constexpr int64_t kChunk = 1 << 14;
  const auto total = static_cast<int64_t>(params.padded_floats());  // padding is always zero
  const int64_t chunks = (total + kChunk - 1) / kChunk;
  thread_local std::vector<double> partial;  // grows once: no allocation per step
  partial.resize(static_cast<std::size_t>(chunks));
  double* sums = partial.data();
  const float* g = params.grad();
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) sums[c] = sum_of_squares(g + c * kChunk, std::min(kChunk, total - c * kChunk));
  double sum = 0.0;
  for (double s : partial) sum += s;
  const double norm = std::sqrt(sum);
  if (max_norm > 0.0 && std::isfinite(norm)) {
    const auto coef = static_cast<float>(std::min(1.0, max_norm / (norm + 1e-6)));
    float* gm = params.grad();
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < total; ++k) gm[k] *= coef;
  }
  return norm;
}

}  // namespace gpt
