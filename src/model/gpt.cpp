#include "model/gpt.h"

#include <string>

#include "core/memory.h"
#include "model/gpt_definition.h"
#include "model/gpt_memory.h"
#include "ops/ops.h"

namespace gpt {

namespace {

// The definition's steps as differentiable ops on the tape. The fused ops keep only what backward
// cannot cheaply recompute (the residual stream, q|k|v, the attention output, the MLP's hidden
// layer) and are tested to give their compositions' bits.
struct TapeExecutor {
  using Value = Tensor;
  Graph& g;
  const GptConfig& config;
  const int32_t* idx;
  int64_t B, T, n_head, n_kv_head;
  const RopeTable& rope_table;
  float dropout;
  Rng& rng;
  bool training;
  Dtype matmul_dtype;

  Tensor embed(const Tensor& wte, const Tensor& wpe, const Tensor& wbe) {
    if (!defined(wbe)) {
      if (!defined(wpe)) return gpt::dropout(g, embedding(g, wte, idx, Shape{B, T}), dropout, rng, training);
      return token_position_embedding(g, wte, wpe, idx, B, T, dropout, rng, training);
    }
    const Tensor tokens = defined(wpe) ? token_position_embedding(g, wte, wpe, idx, B, T, 0.0f, rng, false)
                                       : embedding(g, wte, idx, Shape{B, T});
    const Tensor bigrams = embedding(g, wbe, bigram_rows(), Shape{B, T});
    return gpt::dropout(g, add(g, tokens, bigrams), dropout, rng, training);
  }
  // Each position's wbe row, the previous token taken from the same window.
  const int32_t* bigram_rows() {
    auto* rows = static_cast<int32_t*>(g.arena().allocate_bytes(B * T * sizeof(int32_t)));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        rows[b * T + t] = static_cast<int32_t>(config.bigram_row(t > 0 ? idx[b * T + t - 1] : -1, idx[b * T + t]));
    return rows;
  }
  Tensor value_embed(const Tensor& qkv, const Tensor& ve) {
    return add_embedding_at(g, qkv, ve, idx, config.v_column());
  }
  Tensor qk_norm(const Tensor& qkv) {
    return qk_rmsnorm(g, qkv, static_cast<int>(n_head), static_cast<int>(n_kv_head));
  }
  Tensor rope(const Tensor& qkv) {
    return gpt::rope(g, qkv, static_cast<int>(n_head), static_cast<int>(n_kv_head), rope_table);
  }
  Tensor norm_linear(const Tensor& x, const NormWeights& norm, const LinearWeights& linear) {
    return gpt::norm_linear(g, norm.kind, x, norm.weight, norm.bias, linear.weight, linear.bias, matmul_dtype);
  }
  Tensor attention(const Tensor& qkv, int64_t /*layer*/) {
    return causal_self_attention(g, qkv, static_cast<int>(n_head), dropout, rng, training, static_cast<int>(n_kv_head),
                                 matmul_dtype);
  }
  Tensor residual(const Tensor& x, const Tensor& in, Activation act, const LinearWeights& linear) {
    return residual_projection(g, x, in, act, linear.weight, linear.bias, dropout, rng, training, matmul_dtype);
  }
  Tensor softcap(const Tensor& logits, float cap) { return gpt::softcap(g, logits, cap); }
};

}  // namespace

Gpt::Gpt(const GptConfig& config) : config_(config) {
  GPT_CHECK(config.n_embd % config.n_head == 0, "n_embd must be divisible by n_head");
  GPT_CHECK(config.n_head % config.kv_heads() == 0, "n_kv_head must divide n_head");
  // A model larger than the machine is said before anything is allocated, with its sizes and the
  // settings behind them; a refusal from the allocator says the same.
  const GptMemory memory = estimate_gpt_memory(config_);
  const auto available = static_cast<double>(system_memory_bytes());
  if (available > 0 && memory.model_bytes() > available)
    throw UserError(gpt_memory_message(config_, memory), ExitCode::runtime);
  try {
    if (config.pos_encoding == PosEncoding::rope)
      rope_table_ = make_rope_table(config.block_size, config.head_size(), config.rope_theta);
    weights_ = declare_gpt_weights(params_, config_);
  } catch (const AllocationFailure&) {
    throw UserError(gpt_memory_message(config_, memory), ExitCode::runtime);
  } catch (const std::bad_alloc&) {
    throw UserError(gpt_memory_message(config_, memory), ExitCode::runtime);
  }
}

Gpt::Output Gpt::forward(Graph& g, const int32_t* idx, int64_t B, int64_t T, const int32_t* targets, bool training,
                         Rng& dropout_rng) {
  GPT_CHECK(T >= 1 && T <= config_.block_size, "sequence length " + std::to_string(T) + " outside [1, block_size]");
  TapeExecutor executor{.g = g,
                        .config = config_,
                        .idx = idx,
                        .B = B,
                        .T = T,
                        .n_head = config_.n_head,
                        .n_kv_head = config_.kv_heads(),
                        .rope_table = rope_table_,
                        .dropout = static_cast<float>(config_.dropout),
                        .rng = dropout_rng,
                        .training = training,
                        .matmul_dtype = matmul_dtype_};
  Output out;
  out.logits = run_gpt(config_, weights_, executor);
  if (targets) out.loss = cross_entropy(g, reshape(out.logits, Shape{B * T, config_.vocab_size}), targets);
  return out;
}

double Gpt::flops_per_token() const {
  // The embeddings are lookups, not products: wpe (absent with rope), wbe and the value embeddings
  // never count, wte only as the tied head.
  int64_t lookups = 0;
  for (const BlockWeights& b : weights_.blocks) lookups += defined(b.ve) ? b.ve.numel() : 0;
  lookups += (defined(weights_.wpe) ? weights_.wpe.numel() : 0) + (defined(weights_.wbe) ? weights_.wbe.numel() : 0) +
             (config_.tie_embeddings ? 0 : config_.vocab_size * config_.n_embd);
  const double N = static_cast<double>(params_.parameter_count() - lookups);
  return 6.0 * N +
         12.0 * static_cast<double>(config_.n_layer * config_.n_head * config_.head_size() * config_.block_size);
}

}  // namespace gpt
