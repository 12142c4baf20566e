// The model's hyperparameters (the architecture only; training settings live in TrainConfig).
// Stored in checkpoints as JSON so a model file describes itself.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "kernels/activation.h"
#include "kernels/norm.h"

namespace gpt {

struct GptConfig {
  int64_t n_layer = 6;
  int64_t n_head = 6;
  int64_t n_embd = 384;
  int64_t block_size = 256;
  int64_t vocab_size = 65;
  double dropout = 0.0;  // applied in training only; TrainConfig sets it for a run
  bool bias = false;
  // Modern-architecture keys, each off by default (a checkpoint without one reads as the default).
  Norm norm = Norm::layernorm;        // ln_1, ln_2, ln_f; rmsnorm has no bias tensor even with `bias`
  Activation mlp = Activation::gelu;  // the MLP's nonlinearity: gelu (nanoGPT) or relu2

  int64_t head_size() const { return n_embd / n_head; }
  nlohmann::json to_json() const;
  // Throws UserError naming `source` on missing keys, wrong types or inconsistent sizes.
  static GptConfig from_json(const nlohmann::json& j, const std::string& source);
};

}  // namespace gpt
