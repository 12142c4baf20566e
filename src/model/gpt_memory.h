// What a GPT of a given config needs in memory, estimated from the config alone (nothing is
// allocated): its parameters with their gradients (what a Gpt allocates), the optimizer's state,
// and a training step's activations per sequence. The Gpt constructor checks the first against
// the machine's memory, and names all of them, with the settings that drive them, when it does
// not fit.
#pragma once

#include <cstdint>
#include <string>

#include "model/gpt_config.h"

namespace gpt {

struct GptMemory {
  double parameters = 0;         // trainable values
  double weight_bytes = 0;       // the parameters in the store's layout (float32, padded)
  double activation_bytes = 0;   // a training step's arena per sequence of block_size tokens (about)
  double optimizer_buffers = 2;  // state buffers the size of the weights (AdamW: 2, Lion: 1)
  double rope_table_bytes = 0;   // RoPE's cos and sin for every position (pos_encoding "rope")

  double model_bytes() const { return 2 * weight_bytes + rope_table_bytes; }  // weights, gradients, tables
  double optimizer_bytes() const { return optimizer_buffers * weight_bytes; }
  double training_bytes(int64_t batch_size) const {
    return model_bytes() + optimizer_bytes() + static_cast<double>(batch_size) * activation_bytes;
  }
};

GptMemory estimate_gpt_memory(const GptConfig& config);

// "the model does not fit in memory: ..." with every size above, the machine's memory, and the
// settings each size grows with (for the error when a Gpt cannot be allocated).
std::string gpt_memory_message(const GptConfig& config, const GptMemory& memory);

}  // namespace gpt
