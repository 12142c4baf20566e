#include "model/gpt.h"

#include <cmath>
#include <string>

#include "ops/ops.h"

namespace gpt {

Gpt::Gpt(const GptConfig& config) : config_(config) {
  GPT_CHECK(config.n_embd % config.n_head == 0, "n_embd must be divisible by n_head");
  const int64_t C = config.n_embd;
  wte_ = params_.add("transformer.wte.weight", Shape{config.vocab_size, C});
  wpe_ = params_.add("transformer.wpe.weight", Shape{config.block_size, C});
  auto bias = [&](const std::string& name, int64_t n) { return config.bias ? params_.add(name, Shape{n}) : -1; };
  for (int64_t l = 0; l < config.n_layer; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    BlockSlots s{};
    s.ln_1_w = params_.add(p + "ln_1.weight", Shape{C});
    s.ln_1_b = bias(p + "ln_1.bias", C);
    s.c_attn_w = params_.add(p + "attn.c_attn.weight", Shape{3 * C, C});
    s.c_attn_b = bias(p + "attn.c_attn.bias", 3 * C);
    s.attn_proj_w = params_.add(p + "attn.c_proj.weight", Shape{C, C});
    s.attn_proj_b = bias(p + "attn.c_proj.bias", C);
    s.ln_2_w = params_.add(p + "ln_2.weight", Shape{C});
    s.ln_2_b = bias(p + "ln_2.bias", C);
    s.c_fc_w = params_.add(p + "mlp.c_fc.weight", Shape{4 * C, C});
    s.c_fc_b = bias(p + "mlp.c_fc.bias", 4 * C);
    s.mlp_proj_w = params_.add(p + "mlp.c_proj.weight", Shape{C, 4 * C});
    s.mlp_proj_b = bias(p + "mlp.c_proj.bias", C);
    blocks_.push_back(s);
  }
  ln_f_w_ = params_.add("transformer.ln_f.weight", Shape{C});
  ln_f_b_ = bias("transformer.ln_f.bias", C);
  params_.finalize();
}

void Gpt::init_weights(Rng& rng) {
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config_.n_layer));
  for (int i = 0; i < params_.size(); ++i) {
    const auto& slot = params_.slot(i);
    Tensor t = params_.tensor(i);
    const bool is_layernorm_weight = slot.name.find("ln_") != std::string::npos && slot.name.ends_with(".weight");
    if (slot.name.ends_with(".bias")) {
      for (int64_t k = 0; k < t.numel(); ++k) t.data[k] = 0.0f;
    } else if (is_layernorm_weight) {
      for (int64_t k = 0; k < t.numel(); ++k) t.data[k] = 1.0f;
    } else {
      const double stddev = slot.name.ends_with("c_proj.weight") ? proj_std : 0.02;
      for (int64_t k = 0; k < t.numel(); ++k) t.data[k] = static_cast<float>(rng.normal() * stddev);
    }
  }
}

Gpt::BlockParams Gpt::block(int64_t layer) {
  const BlockSlots& s = blocks_.at(static_cast<std::size_t>(layer));
  return {params_.tensor(s.ln_1_w),      optional(s.ln_1_b),      params_.tensor(s.c_attn_w), optional(s.c_attn_b),
          params_.tensor(s.attn_proj_w), optional(s.attn_proj_b), params_.tensor(s.ln_2_w),   optional(s.ln_2_b),
          params_.tensor(s.c_fc_w),      optional(s.c_fc_b),      params_.tensor(s.mlp_proj_w), optional(s.mlp_proj_b)};
}

Gpt::Output Gpt::forward(Graph& g, const int32_t* idx, int64_t B, int64_t T, const int32_t* targets, bool training,
                         Rng& rng) {
  GPT_CHECK(T >= 1 && T <= config_.block_size, "sequence length " + std::to_string(T) + " outside [1, block_size]");
  const int64_t V = config_.vocab_size;
  const float p = config_.dropout;
  Tensor x = token_position_embedding(g, wte(), wpe(), idx, B, T, p, rng, training);
  for (int64_t l = 0; l < config_.n_layer; ++l) {
    const BlockParams w = block(l);
    // x + attn(ln_1(x)), then x + mlp(ln_2(x)); the fused ops keep only what backward cannot
    // cheaply recompute (the residual stream, q|k|v, the attention output, the MLP's hidden layer).
    const Tensor qkv = layernorm_linear(g, x, w.ln_1_w, w.ln_1_b, w.c_attn_w, w.c_attn_b);
    const Tensor attended = causal_self_attention(g, qkv, static_cast<int>(config_.n_head), p, rng, training);
    x = residual_projection(g, x, attended, Activation::none, w.attn_proj_w, w.attn_proj_b, p, rng, training);
    const Tensor hidden = layernorm_linear(g, x, w.ln_2_w, w.ln_2_b, w.c_fc_w, w.c_fc_b);  // before GELU
    x = residual_projection(g, x, hidden, Activation::gelu, w.mlp_proj_w, w.mlp_proj_b, p, rng, training);
  }
  Output out;
  out.logits = layernorm_linear(g, x, ln_f_w(), ln_f_b(), wte(), Tensor{});  // lm_head shares wte's weight
  if (targets) out.loss = cross_entropy(g, reshape(out.logits, Shape{B * T, V}), targets);
  return out;
}

double Gpt::flops_per_token() const {
  const double N = static_cast<double>(params_.parameter_count() - config_.block_size * config_.n_embd);
  return 6.0 * N + 12.0 * static_cast<double>(config_.n_layer * config_.n_head * config_.head_size() * config_.block_size);
}

}  // namespace gpt
