// Activations: the elementwise nonlinearities of the model, forward and backward side by side.
// The model definition names one (model/gpt_definition.h); both executors reach it through
// activation_forward, so adding one is an enum value and its kernels here. Plain loops over raw
// arrays, parallel over fixed chunks above a size (the same bits on any thread count).
#pragma once

#include <cstdint>

namespace gpt {

enum class Activation { none, gelu };

// y = act(x) over n values.
void activation_forward(Activation act, const float* x, float* y, int64_t n);
// dx += dy * act'(x).
void activation_backward(Activation act, const float* x, const float* dy, float* dx, int64_t n);
// d = d * act'(x): the gradient of x when d is the gradient of act(x) and x has no other.
void activation_backward_in_place(Activation act, const float* x, float* d, int64_t n);

// The exact GELU, 0.5 x (1 + erf(x / sqrt 2)), and its gradient, by name (tests, profiling).
void gelu_forward(const float* x, float* y, int64_t n);
void gelu_backward(const float* x, const float* dy, float* dx, int64_t n);
void gelu_backward_in_place(const float* x, float* d, int64_t n);

}  // namespace gpt
