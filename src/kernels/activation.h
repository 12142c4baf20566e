// Activations: the MLP's nonlinearities, forward and backward side by side.
// Every op and executor that applies one (the activation op, residual_projection, the sampler's
// generator) goes through activation_forward / activation_backward, each one switch over the
// enum, so a forward and its gradient cannot disagree. Adding one: an enum value, its name, and
// its kernels in activation.cpp (-Wswitch points at the three switches); the tests iterate over
// all_activations(). Plain loops over raw arrays, parallel over fixed chunks above a size (the
// same bits on any thread count). All are elementwise except the gated swiglu, whose input rows
// are twice as wide as its output rows (activation_input_width).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpt {

// none: the identity; gelu: the exact (erf) GELU; relu2: relu(x)^2 (So et al. 2021, "Primer";
// modded-nanogpt's MLP); swiglu: silu(gate) * up for an input row [gate | up] (Shazeer 2020, "GLU
// Variants Improve Transformer"; llama's MLP), silu(g) = g sigmoid(g).
enum class Activation { none, gelu, relu2, swiglu };

// The lower-case name ("none", "gelu", "relu2"), or nullptr for a value outside the enum.
// (Inline, with the two below: config and checkpoint readers use them without the kernels.)
inline const char* activation_name(Activation act) {
  switch (act) {
    case Activation::none:
      return "none";
    case Activation::gelu:
      return "gelu";
    case Activation::relu2:
      return "relu2";
    case Activation::swiglu:
      return "swiglu";
  }
  return nullptr;
}

// The MLP's activation (config key `mlp`) by name: "gelu", "relu2" or "swiglu" (nullopt for any
// other text).
inline std::optional<Activation> parse_mlp_activation(const std::string& text) {
  for (Activation act : {Activation::gelu, Activation::relu2, Activation::swiglu})
    if (text == activation_name(act)) return act;
  return std::nullopt;
}

// Every value of the enum, in order (the values with a name, counted from 0).
inline std::vector<Activation> all_activations() {
  std::vector<Activation> all;
  for (int i = 0; activation_name(static_cast<Activation>(i)); ++i) all.push_back(static_cast<Activation>(i));
  return all;
}

// Whether act(x) = x: callers may then skip the kernels (and the buffer for act(x)) entirely.
inline bool is_identity(Activation act) { return act == Activation::none; }

// Whether act is gated: each input row is [gate | up], two halves of the output's width.
inline bool is_gated(Activation act) { return act == Activation::swiglu; }

// The width of act's input rows for output rows of `width`.
inline int64_t activation_input_width(Activation act, int64_t width) { return is_gated(act) ? 2 * width : width; }

// y = act(x) over `rows` rows: x: [rows, activation_input_width(act, width)], y: [rows, width]
// (y == x allowed for elementwise activations, where rows x width is any split of the values).
void activation_forward(Activation act, const float* x, float* y, int64_t rows, int64_t width);

// How a backward kernel writes the input's gradient.
enum class GradWrite {
  accumulate,  // dx += dy * act'(x)
  overwrite,   // dx = dy * act'(x); dx may be dy (in place) for elementwise activations
};
// The gradient of x given dy, the gradient of act(x): x, dx: [rows, activation_input_width(act,
// width)], dy: [rows, width].
void activation_backward(Activation act, const float* x, const float* dy, float* dx, int64_t rows, int64_t width,
                         GradWrite write = GradWrite::accumulate);

}  // namespace gpt
