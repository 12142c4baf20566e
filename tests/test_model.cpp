// The GPT model: the fused attention block equals H independent heads built from primitives,
// parameter names and initialisation follow nanoGPT, and its memory estimate holds (and a model
// larger than the machine is refused with its sizes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/check.h"
#include "gradcheck.h"
#include "model/gpt.h"
#include "model/gpt_memory.h"
#include "ops/ops.h"
#include "train/muon.h"

namespace gpt {
namespace {

using testing::OwnedTensor;

// Multi-head attention as H independent heads, each with its own query/key/value projection
// (slices of c_attn's weight and bias), outputs concatenated and mixed by c_proj: the textbook
// formulation, from primitive ops only.
Tensor attention_as_independent_heads(Graph& g, const Tensor& x, const BlockWeights& w, int64_t n_head) {
  const int64_t C = x.shape[-1], hs = C / n_head;
  Tensor w_t = transpose(g, w.c_attn.weight, 0, 1);  // [C, 3C]: columns are output features
  std::vector<int64_t> sizes(3 * n_head, hs);
  std::vector<Tensor> w_heads = split_last(g, w_t, sizes);  // q heads, then k heads, then v heads
  std::vector<Tensor> b_heads;
  if (defined(w.c_attn.bias)) b_heads = split_last(g, w.c_attn.bias, sizes);
  auto project = [&](int64_t part) {
    Tensor p = matmul(g, x, w_heads[part]);  // [B, T, hs]
    return defined(w.c_attn.bias) ? add(g, p, b_heads[part]) : p;
  };
  std::vector<Tensor> outputs;
  for (int64_t h = 0; h < n_head; ++h) {
    Tensor q = project(h), k = project(n_head + h), v = project(2 * n_head + h);
    Tensor scores = scale(g, matmul(g, q, k, false, true), 1.0f / std::sqrt(static_cast<float>(hs)));  // [B, T, T]
    Tensor att = softmax(g, causal_mask_fill(g, scores, -INFINITY));
    outputs.push_back(matmul(g, att, v));
  }
  return linear(g, concat_last(g, outputs), w.attn_proj.weight, w.attn_proj.bias);
}

void expect_heads_match(bool bias) {
  GptConfig config;
  config.n_layer = 1;
  config.n_head = 3;
  config.n_embd = 12;
  config.block_size = 7;
  config.vocab_size = 5;
  config.dropout = 0;
  config.bias = bias;
  Gpt model(config);
  // Every weight drawn here (larger than the init, so attention is far from uniform).
  Rng rng(3);
  ParamStore& params = model.params();
  for (int64_t i = 0; i < static_cast<int64_t>(params.padded_floats()); ++i)
    params.data()[i] = static_cast<float>(rng.normal() * 0.5);
  OwnedTensor x(Shape{2, 7, 12}, rng), upstream(Shape{2, 7, 12}, rng);
  const BlockWeights& w = model.weights().blocks[0];

  Arena arena;
  Graph g(arena);
  Tensor fused =
      linear(g, causal_self_attention(g, linear(g, x.view(), w.c_attn.weight, w.c_attn.bias), 3, 0, rng, false),
             w.attn_proj.weight, w.attn_proj.bias);
  std::copy(upstream.data.begin(), upstream.data.end(), fused.grad_accumulator());
  g.run_backward();
  g.reset();
  std::vector<float> fused_dx = x.grad, fused_dparams(params.grad(), params.grad() + params.padded_floats());
  std::fill(x.grad.begin(), x.grad.end(), 0.0f);
  params.zero_grad();

  Tensor heads = attention_as_independent_heads(g, x.view(), w, 3);
  ASSERT_EQ(heads.shape, fused.shape);
  // fused.data was in the reset arena; recompute it without gradients to compare outputs.
  std::copy(upstream.data.begin(), upstream.data.end(), heads.grad_accumulator());
  std::vector<float> heads_out(heads.data, heads.data + heads.numel());
  g.run_backward();
  g.reset();
  {
    NoGradGuard no_grad(g);
    Tensor again =
        linear(g, causal_self_attention(g, linear(g, x.view(), w.c_attn.weight, w.c_attn.bias), 3, 0, rng, false),
               w.attn_proj.weight, w.attn_proj.bias);
    for (int64_t i = 0; i < again.numel(); ++i) EXPECT_NEAR(again.data[i], heads_out[i], 1e-5) << "output " << i;
  }
  for (std::size_t i = 0; i < x.grad.size(); ++i) EXPECT_NEAR(x.grad[i], fused_dx[i], 1e-5) << "dx " << i;
  for (std::size_t i = 0; i < fused_dparams.size(); ++i)
    EXPECT_NEAR(params.grad()[i], fused_dparams[i], 1e-5) << "dparam " << i;
}

TEST(Gpt, FusedAttentionEqualsIndependentHeads) { expect_heads_match(false); }
TEST(Gpt, FusedAttentionEqualsIndependentHeadsWithBias) { expect_heads_match(true); }

TEST(Gpt, ParameterNamesAndInitFollowNanoGpt) {
  GptConfig config;
  config.n_layer = 2;
  config.n_head = 2;
  config.n_embd = 64;
  config.block_size = 16;
  config.vocab_size = 65;
  config.bias = true;
  Gpt model(config);
  Rng rng(1);
  model.init_weights(rng.next_u64());
  ParamStore& params = model.params();
  EXPECT_EQ(params.slot(0).name, "transformer.wte.weight");
  EXPECT_GE(params.index_of("transformer.h.1.mlp.c_proj.bias"), 0);
  EXPECT_EQ(params.index_of("lm_head.weight"), -1);  // tied to wte
  EXPECT_EQ(params.tensor("transformer.h.0.attn.c_attn.weight").shape, (Shape{192, 64}));
  auto stddev = [&](const std::string& name) {
    Tensor t = params.tensor(name);
    double s = 0;
    for (int64_t i = 0; i < t.numel(); ++i) s += double(t.data[i]) * t.data[i];
    return std::sqrt(s / double(t.numel()));
  };
  EXPECT_NEAR(stddev("transformer.h.0.mlp.c_fc.weight"), 0.02, 0.002);
  EXPECT_NEAR(stddev("transformer.h.0.mlp.c_proj.weight"), 0.02 / std::sqrt(4.0), 0.001);
  EXPECT_EQ(params.tensor("transformer.h.0.ln_1.weight").data[5], 1.0f);
  EXPECT_EQ(params.tensor("transformer.ln_f.bias").data[5], 0.0f);
}

// The modern-architecture keys: off by default and then absent from the JSON (a model of
// today's architecture is written as before), read as the default when absent (old checkpoints),
// round-tripped when set; rmsnorm keeps the norms' names and drops their biases.
TEST(GptConfig, ModernKeysAreOffByDefaultAndRoundTrip) {
  GptConfig config;
  nlohmann::json j = config.to_json();
  EXPECT_FALSE(j.contains("norm"));
  EXPECT_FALSE(j.contains("mlp"));
  EXPECT_EQ(GptConfig::from_json(j, "old").norm, Norm::layernorm);
  EXPECT_EQ(GptConfig::from_json(j, "old").mlp, Activation::gelu);
  config.norm = Norm::rmsnorm;
  config.mlp = Activation::relu2;
  j = config.to_json();
  EXPECT_EQ(j["norm"], "rmsnorm");
  EXPECT_EQ(j["mlp"], "relu2");
  EXPECT_EQ(GptConfig::from_json(j, "new").to_json(), j);
  j["norm"] = "batchnorm";
  EXPECT_THROW(GptConfig::from_json(j, "bad"), UserError);
  j["norm"] = "rmsnorm";
  j["mlp"] = "none";  // an activation, but not an MLP's
  EXPECT_THROW(GptConfig::from_json(j, "bad"), UserError);
}

// pos_encoding, rope_theta, n_kv_head and qk_norm, likewise: absent by default, round-tripped,
// wrong values rejected naming the key.
TEST(GptConfig, AttentionKeysAreOffByDefaultAndRoundTrip) {
  GptConfig config;
  nlohmann::json j = config.to_json();
  for (const char* key : {"pos_encoding", "rope_theta", "n_kv_head", "qk_norm"}) EXPECT_FALSE(j.contains(key)) << key;
  config.n_kv_head = config.n_head;  // the same model as the default: written the same
  EXPECT_EQ(config.to_json(), j);
  const GptConfig old = GptConfig::from_json(j, "old");
  EXPECT_EQ(old.pos_encoding, PosEncoding::learned);
  EXPECT_EQ(old.kv_heads(), old.n_head);
  EXPECT_FALSE(old.qk_norm);
  config.pos_encoding = PosEncoding::rope;
  config.rope_theta = 500000.0;
  config.n_kv_head = 2;
  config.qk_norm = true;
  j = config.to_json();
  EXPECT_EQ(j["pos_encoding"], "rope");
  EXPECT_EQ(j["rope_theta"], 500000.0);
  EXPECT_EQ(j["n_kv_head"], 2);
  EXPECT_EQ(j["qk_norm"], true);
  EXPECT_EQ(GptConfig::from_json(j, "new").to_json(), j);
  auto expect_rejected = [&](const char* key, const nlohmann::json& value) {
    nlohmann::json bad = j;
    bad[key] = value;
    try {
      GptConfig::from_json(bad, "bad");
      ADD_FAILURE() << key << " = " << value.dump() << " accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  expect_rejected("pos_encoding", "alibi");
  expect_rejected("rope_theta", 0);
  expect_rejected("n_kv_head", 4);  // does not divide n_head 6
  expect_rejected("qk_norm", "yes");
}

// bigram_embedding: absent by default, round-tripped, a (V + 1) V x C table starting at zero,
// counted as a lookup (not a product) by the FLOP estimate.
TEST(Gpt, BigramEmbeddingIsAZeroTableOfEveryPairAndALookup) {
  GptConfig config{.n_layer = 1, .n_head = 2, .n_embd = 16, .block_size = 8, .vocab_size = 11};
  EXPECT_FALSE(config.to_json().contains("bigram_embedding"));
  const Gpt plain(config);
  config.bigram_embedding = true;
  const nlohmann::json j = config.to_json();
  EXPECT_EQ(j["bigram_embedding"], true);
  EXPECT_TRUE(GptConfig::from_json(j, "new").bigram_embedding);
  nlohmann::json bad = j;
  bad["bigram_embedding"] = 1;
  EXPECT_THROW(GptConfig::from_json(bad, "bad"), UserError);
  Gpt model(config);
  const Tensor wbe = model.params().tensor("transformer.wbe.weight");
  EXPECT_EQ(wbe.shape, (Shape{12 * 11, 16}));
  EXPECT_TRUE(std::all_of(wbe.data, wbe.data + wbe.numel(), [](float v) { return v == 0.0f; }));
  EXPECT_EQ(static_cast<double>(model.params().parameter_count()), gpt_parameter_size(config).parameters);
  EXPECT_EQ(model.flops_per_token(), plain.flops_per_token());
  EXPECT_EQ(config.bigram_row(-1, 3), 11 * 11 + 3);  // the first position: row block V, "none"
  EXPECT_EQ(config.bigram_row(10, 0), 10 * 11);
}

// value_embeddings: absent by default, round-tripped, a [V, n_kv_head hs] table per block but the
// first, zero at the start, outside Muon's transformer.h. matrices, lookups for the FLOP estimate.
TEST(Gpt, ValueEmbeddingsAreZeroTablesOfTheKvWidthFromBlock1) {
  GptConfig config{.n_layer = 3, .n_head = 4, .n_embd = 16, .block_size = 8, .vocab_size = 11, .n_kv_head = 2};
  EXPECT_FALSE(config.to_json().contains("value_embeddings"));
  const Gpt plain(config);
  config.value_embeddings = true;
  EXPECT_EQ(config.to_json()["value_embeddings"], true);
  EXPECT_TRUE(GptConfig::from_json(config.to_json(), "new").value_embeddings);
  Gpt model(config);
  EXPECT_EQ(model.params().index_of("transformer.ve.0.weight"), -1);
  for (const char* name : {"transformer.ve.1.weight", "transformer.ve.2.weight"}) {
    const Tensor ve = model.params().tensor(name);
    EXPECT_EQ(ve.shape, (Shape{11, 2 * 4})) << name;
    EXPECT_TRUE(std::all_of(ve.data, ve.data + ve.numel(), [](float v) { return v == 0.0f; })) << name;
    EXPECT_FALSE(updated_by_muon(model.params().slot(model.params().index_of(name)))) << name;
  }
  EXPECT_EQ(static_cast<double>(model.params().parameter_count()), gpt_parameter_size(config).parameters);
  EXPECT_EQ(model.flops_per_token(), plain.flops_per_token());
}

TEST(Gpt, RopeDropsThePositionEmbeddingAndGroupedQueryNarrowsCAttn) {
  const GptConfig config{.n_layer = 1,
                         .n_head = 4,
                         .n_embd = 16,
                         .block_size = 8,
                         .vocab_size = 11,
                         .pos_encoding = PosEncoding::rope,
                         .n_kv_head = 2};
  Gpt model(config);
  ParamStore& params = model.params();
  EXPECT_EQ(params.index_of("transformer.wpe.weight"), -1);
  EXPECT_EQ(params.tensor("transformer.h.0.attn.c_attn.weight").shape, (Shape{16 + 2 * 2 * 4, 16}));
  EXPECT_EQ(static_cast<double>(params.parameter_count()), gpt_parameter_size(config).parameters);
  EXPECT_EQ(model.rope_table().positions, 8);
  EXPECT_EQ(model.rope_table().half, 2);
}

TEST(GptConfig, MlpKeysAreOffByDefaultAndRoundTrip) {
  GptConfig config;
  nlohmann::json j = config.to_json();
  EXPECT_FALSE(j.contains("mlp_hidden"));
  EXPECT_EQ(GptConfig::from_json(j, "old").mlp_hidden, 0);
  config.mlp = Activation::swiglu;
  config.mlp_hidden = 100;
  j = config.to_json();
  EXPECT_EQ(j["mlp"], "swiglu");
  EXPECT_EQ(j["mlp_hidden"], 100);
  EXPECT_EQ(GptConfig::from_json(j, "new").to_json(), j);
  j["mlp_hidden"] = -1;
  EXPECT_THROW(GptConfig::from_json(j, "bad"), UserError);
}

// mlp_hidden 0: 4 n_embd, or for swiglu the multiple of 32 nearest to 8 n_embd / 3 (at least 32).
TEST(GptConfig, MlpWidthIsAutomaticUnlessGiven) {
  GptConfig c;
  EXPECT_EQ(c.mlp_width(), 4 * 384);
  c.mlp = Activation::swiglu;
  EXPECT_EQ(c.mlp_width(), 1024);  // 8 * 384 / 3 exactly
  c.n_embd = 64;
  EXPECT_EQ(c.mlp_width(), 160);  // 170.7 -> 160
  c.n_embd = 100;
  EXPECT_EQ(c.mlp_width(), 256);  // 266.7 -> 256
  c.n_embd = 6;
  EXPECT_EQ(c.mlp_width(), 32);
  c.mlp_hidden = 50;
  EXPECT_EQ(c.mlp_width(), 50);
}

TEST(GptConfig, HeadKeysAreOffByDefaultAndRoundTrip) {
  GptConfig config;
  nlohmann::json j = config.to_json();
  EXPECT_FALSE(j.contains("tie_embeddings"));
  EXPECT_FALSE(j.contains("logit_softcap"));
  EXPECT_TRUE(GptConfig::from_json(j, "old").tie_embeddings);
  EXPECT_EQ(GptConfig::from_json(j, "old").logit_softcap, 0.0);
  config.tie_embeddings = false;
  config.logit_softcap = 30;
  j = config.to_json();
  EXPECT_EQ(j["tie_embeddings"], false);
  EXPECT_EQ(j["logit_softcap"], 30.0);
  EXPECT_EQ(GptConfig::from_json(j, "new").to_json(), j);
  j["logit_softcap"] = -1;
  EXPECT_THROW(GptConfig::from_json(j, "bad"), UserError);
  j["logit_softcap"] = 30;
  j["tie_embeddings"] = "no";
  EXPECT_THROW(GptConfig::from_json(j, "bad"), UserError);
}

// One block of two heads over 8 positions.
GptConfig one_block_config(int64_t n_embd, int64_t vocab_size) {
  GptConfig config;
  config.n_layer = 1;
  config.n_head = 2;
  config.n_embd = n_embd;
  config.block_size = 8;
  config.vocab_size = vocab_size;
  return config;
}

// Untied: lm_head.weight [V, C] with nanoGPT's Linear init, and the head's product counted in
// flops_per_token as the tied wte was (the embedding lookups are not products).
TEST(Gpt, UntiedHeadIsItsOwnWeight) {
  GptConfig config = one_block_config(64, 300);
  Gpt tied(config);
  config.tie_embeddings = false;
  Gpt model(config);
  model.init_weights(3);
  ParamStore& params = model.params();
  const Tensor head = params.tensor("lm_head.weight");
  EXPECT_EQ(head.shape, (Shape{300, 64}));
  EXPECT_NE(head.data, model.weights().wte.data);
  EXPECT_EQ(model.weights().lm_head.weight.data, head.data);
  double s = 0;
  for (int64_t i = 0; i < head.numel(); ++i) s += double(head.data[i]) * head.data[i];
  EXPECT_NEAR(std::sqrt(s / double(head.numel())), 0.02, 0.001);
  EXPECT_EQ(params.parameter_count(), tied.params().parameter_count() + 300 * 64);
  EXPECT_EQ(model.flops_per_token(), tied.flops_per_token());
  EXPECT_EQ(static_cast<double>(params.parameter_count()), gpt_parameter_size(config).parameters);
}

// swiglu's c_fc holds W_gate's rows then W_up's ([2H, C]); c_proj is [C, H].
TEST(Gpt, SwigluMlpHasGateAndUpInOneMatrix) {
  GptConfig config = one_block_config(48, 11);
  config.mlp = Activation::swiglu;
  Gpt model(config);
  ParamStore& params = model.params();
  EXPECT_EQ(params.tensor("transformer.h.0.mlp.c_fc.weight").shape, (Shape{256, 48}));
  EXPECT_EQ(params.tensor("transformer.h.0.mlp.c_proj.weight").shape, (Shape{48, 128}));
  EXPECT_EQ(static_cast<double>(params.parameter_count()), gpt_parameter_size(config).parameters);
}

TEST(Gpt, RmsnormKeepsNormWeightNamesWithoutBiases) {
  GptConfig config;
  config.n_layer = 1;
  config.n_head = 2;
  config.n_embd = 16;
  config.block_size = 8;
  config.vocab_size = 11;
  config.bias = true;
  config.norm = Norm::rmsnorm;
  Gpt model(config);
  ParamStore& params = model.params();
  EXPECT_GE(params.index_of("transformer.h.0.ln_1.weight"), 0);
  EXPECT_GE(params.index_of("transformer.ln_f.weight"), 0);
  EXPECT_EQ(params.index_of("transformer.h.0.ln_1.bias"), -1);
  EXPECT_EQ(params.index_of("transformer.ln_f.bias"), -1);
  EXPECT_GE(params.index_of("transformer.h.0.mlp.c_fc.bias"), 0);  // the Linear layers keep theirs
  EXPECT_EQ(static_cast<double>(params.parameter_count()), gpt_parameter_size(config).parameters);
}

// What a training step keeps: per layer the residual stream twice, q|k|v, the attention output and
// the MLP's hidden layer (10 values of width C per token), plus embeddings, logits and the
// gradients and transient buffers backward is working on (this config measured 63 values per
// token in all). Storing every op's output and gradient, as an unfused tape does, takes about 40
// per layer; the bound (16 per layer + 10) catches any return to that.
TEST(Gpt, TrainingStepMemoryIsLinearInLayersWithFewActivationsEach) {
  GptConfig config;
  config.n_layer = 4;
  config.n_head = 4;
  config.n_embd = 64;
  config.block_size = 64;
  config.vocab_size = 65;
  config.dropout = 0.1f;
  Gpt model(config);
  Rng rng(2);
  model.init_weights(rng.next_u64());
  const int64_t B = 8, T = 64;
  std::vector<int32_t> idx(B * T), targets(B * T);
  for (std::size_t i = 0; i < idx.size(); ++i) {
    idx[i] = static_cast<int32_t>(i % 65);
    targets[i] = static_cast<int32_t>((i * 7) % 65);
  }
  Arena arena;
  Graph g(arena);
  Gpt::Output out = model.forward(g, idx.data(), B, T, targets.data(), true, rng);
  g.backward(out.loss);
  const double width_c_bytes = static_cast<double>(B * T * config.n_embd * sizeof(float));
  const double allowed = (16.0 * static_cast<double>(config.n_layer) + 10.0) * width_c_bytes;
  EXPECT_LT(static_cast<double>(arena.high_water_bytes()), allowed)
      << "arena peak " << arena.high_water_bytes() / width_c_bytes << " x [B, T, C] floats";
}

// The estimate counts exactly what the store allocates, and a training step's arena within 25%
// (also with swiglu, an untied head and soft-capped logits, and with the attention keys).
TEST(GptMemory, EstimateMatchesTheStoreAndATrainingStep) {
  // no biases, biases, the MLP and head keys, the attention keys (rope, GQA, QK-norm), all of them
  for (int variant : {0, 1, 2, 3, 4}) {
    const bool bias = variant == 1, mlp_keys = variant == 2 || variant == 4,
               attention_keys = variant == 3 || variant == 4;
    SCOPED_TRACE("variant " + std::to_string(variant));
    GptConfig config;
    if (mlp_keys) {
      config.mlp = Activation::swiglu;
      config.tie_embeddings = false;
      config.logit_softcap = 30;
    }
    config.n_layer = 3;
    config.n_head = 4;
    config.n_embd = 48;
    config.block_size = 32;
    config.vocab_size = 70;
    config.bias = bias;
    config.dropout = 0.1f;
    if (attention_keys) {
      config.pos_encoding = PosEncoding::rope;
      config.n_kv_head = 1;
      config.qk_norm = true;
    }
    Gpt model(config);
    model.init_weights(1);
    const GptMemory memory = estimate_gpt_memory(config);
    EXPECT_EQ(memory.parameters, static_cast<double>(model.params().parameter_count()));
    EXPECT_EQ(memory.weight_bytes, static_cast<double>(model.params().padded_floats() * sizeof(float)));
    const int64_t B = 4, T = config.block_size;
    std::vector<int32_t> idx(B * T), targets(B * T);
    for (std::size_t i = 0; i < idx.size(); ++i) {
      idx[i] = static_cast<int32_t>(i % 70);
      targets[i] = static_cast<int32_t>((i * 7) % 70);
    }
    Arena arena;
    Graph g(arena);
    Rng rng(2);
    g.backward(model.forward(g, idx.data(), B, T, targets.data(), true, rng).loss);
    const double measured = static_cast<double>(arena.high_water_bytes()) / B;
    EXPECT_NEAR(memory.activation_bytes / measured, 1.0, 0.25) << measured << " bytes per sequence";
  }
}

// A model whose weights and gradients exceed the machine is refused before anything is
// allocated: a runtime error (exit code 1) with the sizes and the settings that drive them.
TEST(GptMemory, AModelLargerThanTheMachineIsRefusedWithItsSizes) {
  GptConfig config;
  config.n_head = 4;
  config.n_embd = 2000000;
  try {
    Gpt model(config);
    FAIL() << "a 288-trillion-parameter model was allocated";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.exit_code(), 1);
    for (const char* part :
         {"does not fit in memory", "n_embd 2000000", "n_layer 6", "288.0 trillion parameters", "2.0 PiB",
          "RAM and swap", "optimizer state", "of activations per sequence", "mlp_hidden 8000000 here"})
      EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  }
}

// RoPE's table grows with block_size, not with the parameters: it is counted and checked before
// it is allocated too (it was built first, and a long enough context threw std::length_error).
TEST(GptMemory, ARopeTableLargerThanTheMachineIsRefusedBeforeItIsBuilt) {
  const GptConfig config{.n_layer = 1,
                         .n_head = 1,
                         .n_embd = 2,
                         .block_size = int64_t{1} << 62,
                         .vocab_size = 4,
                         .pos_encoding = PosEncoding::rope};
  try {
    Gpt model(config);
    FAIL() << "a table of 2^62 positions was allocated";
  } catch (const UserError& e) {
    EXPECT_EQ(e.exit_code(), 1);
    const std::string message = e.what();
    for (const char* part : {"does not fit in memory", "RoPE's table", "block_size 4611686018427387904"})
      EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  }
}

// One step's loss and gradients in bfloat16 against float32 from the same weights and batch.
// bfloat16 keeps 8 significant bits, so each rounded input is off by up to 2^-9 (0.2%) of itself;
// those errors are independent across a product's terms and partly cancel, and they compound
// through the layers and backward, so a few layers' gradients differ by a fraction of a percent
// (measured here: 0.36% in norm, cosine 0.99999, loss 2e-5 relative) while pointing the same
// way. The bounds leave about 8x room: loss within 0.1%, gradient within 3% in norm, cosine above
// 0.999. And not identical: the rounding is really there.
TEST(Gpt, Bfloat16StepTracksTheFloat32Step) {
  GptConfig config;
  config.n_layer = 2;
  config.n_head = 4;
  config.n_embd = 64;
  config.block_size = 32;
  config.vocab_size = 65;
  config.dropout = 0.0f;
  Gpt model(config);
  model.init_weights(3);
  const int64_t B = 4, T = 32;
  std::vector<int32_t> idx(B * T), targets(B * T);
  Rng data(4);
  for (std::size_t i = 0; i < idx.size(); ++i) {
    idx[i] = static_cast<int32_t>(data.below(65));
    targets[i] = static_cast<int32_t>(data.below(65));
  }
  auto step = [&](Dtype dtype) {
    model.set_matmul_dtype(dtype);
    model.params().zero_grad();
    Arena arena;
    Graph g(arena);
    Rng rng(0);
    Gpt::Output out = model.forward(g, idx.data(), B, T, targets.data(), true, rng);
    g.backward(out.loss);
    const float* grad = model.params().grad();
    return std::make_pair(static_cast<double>(out.loss.data[0]),
                          std::vector<double>(grad, grad + model.params().padded_floats()));
  };
  const auto [loss32, grad32] = step(Dtype::float32);
  const auto [loss16, grad16] = step(Dtype::bfloat16);
  EXPECT_NE(loss16, loss32);
  EXPECT_NEAR(loss16, loss32, 1e-3 * loss32);
  double dot = 0, norm32 = 0, norm16 = 0, diff = 0;
  for (std::size_t i = 0; i < grad32.size(); ++i) {
    dot += grad32[i] * grad16[i];
    norm32 += grad32[i] * grad32[i];
    norm16 += grad16[i] * grad16[i];
    diff += (grad16[i] - grad32[i]) * (grad16[i] - grad32[i]);
  }
  EXPECT_LT(std::sqrt(diff / norm32), 0.03);
  EXPECT_GT(dot / std::sqrt(norm32 * norm16), 0.999);
}

}  // namespace
}  // namespace gpt
