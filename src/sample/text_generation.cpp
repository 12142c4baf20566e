#include "sample/text_generation.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace gpt {

Window context_window(int64_t length, int64_t block_size, int64_t shift, int64_t previous_begin) {
  if (length - previous_begin <= block_size) return {previous_begin, length};
  if (shift == 0) return {length - block_size, length};
  return {length - (block_size - shift + 1), length};
}

int64_t crop_prompt(std::vector<int32_t>& prompt, int64_t block_size) {
  const auto excess = static_cast<int64_t>(prompt.size()) - block_size;
  if (excess <= 0) return 0;
  prompt.erase(prompt.begin(), prompt.begin() + excess);
  return excess;
}

ContextDecoder::ContextDecoder(Generator& generator, int64_t context_shift)
    : generator_(generator), context_shift_(context_shift) {
  GPT_CHECK(context_shift >= 0 && context_shift <= generator.capacity(), "context_shift outside [0, block_size]");
}

const float* ContextDecoder::append_window(int64_t begin, int64_t end) {
  const int64_t n = end - begin;
  window_.resize(static_cast<std::size_t>(generator_.batch() * n));
  for (int64_t s = 0; s < generator_.batch(); ++s)
    std::copy(tokens_[s].begin() + begin, tokens_[s].begin() + end, window_.begin() + s * n);
  return generator_.append(window_.data(), n);
}

const float* ContextDecoder::start(const std::vector<int32_t>& prompt) {
  const auto n = static_cast<int64_t>(prompt.size());
  GPT_CHECK(n >= 1 && n <= generator_.capacity(), "prompt must hold 1 .. block_size tokens");
  tokens_.assign(static_cast<std::size_t>(generator_.batch()), prompt);
  window_begin_ = 0;
  generator_.reset();
  return append_window(0, n);
}

const float* ContextDecoder::push(const int32_t* tokens) {
  for (int64_t s = 0; s < generator_.batch(); ++s) tokens_[s].push_back(tokens[s]);
  const auto length = static_cast<int64_t>(tokens_[0].size());
  const Window w = context_window(length, generator_.capacity(), context_shift_, window_begin_);
  if (w.begin == window_begin_) return append_window(length - 1, length);  // still fits: one token through the cache
  generator_.reset();  // the window moved: re-encode it in one batched forward
  window_begin_ = w.begin;
  return append_window(w.begin, w.end);
}

double sampler_context_nll(Generator& generator, const std::vector<int32_t>& tokens, int64_t context_shift) {
  GPT_CHECK(tokens.size() >= 2, "need at least two tokens");
  GPT_CHECK(generator.batch() == 1, "likelihood measurement needs a batch of one sequence");
  ContextDecoder decoder(generator, context_shift);
  const float* logits = decoder.start({tokens[0]});
  const int64_t V = generator.vocab_size();
  double total = 0.0;
  for (std::size_t t = 1; t < tokens.size(); ++t) {
    double max = logits[0], sum = 0.0;
    for (int64_t v = 1; v < V; ++v) max = std::max(max, static_cast<double>(logits[v]));
    for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits[v]) - max);
    total += max + std::log(sum) - logits[tokens[t]];
    if (t + 1 < tokens.size()) logits = decoder.push(&tokens[t]);
  }
  return total / static_cast<double>(tokens.size() - 1);
}

void generate(Generator& generator, const std::vector<int32_t>& prompt, const GenerationSettings& settings,
              std::vector<Rng>& rngs, const TokenCallback& on_token) {
  const int64_t batch = generator.batch(), V = generator.vocab_size();
  GPT_CHECK(static_cast<int64_t>(rngs.size()) == batch, "one Rng per sequence");
  TokenSampler sampler(settings.sampling);
  ContextDecoder decoder(generator, settings.context_shift);
  std::vector<int32_t> next(static_cast<std::size_t>(batch));
  const float* logits = decoder.start(prompt);
  for (int64_t t = 0; t < settings.max_new_tokens; ++t) {
    for (int64_t s = 0; s < batch; ++s) {
      next[s] = sampler.next(logits + s * V, V, rngs[s]);
      on_token(s, next[s], logits + s * V);
    }
    if (t + 1 < settings.max_new_tokens) logits = decoder.push(next.data());
  }
}

}  // namespace gpt
