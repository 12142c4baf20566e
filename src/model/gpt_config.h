// The model's hyperparameters (the architecture only; training settings live in TrainConfig).
// Stored in checkpoints as JSON so a model file describes itself.
#pragma once

#include <algorithm>
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
  Activation mlp = Activation::gelu;  // the MLP's nonlinearity: gelu (nanoGPT), relu2 or swiglu
  int64_t mlp_hidden = 0;             // the MLP's hidden width; 0: automatic (mlp_width())
  bool tie_embeddings = true;         // the head is wte (GPT-2); false: a separate lm_head.weight
  double logit_softcap = 0;           // > 0: logits = cap * tanh(logits / cap); 0: off
  bool bigram_embedding = false;      // adds wbe[(previous or V) * V + token] to each token's embedding
  bool value_embeddings = false;      // every block but the first adds ve[token] to its v
  // Attention: position encoding, grouped-query attention, QK-norm (applied before RoPE).
  PosEncoding pos_encoding = PosEncoding::learned;  // rope: no wpe weight
  double rope_theta = 10000.0;                      // RoPE base: pair i turns by pos * theta^(-2i/hs)
  int64_t n_kv_head = 0;                            // key/value heads, dividing n_head; 0: n_head
  bool qk_norm = false;                             // weightless RMSNorm over each head's q and k
  int64_t kv_heads() const { return n_kv_head == 0 ? n_head : n_kv_head; }
  // With bigram_embedding: wbe's row for `token` after `previous` (-1: none, at a window's first
  // position, so that a window's embeddings never depend on what came before it).
  int64_t bigram_row(int32_t previous, int32_t token) const {
    return (previous < 0 ? vocab_size : previous) * vocab_size + token;
  }

  int64_t head_size() const { return n_embd / n_head; }
  // Attention's projection is q | k | v: n_head query heads, then kv_heads() key heads and as many
  // value heads (grouped-query attention when fewer than n_head).
  int64_t kv_width() const { return kv_heads() * head_size(); }
  int64_t qkv_width() const { return n_head * head_size() + 2 * kv_width(); }
  int64_t v_column() const { return n_head * head_size() + kv_width(); }  // v's first column
  // The MLP's hidden width: mlp_hidden, or automatically 4 n_embd, and for swiglu (whose two input
  // matrices would make that 1.5 times the parameters) the multiple of 32 nearest to 8 n_embd / 3
  // (ties up, at least 32), as llama.
  int64_t mlp_width() const {
    if (mlp_hidden > 0) return mlp_hidden;
    if (mlp == Activation::swiglu) return std::max<int64_t>(32, (8 * n_embd + 48) / 96 * 32);
    return 4 * n_embd;
  }
  nlohmann::json to_json() const;
  // Throws UserError naming `source` on missing keys, wrong types or inconsistent sizes.
  static GptConfig from_json(const nlohmann::json& j, const std::string& source);
};

}  // namespace gpt
