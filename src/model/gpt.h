// Gpt: nanoGPT's GPT. Token + position embeddings, dropout, n_layer pre-LayerNorm blocks
// (x + attn(ln_1(x)), then x + mlp(ln_2(x))), ln_f, and an lm_head tied to the token embedding.
// Parameters are registered under nanoGPT's state_dict names, Linear weights stored [out, in].
// The KV-cached inference path lives in sample/, not here; this is the training/eval forward.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/param_store.h"
#include "core/rng.h"
#include "model/gpt_config.h"

namespace gpt {

class Gpt {
 public:
  struct Output {
    Tensor logits;  // [B, T, V]
    Tensor loss;    // scalar; undefined when no targets were given
  };

  explicit Gpt(const GptConfig& config);

  const GptConfig& config() const { return config_; }
  ParamStore& params() { return params_; }
  void set_dropout(float p) { config_.dropout = p; }

  // nanoGPT's init: weights N(0, 0.02), c_proj weights N(0, 0.02 / sqrt(2 n_layer)), biases 0,
  // LayerNorm weights 1. Parameters are drawn in registration order from `rng`.
  void init_weights(Rng& rng);

  // idx, targets: [B, T] token ids (targets may be null). T <= block_size.
  Output forward(Graph& g, const int32_t* idx, int64_t B, int64_t T, const int32_t* targets, bool training, Rng& rng);

  // Tensors of one block, by name, for tests and inference code.
  struct BlockParams {
    Tensor ln_1_w, ln_1_b, c_attn_w, c_attn_b, attn_proj_w, attn_proj_b, ln_2_w, ln_2_b, c_fc_w, c_fc_b, mlp_proj_w,
        mlp_proj_b;
  };
  BlockParams block(int64_t layer);
  Tensor wte() { return params_.tensor(wte_); }
  Tensor wpe() { return params_.tensor(wpe_); }
  Tensor ln_f_w() { return params_.tensor(ln_f_w_); }
  Tensor ln_f_b() { return ln_f_b_ < 0 ? Tensor{} : params_.tensor(ln_f_b_); }

  // nanoGPT's flop estimate per token for training (6N + 12 L H Q T), N without position embeddings.
  double flops_per_token() const;

 private:
  struct BlockSlots {
    int ln_1_w, ln_1_b, c_attn_w, c_attn_b, attn_proj_w, attn_proj_b, ln_2_w, ln_2_b, c_fc_w, c_fc_b, mlp_proj_w,
        mlp_proj_b;
  };
  Tensor optional(int slot) { return slot < 0 ? Tensor{} : params_.tensor(slot); }

  GptConfig config_;
  ParamStore params_;
  int wte_ = -1, wpe_ = -1, ln_f_w_ = -1, ln_f_b_ = -1;
  std::vector<BlockSlots> blocks_;
};

}  // namespace gpt
