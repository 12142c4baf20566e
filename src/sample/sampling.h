// Choosing the next token from logits: temperature (0 = greedy argmax), top-k (0 = off, clamped
// to the vocabulary), then top-p (the smallest set of most likely tokens whose probability
// reaches p), then one draw from our seeded Rng. nanoGPT's semantics for temperature and top-k
// (logits below the k-th largest become -inf; ties at the k-th value are kept).
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"

namespace gpt {

struct SamplingSettings {
  double temperature = 0.8;
  int64_t top_k = 200;
  double top_p = 1.0;
};

// The log-probabilities of a row of logits, in double: out[v] = logits[v] - log(sum exp(logits)).
void log_softmax(const float* logits, int64_t V, std::vector<double>& out);

// The ids of the k largest values, largest first (ties: the smaller id first), via `order` ([V]).
void top_ids(const std::vector<double>& values, int64_t k, std::vector<int32_t>& order);

class TokenSampler {
 public:
  explicit TokenSampler(SamplingSettings settings) : settings_(settings) {}
  int32_t next(const float* logits, int64_t V, Rng& rng);

 private:
  SamplingSettings settings_;
  std::vector<double> probs_;  // scratch, reused: no allocation per token
  std::vector<int32_t> order_;
};

}  // namespace gpt
