// The GPT's weights by name: one struct per module, filled from the parameter store by nanoGPT's
// state_dict names. declare_gpt_weights() is the single list of every parameter: its name, its
// shape and how it is initialised, stated where it is declared.
#pragma once

#include <cstdint>
#include <vector>

#include "core/param_store.h"
#include "model/gpt_config.h"

namespace gpt {

struct LinearWeights {
  Tensor weight;   // [out, in], PyTorch's layout
  Tensor bias;     // [out], or absent
  int index = -1;  // position among the model's linears (GptWeights::linears()), for per-weight executor data
};
struct NormWeights {
  Tensor weight, bias;  // [C]; bias absent without config.bias, and always with rmsnorm
  Norm kind = Norm::layernorm;
};
struct BlockWeights {
  NormWeights ln_1;
  LinearWeights c_attn, attn_proj;  // attn.c_attn [(H + 2 KV) hs, C] (3C without GQA), attn.c_proj [C, C]
  NormWeights ln_2;
  // mlp.c_fc [H, C], mlp.c_proj [C, H] with H = config.mlp_width() (4C by default); with swiglu
  // c_fc is [2H, C]: W_gate's rows, then W_up's, so that its output rows are [gate | up].
  LinearWeights c_fc, mlp_proj;
  Tensor ve;  // [V, n_kv_head hs] value embedding added to v; absent in block 0 and without value_embeddings
};
struct GptWeights {
  Tensor wte;  // [V, C] token embedding, also the output head with tie_embeddings (the default)
  Tensor wpe;  // [block_size, C] position embedding; absent with pos_encoding rope
  Tensor wbe;  // [(V + 1) V, C] bigram embedding (config.bigram_row()); absent without bigram_embedding
  std::vector<BlockWeights> blocks;
  NormWeights ln_f;
  LinearWeights lm_head;  // [V, C], no bias: wte's tensor, or lm_head.weight without tie_embeddings

  // Every linear once (lm_head last), in index order.
  std::vector<const LinearWeights*> linears() const;
};

// What the parameters of a config take, from the same list, without allocating anything; in
// double, so that no config overflows it.
struct ParameterSize {
  double parameters = 0;     // trainable values
  double padded_floats = 0;  // in the store's layout (each parameter padded to 64 bytes)
};
ParameterSize gpt_parameter_size(const GptConfig& config);

// Declares every parameter in `store` (which must not be finalized yet) under its nanoGPT name,
// finalizes it, and returns the weights as views into it.
GptWeights declare_gpt_weights(ParamStore& store, const GptConfig& config);

}  // namespace gpt
