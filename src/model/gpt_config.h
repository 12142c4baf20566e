// The model's hyperparameters (the architecture only; training settings live in TrainConfig).
// Stored in checkpoints as JSON so a model file describes itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "kernels/activation.h"
#include "kernels/norm.h"

namespace gpt {

// Where position information enters: learned absolute embeddings added to the tokens' (wpe;
// GPT-2), or rotary embeddings on every head's q and k (RoPE; Su et al. 2021, GPT-NeoX, llama).
enum class PosEncoding { learned, rope };
inline const char* pos_encoding_name(PosEncoding p) { return p == PosEncoding::rope ? "rope" : "learned"; }
inline std::optional<PosEncoding> parse_pos_encoding(const std::string& text) {
  if (text == "learned") return PosEncoding::learned;
  if (text == "rope") return PosEncoding::rope;
  return std::nullopt;
}

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
  // Attention: position encoding, grouped-query attention, QK-norm (applied before RoPE).
  PosEncoding pos_encoding = PosEncoding::learned;  // rope: no wpe weight
  double rope_theta = 10000.0;                      // RoPE base: pair i turns by pos * theta^(-2i/hs)
  int64_t n_kv_head = 0;                            // key/value heads, dividing n_head; 0: n_head
  bool qk_norm = false;                             // weightless RMSNorm over each head's q and k
  int64_t kv_heads() const { return n_kv_head == 0 ? n_head : n_kv_head; }

  int64_t head_size() const { return n_embd / n_head; }
  nlohmann::json to_json() const;
  // Throws UserError naming `source` on missing keys, wrong types or inconsistent sizes.
  static GptConfig from_json(const nlohmann::json& j, const std::string& source);
};

}  // namespace gpt
