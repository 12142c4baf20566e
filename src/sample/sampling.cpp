#include "sample/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace gpt {

void log_softmax(const float* logits, int64_t V, std::vector<double>& out) {
  const double top = *std::max_element(logits, logits + V);
  double sum = 0;
  for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits[v]) - top);
  const double log_sum = top + std::log(sum);
  out.resize(static_cast<std::size_t>(V));
  for (int64_t v = 0; v < V; ++v) out[v] = logits[v] - log_sum;
}

void top_ids(const std::vector<double>& values, int64_t k, std::vector<int32_t>& order) {
  order.resize(values.size());
  std::iota(order.begin(), order.end(), 0);
  k = std::min<int64_t>(k, static_cast<int64_t>(values.size()));
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int32_t a, int32_t b) { return values[a] > values[b] || (values[a] == values[b] && a < b); });
}

int32_t TokenSampler::next(const float* logits, int64_t V, Rng& rng) {
  if (!settings_.logit_bias.empty()) {
    biased_.assign(logits, logits + V);
    for (const auto& [id, bias] : settings_.logit_bias) biased_[id] += bias;
    logits = biased_.data();
  }
  const float* top = std::max_element(logits, logits + V);
  // A temperature so small that the largest logit over it overflows is greedy's limit; divided,
  // the exponentials below would be inf - inf.
  if (settings_.temperature == 0.0 || std::isinf(static_cast<double>(*top) / settings_.temperature))
    return static_cast<int32_t>(top - logits);
  probs_.resize(static_cast<std::size_t>(V));
  order_.resize(static_cast<std::size_t>(V));
  for (int64_t i = 0; i < V; ++i) probs_[i] = static_cast<double>(logits[i]) / settings_.temperature;
  const int64_t k = settings_.top_k > 0 ? std::min(settings_.top_k, V) : V;
  if (k < V) {
    std::vector<double>& scratch = probs_;
    std::iota(order_.begin(), order_.end(), 0);
    std::nth_element(order_.begin(), order_.begin() + (k - 1), order_.end(),
                     [&](int32_t a, int32_t b) { return scratch[a] > scratch[b]; });
    const double kth = scratch[order_[k - 1]];
    for (auto& p : probs_)
      if (p < kth) p = -std::numeric_limits<double>::infinity();
  }
  const double max = *std::max_element(probs_.begin(), probs_.end());
  double total = 0.0;
  for (auto& p : probs_) total += (p = std::exp(p - max));
  if (settings_.top_p < 1.0) {
    // Most likely first (ties by id, so the set does not depend on the sort's whims).
    std::iota(order_.begin(), order_.end(), 0);
    std::sort(order_.begin(), order_.end(),
              [&](int32_t a, int32_t b) { return probs_[a] > probs_[b] || (probs_[a] == probs_[b] && a < b); });
    double cumulative = 0.0;
    std::size_t keep = 0;
    while (keep < order_.size() && cumulative < settings_.top_p * total) cumulative += probs_[order_[keep++]];
    for (std::size_t i = keep; i < order_.size(); ++i) probs_[order_[i]] = 0.0;
    total = cumulative;
  }
  const double u = rng.uniform_double() * total;
  double cumulative = 0.0;
  int32_t last_nonzero = 0;
  for (int64_t i = 0; i < V; ++i) {
    if (probs_[i] <= 0.0) continue;
    last_nonzero = static_cast<int32_t>(i);
    cumulative += probs_[i];
    if (u < cumulative) return static_cast<int32_t>(i);
  }
  return last_nonzero;  // u within round-off of total
}

}  // namespace gpt
