// Choosing the next token from logits: a per-token bias added first (OpenAI's logit_bias; -inf
// bans), then temperature (0 = greedy argmax), top-k (0 = off, clamped
// to the vocabulary), then top-p (the smallest set of most likely tokens whose probability
// reaches p), then one draw from our seeded Rng. nanoGPT's semantics for temperature and top-k
// (logits below the k-th largest become -inf; ties at the k-th value are kept).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/rng.h"

namespace gpt {

struct SamplingSettings {
  double temperature = 0.8;
  int64_t top_k = 200;
  double top_p = 1.0;
  // (id, bias) added to the logits before everything else, ids unique; -inf: never drawn. Empty:
  // the logits are used as they are (the same bits as without it).
  std::vector<std::pair<int32_t, float>> logit_bias;
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
  std::vector<float> biased_;  // [V] the logits with logit_bias added
  std::vector<double> probs_;  // scratch, reused: no allocation per token
  std::vector<int32_t> order_;
};

}  // namespace gpt
