#include "sample/text_generation.h"

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

void generate(Generator& generator, const std::vector<int32_t>& prompt, const GenerationSettings& settings, Rng& rng,
              const TokenCallback& on_token) {
  const int64_t block_size = generator.capacity();
  const int64_t prompt_length = static_cast<int64_t>(prompt.size());
  GPT_CHECK(prompt_length >= 1 && prompt_length <= block_size, "prompt must hold 1 .. block_size tokens");
  GPT_CHECK(settings.context_shift >= 0 && settings.context_shift <= block_size, "context_shift outside [0, block_size]");
  TokenSampler sampler(settings.sampling);
  std::vector<int32_t> tokens = prompt;
  tokens.reserve(static_cast<std::size_t>(prompt_length + settings.max_new_tokens));
  generator.reset();
  const float* logits = generator.append(tokens.data(), prompt_length);
  int64_t window_begin = 0;
  for (int64_t t = 0; t < settings.max_new_tokens; ++t) {
    const int32_t next = sampler.next(logits, generator.vocab_size(), rng);
    tokens.push_back(next);
    on_token(next, logits);
    if (t + 1 == settings.max_new_tokens) break;
    const auto length = static_cast<int64_t>(tokens.size());
    const Window w = context_window(length, block_size, settings.context_shift, window_begin);
    if (w.begin == window_begin) {
      logits = generator.append(&tokens.back(), 1);  // still fits: one token through the cache
    } else {
      generator.reset();  // the window moved: re-encode it in one batched forward
      logits = generator.append(tokens.data() + w.begin, w.end - w.begin);
      window_begin = w.begin;
    }
  }
}

}  // namespace gpt
