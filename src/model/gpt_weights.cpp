#include "model/gpt_weights.h"

#include <cmath>
#include <string>

namespace gpt {

namespace {

// Walks the list of parameters twice: first declaring each one (name, shape, init), then, once
// the store is finalized, reading each back by the same name. So the list exists once. Or, for a
// size estimate, once, only adding up the shapes (in double: no config can overflow it).
class WeightBinder {
 public:
  WeightBinder(ParamStore& store, const GptConfig& c) : store_(&store), bias_(c.bias), norm_(c.norm) {}
  WeightBinder(ParameterSize& size, const GptConfig& c) : size_(&size), bias_(c.bias), norm_(c.norm) {}
  void finish_declaring() {
    store_->finalize();
    declaring_ = false;
    next_linear_ = 0;
  }

  Tensor param(const std::string& name, Shape shape, Init init) {
    if (size_) {
      double n = 1;
      for (int i = 0; i < shape.rank; ++i) n *= static_cast<double>(shape.dims[i]);
      constexpr double kPad = kAlignment / sizeof(float);  // the store pads each parameter to 64 bytes
      size_->parameters += n;
      size_->padded_floats += std::ceil(n / kPad) * kPad;
      return {};
    }
    if (declaring_) {
      store_->add(name, shape, init);
      return {};
    }
    return store_->tensor(name);
  }
  NormWeights norm(const std::string& prefix, int64_t C) {
    // RMSNorm has no bias (it does not centre): the same names, one tensor fewer.
    const Tensor bias = norm_ == Norm::layernorm ? optional_bias(prefix + ".bias", C) : Tensor{};
    return {param(prefix + ".weight", Shape{C}, Init::ones()), bias, norm_};
  }
  LinearWeights linear(const std::string& prefix, int64_t out, int64_t in, double stddev) {
    return {param(prefix + ".weight", Shape{out, in}, Init::normal(stddev)), optional_bias(prefix + ".bias", out),
            next_linear_++};
  }
  LinearWeights tied(const Tensor& weight) { return {weight, Tensor{}, next_linear_++}; }
  LinearWeights head(const std::string& name, int64_t out, int64_t in, double stddev) {
    return {param(name, Shape{out, in}, Init::normal(stddev)), Tensor{}, next_linear_++};
  }

 private:
  Tensor optional_bias(const std::string& name, int64_t n) {
    return bias_ ? param(name, Shape{n}, Init::zeros()) : Tensor{};
  }

  ParamStore* store_ = nullptr;
  ParameterSize* size_ = nullptr;
  bool bias_;
  Norm norm_;
  bool declaring_ = true;
  int next_linear_ = 0;
};

// Block 0's input is the embedding itself: it has none. Named outside transformer.h., whose
// matrices Muon takes: a table is AdamW's (modded-nanogpt). Zero: the model starts as the one
// without them.
Tensor value_embedding(WeightBinder& bind, const GptConfig& c, int64_t layer) {
  if (!c.value_embeddings || layer == 0) return {};
  return bind.param("transformer.ve." + std::to_string(layer) + ".weight", Shape{c.vocab_size, c.kv_width()},
                    Init::zeros());
}

GptWeights list_weights(WeightBinder& bind, const GptConfig& c) {
  const int64_t C = c.n_embd;
  constexpr double stddev = 0.02;
  // GPT-2's scaled init: the projections that write into the residual stream start smaller, so
  // the stream's variance does not grow with depth.
  const double residual_stddev = 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer));
  // The MLP: c_fc gives act's input (for swiglu the rows [gate | up]: W_gate's H rows, then W_up's).
  const int64_t H = c.mlp_width(), fc_out = activation_input_width(c.mlp, H);
  GptWeights w;
  w.wte = bind.param("transformer.wte.weight", Shape{c.vocab_size, C}, Init::normal(stddev));
  // RoPE puts positions into attention: no position embedding.
  if (c.pos_encoding == PosEncoding::learned)
    w.wpe = bind.param("transformer.wpe.weight", Shape{c.block_size, C}, Init::normal(stddev));
  // Zero at the start, so the model starts as the one without it (modded-nanogpt).
  if (c.bigram_embedding)
    w.wbe = bind.param("transformer.wbe.weight", Shape{(c.vocab_size + 1) * c.vocab_size, C}, Init::zeros());
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    w.blocks.push_back({.ln_1 = bind.norm(p + "ln_1", C),
                        .c_attn = bind.linear(p + "attn.c_attn", c.qkv_width(), C, stddev),
                        .attn_proj = bind.linear(p + "attn.c_proj", C, C, residual_stddev),
                        .ln_2 = bind.norm(p + "ln_2", C),
                        .c_fc = bind.linear(p + "mlp.c_fc", fc_out, C, stddev),
                        .mlp_proj = bind.linear(p + "mlp.c_proj", C, H, residual_stddev),
                        .ve = value_embedding(bind, c, l)});
  }
  w.ln_f = bind.norm("transformer.ln_f", C);
  // Untied: nanoGPT's Linear init, N(0, 0.02), no bias.
  w.lm_head = c.tie_embeddings ? bind.tied(w.wte) : bind.head("lm_head.weight", c.vocab_size, C, stddev);
  return w;
}

}  // namespace

std::vector<const LinearWeights*> GptWeights::linears() const {
  std::vector<const LinearWeights*> all;
  for (const BlockWeights& b : blocks)
    for (const LinearWeights* l : {&b.c_attn, &b.attn_proj, &b.c_fc, &b.mlp_proj}) all.push_back(l);
  all.push_back(&lm_head);
  return all;
}

ParameterSize gpt_parameter_size(const GptConfig& config) {
  ParameterSize size;
  WeightBinder count(size, config);
  list_weights(count, config);
  return size;
}

GptWeights declare_gpt_weights(ParamStore& store, const GptConfig& config) {
  WeightBinder bind(store, config);
  list_weights(bind, config);
  bind.finish_declaring();
  return list_weights(bind, config);
}

}  // namespace gpt
