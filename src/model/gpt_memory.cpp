#include "model/gpt_memory.h"

#include <cstdio>
#include <iterator>

#include "core/memory.h"
#include "model/gpt_weights.h"

namespace gpt {

namespace {

// "10.7 M", "288.0 T": a count for people.
std::string count_label(double n) {
  static const char* const units[] = {"", " thousand", " million", " billion", " trillion", " quadrillion"};
  std::size_t unit = 0;
  while (n >= 1000 && unit + 1 < std::size(units)) n /= 1000, ++unit;
  char text[48];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f%s" : "%.1f%s", n, units[unit]);
  return text;
}

std::string setting(const char* name, int64_t value) { return std::string(name) + " " + std::to_string(value); }

}  // namespace

GptMemory estimate_gpt_memory(const GptConfig& c) {
  GptMemory memory;
  const ParameterSize size = gpt_parameter_size(c);
  memory.parameters = size.parameters;
  memory.weight_bytes = size.padded_floats * sizeof(float);
  if (c.pos_encoding == PosEncoding::rope)
    memory.rope_table_bytes =
        2.0 * static_cast<double>(c.block_size) * static_cast<double>(c.head_size() / 2) * sizeof(float);
  // Per token, what a training step keeps in the arena (tests/test_model.cpp bounds it): per layer
  // about 10 values of width n_embd (the residual stream twice, q|k|v, the attention output, the
  // MLP's hidden layer: 4 n_embd wide by default, c_fc's output width in general), about 16 more
  // for the embeddings, the final norm and the gradients backward is working on, and the logits
  // with their gradient and probabilities (and, soft-capped, the capped logits and their gradient).
  const auto L = static_cast<double>(c.n_layer), C = static_cast<double>(c.n_embd),
             V = static_cast<double>(c.vocab_size), T = static_cast<double>(c.block_size),
             hidden = static_cast<double>(activation_input_width(c.mlp, c.mlp_width())),
             logits = c.logit_softcap > 0 ? 5.0 : 3.0;
  // q|k|v is 3 n_embd wide, narrower with grouped-query attention, and QK-norm and RoPE each keep
  // one more copy of it.
  const auto qkv = static_cast<double>(c.qkv_width());
  const double qkv_copies = 1.0 + (c.qk_norm ? 1.0 : 0.0) + (c.pos_encoding == PosEncoding::rope ? 1.0 : 0.0);
  memory.activation_bytes = T * (L * (3 * C + qkv * qkv_copies + hidden) + 16 * C + logits * V) * sizeof(float);
  return memory;
}

std::string gpt_memory_message(const GptConfig& c, const GptMemory& memory) {
  const double available = static_cast<double>(system_memory_bytes());
  return "the model does not fit in memory: " + setting("n_layer", c.n_layer) + ", " + setting("n_embd", c.n_embd) +
         ", " + setting("vocab_size", c.vocab_size) + " and " + setting("block_size", c.block_size) + " make " +
         count_label(memory.parameters) + " parameters, whose values and gradients need " +
         byte_size(memory.model_bytes() - memory.rope_table_bytes) +
         (memory.rope_table_bytes > 0
              ? " (and RoPE's table of block_size positions " + byte_size(memory.rope_table_bytes) + ")"
              : std::string()) +
         (available > 0 ? "; this machine has " + byte_size(available) + " of RAM and swap" : std::string()) +
         ". Training also needs " + byte_size(memory.optimizer_bytes()) +
         " of optimizer state (AdamW keeps two values per parameter, Lion and Muon's matrices one) and about " +
         byte_size(memory.activation_bytes) +
         " of activations per sequence (block_size tokens; times batch_size per step). The parameters grow as about "
         "n_layer n_embd (4 n_embd + 2 mlp_hidden) + vocab_size n_embd (mlp_hidden " +
         std::to_string(c.mlp_width()) +
         " here; 3 matrices with swiglu), the activations as batch_size block_size "
         "n_layer (n_embd + mlp_hidden): reduce n_embd or n_layer.";
}

}  // namespace gpt
