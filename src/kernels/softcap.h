// Logit soft-capping: y = cap * tanh(x / cap), which bounds the logits to (-cap, cap) smoothly
// (Gemma 2, Gemma Team 2024; modded-nanogpt). tanh is fast_tanh (kernels/fast_math.h), so the
// softcap op in training and the sampler's executor give the same bits; every value is computed
// on its own, so any split of the values (rows, columns, threads) gives them too.
#pragma once

#include <cstdint>

namespace gpt {

// x, y: [n] (y == x allowed); cap > 0.
void softcap_forward(const float* x, float* y, int64_t n, float cap);
// dx += dy * (1 - tanh(x / cap)^2); x, dy, dx: [n].
void softcap_backward(const float* x, const float* dy, float* dx, int64_t n, float cap);

}  // namespace gpt
