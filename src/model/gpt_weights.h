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
  LinearWeights c_fc, mlp_proj;  // mlp.c_fc [4C, C], mlp.c_proj [C, 4C]
};
struct GptWeights {
  Tensor wte;  // [V, C] token embedding, also the output head (weight tying)
  Tensor wpe;  // [block_size, C] position embedding; absent with pos_encoding rope
  std::vector<BlockWeights> blocks;
  NormWeights ln_f;
  LinearWeights lm_head;  // wte's tensor, no bias

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
