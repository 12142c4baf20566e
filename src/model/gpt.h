// Gpt: nanoGPT's GPT, as the parameter store plus the one definition of its forward pass
// (model/gpt_definition.h) run on the tape. Parameters live under nanoGPT's state_dict names,
// Linear weights [out, in]; weights() views them by module. KV-cached generation runs the same
// definition with another executor (sample/generator.h).
#pragma once

#include <cstdint>

#include "core/graph.h"
#include "core/param_store.h"
#include "core/rng.h"
#include "kernels/dtype.h"
#include "kernels/rope.h"
#include "model/gpt_config.h"
#include "model/gpt_weights.h"

namespace gpt {

class Gpt {
 public:
  struct Output {
    Tensor logits;  // [B, T, V]
    Tensor loss;    // scalar; undefined when no targets were given
  };

  explicit Gpt(const GptConfig& config);
  Gpt(const Gpt&) = delete;  // weights_ views params_
  Gpt& operator=(const Gpt&) = delete;

  const GptConfig& config() const { return config_; }
  ParamStore& params() { return params_; }
  const GptWeights& weights() const { return weights_; }
  // cos/sin of every position and frequency, made once with the model; empty without RoPE.
  const RopeTable& rope_table() const { return rope_table_; }
  void set_dropout(double p) { config_.dropout = p; }
  // The Linear layers' matrix products in float32 or bfloat16 (mixed precision, `dtype`): a
  // setting of the run, like dropout; the weights stay float32.
  void set_matmul_dtype(Dtype dtype) { matmul_dtype_ = dtype; }
  Dtype matmul_dtype() const { return matmul_dtype_; }

  // Every parameter from the init rule it was declared with (gpt_weights.cpp), each from its own
  // random stream keyed by (seed, parameter name).
  void init_weights(uint64_t seed) { params_.initialize(seed); }

  // idx, targets: [B, T] token ids (targets may be null). T <= block_size. In training, the
  // dropout ops draw their masks' seeds from `dropout_rng`, one per op, in order.
  Output forward(Graph& g, const int32_t* idx, int64_t B, int64_t T, const int32_t* targets, bool training,
                 Rng& dropout_rng);

  // nanoGPT's flop estimate per token for training (6N + 12 L H Q T), N without position embeddings.
  double flops_per_token() const;

 private:
  GptConfig config_;
  ParamStore params_;
  GptWeights weights_;
  RopeTable rope_table_;
  Dtype matmul_dtype_ = Dtype::float32;
};

}  // namespace gpt
