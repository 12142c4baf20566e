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

// Calls on_token(token, logits it was drawn from [V]) for every new token.
// `prompt` must hold 1 .. block_size tokens (see crop_prompt).
using TokenCallback = std::function<void(int32_t token, const float* logits)>;
void generate(Generator& generator, const std::vector<int32_t>& prompt, const GenerationSettings& settings, Rng& rng,
              const TokenCallback& on_token);

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
