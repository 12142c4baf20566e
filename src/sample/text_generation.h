// Generating text after a prompt, with the two ways to go past block_size:
//  - exact (context_shift = 0, nanoGPT's semantics): every token is conditioned on exactly the
//    last block_size tokens; with absolute position embeddings every cached key and value
//    changes when the window moves, so once the window is full it is re-encoded per token (one
//    batched forward). While the text fits in block_size, one token's work per token.
//  - shifting window (context_shift = N): when the cache is full, the oldest N tokens are dropped
//    and the rest re-encoded once; generation continues from the cache. Each token then sees
//    between block_size - N + 1 and block_size tokens (itself included).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sample/generator.h"
#include "sample/sampling.h"

namespace gpt {

struct GenerationSettings {
  int64_t max_new_tokens = 500;
  int64_t context_shift = 0;  // 0 = exact
  SamplingSettings sampling;
};

// Drives a Generator's batch of sequences through the context windows of one of the two modes:
// start() with a prompt (the same for every sequence), then push() each sequence's next token
// (tokens[s] for sequence s); both return the logits [batch, V] for the next tokens. All
// sequences have the same length, so their windows move together.
class ContextDecoder {
 public:
  ContextDecoder(Generator& generator, int64_t context_shift);
  const float* start(const std::vector<int32_t>& prompt);
  const float* push(const int32_t* tokens);

 private:
  const float* append_window(int64_t begin, int64_t end);
  Generator& generator_;
  int64_t context_shift_;
  std::vector<std::vector<int32_t>> tokens_;  // per sequence: prompt + generated
  std::vector<int32_t> window_;               // [batch, n] tokens of the next append
  int64_t window_begin_ = 0;
};

// Mean negative log-likelihood (nats) of tokens[1 .. n-1], each conditioned as the sampler would
// condition it after the one-token prompt tokens[0]: what a context mode costs in quality.
double sampler_context_nll(Generator& generator, const std::vector<int32_t>& tokens, int64_t context_shift);

// Generates max_new_tokens after `prompt` for each of the generator's batch of sequences; sequence
// s draws from rngs[s]. Calls on_token(s, token, logits it was drawn from [V]) for every new token,
// sequence by sequence within each step. `prompt` must hold 1 .. block_size tokens (see crop_prompt).
using TokenCallback = std::function<void(int64_t sequence, int32_t token, const float* logits)>;
void generate(Generator& generator, const std::vector<int32_t>& prompt, const GenerationSettings& settings,
              std::vector<Rng>& rngs, const TokenCallback& on_token);

// A prompt longer than block_size keeps its last block_size tokens (nanoGPT crops the same way);
// returns how many were dropped.
int64_t crop_prompt(std::vector<int32_t>& prompt, int64_t block_size);

// The windows generate() conditions each new token on, as [begin, end) into the full token
// sequence (prompt + generated): for tests and for measuring a mode's likelihood.
struct Window {
  int64_t begin, end;
};
Window context_window(int64_t sequence_length, int64_t block_size, int64_t context_shift, int64_t previous_begin);

}  // namespace gpt
