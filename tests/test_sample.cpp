// Sampling: the KV-cached generator against full recomputation (nanoGPT's way) in both context
// modes, the token sampler's controls, reproducibility.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/random_streams.h"
#include "model/gpt.h"
#include "ops/ops.h"
#include "sample/text_generation.h"
#include "simulated_clock.h"
#include "thread_count.h"

namespace gpt {
namespace {

// The modern-architecture keys a test model is built with (defaults: nanoGPT's).
struct Architecture {
  Norm norm = Norm::layernorm;
  Activation mlp = Activation::gelu;
  PosEncoding pos_encoding = PosEncoding::learned;
  int64_t n_head = 2, n_kv_head = 0;
  bool qk_norm = false;
  bool tie_embeddings = true;
  double logit_softcap = 0;
  bool bigram_embedding = false;
  bool value_embeddings = false;
};
// RoPE, grouped-query attention (4 query heads sharing 2 kv heads) and QK-norm together.
const Architecture kModernAttention{.pos_encoding = PosEncoding::rope, .n_head = 4, .n_kv_head = 2, .qk_norm = true};

std::unique_ptr<Gpt> random_model(int64_t block_size = 8, bool bias = true, Dtype dtype = Dtype::float32,
                                  Architecture arch = {}) {
  GptConfig c;
  c.norm = arch.norm;
  c.mlp = arch.mlp;
  c.pos_encoding = arch.pos_encoding;
  c.n_kv_head = arch.n_kv_head;
  c.qk_norm = arch.qk_norm;
  c.tie_embeddings = arch.tie_embeddings;
  c.logit_softcap = arch.logit_softcap;
  c.bigram_embedding = arch.bigram_embedding;
  c.value_embeddings = arch.value_embeddings;
  c.n_layer = 2;
  c.n_head = arch.n_head;
  c.n_embd = 16;
  c.block_size = block_size;
  c.vocab_size = 13;
  c.dropout = 0;
  c.bias = bias;
  auto model = std::make_unique<Gpt>(c);
  Rng rng(11);
  // Large random weights: sharp, position-dependent predictions, so mistakes show.
  ParamStore& p = model->params();
  for (std::size_t i = 0; i < p.padded_floats(); ++i) p.data()[i] = static_cast<float>(rng.normal() * 0.4);
  model->set_matmul_dtype(dtype);
  return model;
}

struct Trace {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;
};

// nanoGPT's sample loop: a full forward over the context window for every token.
Trace generate_by_recomputation(Gpt& model, const std::vector<int32_t>& prompt, const GenerationSettings& s, Rng& rng) {
  const int64_t T = model.config().block_size, V = model.config().vocab_size;
  Arena arena;
  Graph g(arena);
  NoGradGuard no_grad(g);
  TokenSampler sampler(s.sampling);
  std::vector<int32_t> tokens = prompt;
  Trace trace;
  int64_t window_begin = 0;
  for (int64_t t = 0; t < s.max_new_tokens; ++t) {
    const Window w = context_window(static_cast<int64_t>(tokens.size()), T, s.context_shift, window_begin);
    window_begin = w.begin;
    Gpt::Output out = model.forward(g, tokens.data() + w.begin, 1, w.end - w.begin, nullptr, false, rng);
    const float* last = out.logits.data + (w.end - w.begin - 1) * V;
    trace.logits.emplace_back(last, last + V);
    tokens.push_back(sampler.next(last, V, rng));
    trace.tokens.push_back(tokens.back());
    g.reset();
  }
  return trace;
}

// One trace per Rng: the sequences are generated together as one batch.
std::vector<Trace> generate_batch(Gpt& model, const std::vector<int32_t>& prompt, const GenerationSettings& s,
                                  std::vector<Rng> rngs) {
  Generator generator(model, static_cast<int64_t>(rngs.size()));
  std::vector<Trace> traces(rngs.size());
  generate(generator, prompt, s, rngs, [&](int64_t sequence, int32_t token, const float* logits) {
    traces[sequence].tokens.push_back(token);
    traces[sequence].logits.emplace_back(logits, logits + model.config().vocab_size);
  });
  return traces;
}

Trace generate_cached(Gpt& model, const std::vector<int32_t>& prompt, const GenerationSettings& s, Rng& rng) {
  return generate_batch(model, prompt, s, {rng})[0];
}

void expect_same_trace(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.tokens, b.tokens);
  for (std::size_t t = 0; t < b.logits.size(); ++t)
    for (std::size_t v = 0; v < b.logits[t].size(); ++v)
      ASSERT_NEAR(a.logits[t][v], b.logits[t][v], 1e-5) << "token " << t << " logit " << v;
}

void expect_same_generation(int64_t prompt_length, int64_t new_tokens, int64_t shift, double temperature,
                            int64_t block_size = 8, Dtype dtype = Dtype::float32, Architecture arch = {}) {
  auto model = random_model(block_size, true, dtype, arch);
  std::vector<int32_t> prompt;
  for (int64_t i = 0; i < prompt_length; ++i) prompt.push_back(static_cast<int32_t>((i * 5 + 3) % 13));
  GenerationSettings s;
  s.max_new_tokens = new_tokens;
  s.context_shift = shift;
  s.sampling = {temperature, 0, 1.0, {}};
  Rng rng_a(5), rng_b(5);
  expect_same_trace(generate_cached(*model, prompt, s, rng_a), generate_by_recomputation(*model, prompt, s, rng_b));
  // A batch of three sequences: each is what recomputation gives with its own random stream.
  const std::vector<Rng> streams = {sample_stream(9, 0), sample_stream(9, 1), sample_stream(9, 2)};
  const std::vector<Trace> batch = generate_batch(*model, prompt, s, streams);
  for (std::size_t i = 0; i < streams.size(); ++i) {
    Rng rng = streams[i];
    SCOPED_TRACE("sequence " + std::to_string(i) + " of a batch");
    expect_same_trace(batch[i], generate_by_recomputation(*model, prompt, s, rng));
  }
}

TEST(KvCache, ExactModeMatchesRecomputationGreedy) {
  expect_same_generation(1, 30, 0, 0.0);  // short prompt, runs far past block_size 8
  expect_same_generation(8, 12, 0, 0.0);  // prompt exactly block_size
}

TEST(KvCache, ExactModeMatchesRecomputationSampled) {
  expect_same_generation(3, 30, 0, 1.0);
  expect_same_generation(7, 5, 0, 0.7);  // stays within block_size
}

TEST(KvCache, ShiftModeMatchesRecomputationOverItsWindows) {
  expect_same_generation(2, 40, 4, 1.0);
  expect_same_generation(8, 25, 1, 0.0);
  expect_same_generation(5, 25, 8, 1.0);  // shift = block_size: restart from the new token
}

TEST(KvCache, WindowsOfManyRowsMatchRecomputation) {
  // 40-token windows: the generator splits these steps by rows instead of output columns.
  expect_same_generation(25, 30, 0, 1.0, 40);
  expect_same_generation(40, 10, 8, 0.0, 40);
}

TEST(KvCache, RmsnormMatchesRecomputation) {
  const Architecture rms{.norm = Norm::rmsnorm};
  expect_same_generation(3, 30, 0, 1.0, 8, Dtype::float32, rms);
  expect_same_generation(2, 20, 4, 0.0, 8, Dtype::float32, rms);
  expect_same_generation(25, 10, 0, 1.0, 40, Dtype::float32, rms);  // split by rows
}

TEST(KvCache, Relu2MlpMatchesRecomputation) {
  const Architecture relu2{.mlp = Activation::relu2};
  expect_same_generation(3, 30, 0, 1.0, 8, Dtype::float32, relu2);
  expect_same_generation(25, 10, 0, 1.0, 40, Dtype::float32, relu2);  // split by rows
}

TEST(KvCache, RopeMatchesRecomputation) {
  const Architecture rope{.pos_encoding = PosEncoding::rope};
  expect_same_generation(3, 30, 0, 1.0, 8, Dtype::float32, rope);
  expect_same_generation(2, 20, 4, 0.0, 8, Dtype::float32, rope);  // the shifted window is re-encoded
  expect_same_generation(25, 10, 0, 1.0, 40, Dtype::float32, rope);
}

TEST(KvCache, GroupedQueryAttentionMatchesRecomputation) {
  for (int64_t kv : {1, 2}) {
    SCOPED_TRACE("n_kv_head " + std::to_string(kv));
    const Architecture gqa{.n_head = 4, .n_kv_head = kv};
    expect_same_generation(3, 30, 0, 1.0, 8, Dtype::float32, gqa);
    expect_same_generation(25, 10, 8, 1.0, 40, Dtype::float32, gqa);
  }
}

TEST(KvCache, QkNormMatchesRecomputation) {
  const Architecture qk{.qk_norm = true};
  expect_same_generation(3, 30, 0, 1.0, 8, Dtype::float32, qk);
  expect_same_generation(25, 10, 0, 1.0, 40, Dtype::float32, qk);
}

TEST(KvCache, RopeGroupedQueryAndQkNormTogetherMatchRecomputation) {
  expect_same_generation(1, 30, 0, 0.0, 8, Dtype::float32, kModernAttention);
  expect_same_generation(2, 40, 3, 1.0, 8, Dtype::float32, kModernAttention);
  expect_same_generation(25, 30, 0, 1.0, 40, Dtype::float32, kModernAttention);  // split by rows
  expect_same_generation(40, 10, 8, 0.0, 40, Dtype::float32, kModernAttention);
}

TEST(KvCache, SwigluMlpMatchesRecomputation) {
  const Architecture swiglu{.mlp = Activation::swiglu};
  expect_same_generation(3, 30, 0, 1.0, 8, Dtype::float32, swiglu);
  expect_same_generation(2, 20, 4, 0.0, 8, Dtype::float32, swiglu);
  expect_same_generation(25, 10, 0, 1.0, 40, Dtype::float32, swiglu);  // split by rows
}

void expect_same_bits_on_any_thread_count(Architecture arch) {
  auto model = random_model(40, true, Dtype::float32, arch);
  GenerationSettings s;
  s.max_new_tokens = 50;  // a 20-token prompt, then single tokens, then 40-token windows
  s.sampling = {1.0, 0, 1.0, {}};
  std::vector<int32_t> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back(static_cast<int32_t>(i % 13));
  std::vector<Trace> runs;
  for (int threads : {1, 2, 3}) {
    Rng rng(17);
    runs.push_back(testing::on_threads(threads, [&] { return generate_cached(*model, prompt, s, rng); }));
  }
  for (std::size_t i = 1; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].tokens, runs[0].tokens);
    EXPECT_EQ(runs[i].logits, runs[0].logits);  // bit for bit
  }
}

TEST(KvCache, RowAndColumnSplitsGiveTheSameBitsOnAnyThreadCount) {
  for (const Architecture& arch : {Architecture{}, kModernAttention}) expect_same_bits_on_any_thread_count(arch);
}

// swiglu, an untied head and soft-capped logits (a cap the random model's logits exceed), with rmsnorm.
const Architecture kMlpAndHeadKeys{
    .norm = Norm::rmsnorm, .mlp = Activation::swiglu, .tie_embeddings = false, .logit_softcap = 3};

TEST(KvCache, UntiedSoftcappedSwigluModelMatchesRecomputation) {
  expect_same_generation(3, 30, 0, 1.0, 8, Dtype::float32, kMlpAndHeadKeys);
  expect_same_generation(2, 20, 4, 0.0, 8, Dtype::float32, kMlpAndHeadKeys);
  expect_same_generation(25, 10, 0, 1.0, 40, Dtype::float32, kMlpAndHeadKeys);  // split by rows
}

TEST(KvCache, MlpAndHeadKeysGiveTheSameBitsOnAnyThreadCount) { expect_same_bits_on_any_thread_count(kMlpAndHeadKeys); }

// Every attention, MLP and head key at once: RoPE, 4 query heads sharing 2 kv heads, QK-norm,
// swiglu, an untied head and soft-capped logits, with rmsnorm.
const Architecture kAllKeys{.norm = Norm::rmsnorm,
                            .mlp = Activation::swiglu,
                            .pos_encoding = PosEncoding::rope,
                            .n_head = 4,
                            .n_kv_head = 2,
                            .qk_norm = true,
                            .tie_embeddings = false,
                            .logit_softcap = 3};

TEST(KvCache, AttentionMlpAndHeadKeysTogetherMatchRecomputation) {
  expect_same_generation(1, 30, 0, 0.0, 8, Dtype::float32, kAllKeys);
  expect_same_generation(2, 40, 3, 1.0, 8, Dtype::float32, kAllKeys);    // shifted windows re-encoded
  expect_same_generation(25, 30, 0, 1.0, 40, Dtype::float32, kAllKeys);  // split by rows
  expect_same_generation(40, 10, 8, 0.0, 40, Dtype::float32, kAllKeys);
}

TEST(KvCache, AttentionMlpAndHeadKeysGiveTheSameBitsOnAnyThreadCount) {
  expect_same_bits_on_any_thread_count(kAllKeys);
}

TEST(KvCache, ShiftWindowsAreAsDocumented) {
  // block_size 8, shift 3: once full, keep the last 8 - 3 + 1 = 6 tokens.
  EXPECT_EQ(context_window(8, 8, 3, 0).begin, 0);
  EXPECT_EQ(context_window(9, 8, 3, 0).begin, 3);
  EXPECT_EQ(context_window(10, 8, 3, 3).begin, 3);
  EXPECT_EQ(context_window(12, 8, 3, 3).begin, 6);
  EXPECT_EQ(context_window(12, 8, 0, 3).begin, 4);  // exact: always the last block_size
}

TEST(KvCache, LongPromptIsCroppedToItsEnd) {
  std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(crop_prompt(prompt, 8), 2);
  EXPECT_EQ(prompt.front(), 3);
  EXPECT_EQ(prompt.size(), 8u);
  EXPECT_EQ(crop_prompt(prompt, 8), 0);
}

// bfloat16 products: the generator rounds each weight once, the training forward as it packs it;
// the same values, the same arithmetic.
TEST(KvCache, Bfloat16GenerationMatchesRecomputation) {
  expect_same_generation(1, 30, 0, 0.0, 8, Dtype::bfloat16);
  expect_same_generation(3, 20, 4, 1.0, 8, Dtype::bfloat16);
}

void expect_prefill_matches_forward(Dtype dtype, Architecture arch = {}) {
  auto model = random_model(8, false, dtype, arch);
  const std::vector<int32_t> tokens = {1, 4, 2, 12, 0, 7, 7, 3};
  Generator generator(*model);
  std::vector<float> cached;
  generator.append(tokens.data(), 5, &cached);
  std::vector<float> rest;
  generator.append(tokens.data() + 5, 3, &rest);
  cached.insert(cached.end(), rest.begin(), rest.end());
  Arena arena;
  Graph g(arena);
  NoGradGuard no_grad(g);
  Rng rng(0);
  Gpt::Output out = model->forward(g, tokens.data(), 1, 8, nullptr, false, rng);
  ASSERT_EQ(cached.size(), static_cast<std::size_t>(out.logits.numel()));
  for (std::size_t i = 0; i < cached.size(); ++i) EXPECT_NEAR(cached[i], out.logits.data[i], 1e-5) << i;
}

TEST(KvCache, PrefillLogitsMatchTheTrainingForward) {
  expect_prefill_matches_forward(Dtype::float32);
  expect_prefill_matches_forward(Dtype::bfloat16);
}

// bigram_embedding: each row's wbe row pairs it with the token before it, also across appends
// (the second append's first row follows the first append's last token) and in re-encoded
// windows (whose first position has none, as a training window's).
const Architecture kBigram{.bigram_embedding = true};
const Architecture kBigramRope{.norm = Norm::rmsnorm, .pos_encoding = PosEncoding::rope, .bigram_embedding = true};

TEST(KvCache, BigramEmbeddingMatchesRecomputation) {
  for (const Architecture& arch : {kBigram, kBigramRope}) {
    SCOPED_TRACE(arch.pos_encoding == PosEncoding::rope ? "rope" : "learned");
    expect_prefill_matches_forward(Dtype::float32, arch);
    expect_same_generation(1, 30, 0, 0.0, 8, Dtype::float32, arch);
    expect_same_generation(2, 40, 3, 1.0, 8, Dtype::float32, arch);    // shifted windows re-encoded
    expect_same_generation(25, 30, 0, 1.0, 40, Dtype::float32, arch);  // split by rows
  }
}

TEST(KvCache, BigramEmbeddingGivesTheSameBitsOnAnyThreadCount) { expect_same_bits_on_any_thread_count(kBigramRope); }

// value_embeddings, added in place to the v columns each thread wrote (split by rows or by output
// columns), with grouped-query attention's narrower v.
const Architecture kValueEmbeddings{
    .pos_encoding = PosEncoding::rope, .n_head = 4, .n_kv_head = 2, .value_embeddings = true};

TEST(KvCache, ValueEmbeddingsMatchRecomputation) {
  expect_prefill_matches_forward(Dtype::float32, kValueEmbeddings);
  expect_same_generation(1, 30, 0, 0.0, 8, Dtype::float32, kValueEmbeddings);
  expect_same_generation(2, 40, 3, 1.0, 8, Dtype::float32, kValueEmbeddings);
  expect_same_generation(25, 30, 0, 1.0, 40, Dtype::float32, kValueEmbeddings);  // split by rows
}

TEST(KvCache, ValueEmbeddingsGiveTheSameBitsOnAnyThreadCount) {
  expect_same_bits_on_any_thread_count(kValueEmbeddings);
}

// A copied sequence continues as its original (gpt serve's n > 1 samples share one prompt's cache),
// with the bigram embedding's previous token copied too.
TEST(KvCache, CopiedSequenceContinuesAsItsOriginal) {
  for (const Architecture& arch : {Architecture{}, kBigramRope}) {
    auto model = random_model(8, true, Dtype::float32, arch);
    const std::vector<int32_t> prompt = {3, 9, 4};
    const int32_t next = 7;
    Generator alone(*model, 1);
    alone.append(prompt.data(), 3);
    const float* expected = alone.append(&next, 1);
    const std::vector<float> original(expected, expected + model->config().vocab_size);
    Generator batch(*model, 2);
    batch.append_to({0}, prompt.data(), 3);
    batch.copy_sequence(0, 1);
    const float* copied = batch.append_to({1}, &next, 1);
    for (int64_t v = 0; v < model->config().vocab_size; ++v) EXPECT_EQ(copied[v], original[v]) << "logit " << v;
  }
}

// gpt sample and gpt serve let the step's team follow the machine's load: here counters that say
// another process keeps both cores busy, so a team of one in a process of two threads. The same
// logits, and the caller's OpenMP thread count as it was.
TEST(KvCache, ATeamShrunkByTheLoadKeepsTheBitsAndTheThreadCount) {
  auto model = random_model(8, true);
  const testing::ThreadCount two(2);
  testing::SimulatedClock clock(1.0);
  double busy = 0;
  TeamSizer all_busy(
      2,
      [&] {
        return std::optional<CoreCounters>(CoreCounters{busy += 2.0, 0.0});
      },
      clock);
  ASSERT_EQ(all_busy.threads(2), 1);
  std::vector<std::vector<float>> logits;
  for (TeamSizer* sizer : {static_cast<TeamSizer*>(nullptr), &all_busy}) {
    Generator generator(*model);
    generator.set_team_sizer(sizer);
    const std::vector<int32_t> prompt = {1, 2, 3, 4};
    std::vector<float> all;
    generator.append(prompt.data(), static_cast<int64_t>(prompt.size()), &all);
    for (int32_t token = 0; token < 4; ++token) {
      const float* next = generator.append(&token, 1);
      all.insert(all.end(), next, next + model->config().vocab_size);
    }
    logits.push_back(all);
    EXPECT_EQ(omp_get_max_threads(), 2);
  }
  EXPECT_EQ(logits[0], logits[1]);
}

TEST(KvCache, SameSeedSameTextOnAnyThreadCount) {
  for (const Dtype dtype : {Dtype::float32, Dtype::bfloat16}) {
    auto model = random_model(8, true, dtype);
    GenerationSettings s;
    s.max_new_tokens = 40;
    s.sampling = {0.9, 5, 0.9, {}};
    Rng a(3), b(3), c(4);
    const auto one = testing::on_threads(1, [&] { return generate_cached(*model, {1}, s, a).tokens; });
    const auto two = testing::on_threads(2, [&] { return generate_cached(*model, {1}, s, b).tokens; });
    const auto other_seed = testing::on_threads(2, [&] { return generate_cached(*model, {1}, s, c).tokens; });
    EXPECT_EQ(one, two);
    EXPECT_NE(one, other_seed);
  }
}

TEST(KvCache, BatchedSamplesAreTheSamplesAloneAndThreadIndependent) {
  auto model = random_model();
  GenerationSettings s;
  s.max_new_tokens = 30;
  s.sampling = {1.0, 0, 1.0, {}};
  std::vector<Rng> streams;
  for (int64_t i = 0; i < 5; ++i) streams.push_back(sample_stream(21, i));
  const auto batch = [&] { return generate_batch(*model, {1, 2}, s, streams); };
  const std::vector<Trace> two = testing::on_threads(2, batch);
  const std::vector<Trace> three = testing::on_threads(3, batch);
  for (std::size_t i = 0; i < streams.size(); ++i) {
    EXPECT_EQ(two[i].tokens, three[i].tokens) << "sequence " << i;
    EXPECT_EQ(two[i].logits, three[i].logits) << "sequence " << i;  // bit for bit
    Rng alone = streams[i];
    expect_same_trace(two[i], generate_cached(*model, {1, 2}, s, alone));
  }
  EXPECT_NE(two[0].tokens, two[1].tokens);  // different streams, different text
}

// gpt serve's steps: sequences at different lengths appended together, in any order and company,
// get bit for bit the logits each gets alone in a Generator of its own (a step of one row included).
TEST(KvCache, SequencesOfAnyLengthsShareAStepWithTheBitsOfEachAlone) {
  auto model = random_model(12, true, Dtype::float32, kModernAttention);
  const int64_t V = model->config().vocab_size;
  const std::vector<std::vector<int32_t>> prompts = {{1, 2, 3, 4, 5}, {7}, {9, 8, 7}};
  const std::vector<std::vector<int32_t>> steps = {{3, 0, 12}, {4, 5, 6}, {11, 10, 2}};
  std::vector<std::vector<std::vector<float>>> alone(3);  // [sequence][step] logits
  for (std::size_t s = 0; s < 3; ++s) {
    Generator generator(*model);
    generator.append(prompts[s].data(), static_cast<int64_t>(prompts[s].size()));
    for (const auto& step : steps) {
      const float* logits = generator.append(&step[s], 1);
      alone[s].emplace_back(logits, logits + V);
    }
  }
  Generator shared(*model, 4);  // sequence 3 stays empty
  shared.append_to({2}, prompts[2].data(), 3);
  shared.append_to({0}, prompts[0].data(), 5);
  shared.append_to({1}, prompts[1].data(), 1);
  const std::vector<std::vector<int64_t>> orders = {{2, 0, 1}, {1}, {0, 2}};
  std::vector<std::size_t> done(3, 0);
  for (const auto& order : orders) {
    std::vector<int32_t> tokens;
    for (const int64_t s : order) tokens.push_back(steps[done[s]][s]);
    const float* logits = shared.append_to(order, tokens.data(), 1);
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::size_t s = static_cast<std::size_t>(order[i]);
      EXPECT_EQ(std::vector<float>(logits + i * V, logits + (i + 1) * V), alone[s][done[s]++]) << "sequence " << s;
    }
  }
  EXPECT_EQ(shared.length(0), 7);
  EXPECT_EQ(shared.length(1), 3);
  EXPECT_EQ(shared.length(3), 0);
  EXPECT_THROW(shared.append_to({0, 0}, steps[0].data(), 1), InternalError);  // a sequence twice
  EXPECT_THROW(shared.append_to({0}, steps[0].data(), 6), InternalError);     // past block_size
}

// gpt serve's one forward per step: sequences taking different numbers of tokens (a prompt, one
// new token, a re-encoded window) in one ragged append get, bit for bit, what appending each one's
// tokens alone gives, on any thread count; with every position's logits too.
TEST(KvCache, RaggedAppendGivesEachSequenceTheBitsOfItsTokensAlone) {
  for (const Architecture& arch : {Architecture{}, kModernAttention}) {
    auto model = random_model(12, true, Dtype::float32, arch);
    const int64_t V = model->config().vocab_size;
    const std::vector<std::vector<int32_t>> before = {{1, 2, 3, 4, 5}, {7}, {}};  // already cached
    const std::vector<std::vector<int32_t>> fed = {{6}, {3, 4, 5, 6}, {9, 8, 7, 6, 5, 4}};
    // Per sequence alone: the logits after its last token, and every fed position's (an append
    // that keeps every position runs the last layer on all rows: other bits).
    std::vector<std::vector<float>> alone_last, alone_all;
    for (std::size_t s = 0; s < 3; ++s) {
      const auto n = static_cast<int64_t>(fed[s].size());
      Generator generator(*model, 2);
      if (!before[s].empty())
        for (const int64_t copy : {0, 1})
          generator.append_to({copy}, before[s].data(), static_cast<int64_t>(before[s].size()));
      const float* last = generator.append_to({0}, fed[s].data(), n);
      alone_last.emplace_back(last, last + V);
      alone_all.emplace_back();
      generator.append_to({1}, fed[s].data(), n, &alone_all.back());
    }
    const std::vector<int64_t> order = {2, 0, 1}, counts = {6, 1, 4};
    std::vector<int32_t> tokens;
    for (const int64_t s : order) tokens.insert(tokens.end(), fed[s].begin(), fed[s].end());
    for (const bool every_position : {false, true})
      for (const int threads : {1, 2, 3}) {
        SCOPED_TRACE(std::to_string(threads) + " threads, every position " + std::to_string(every_position));
        Generator shared(*model, 3);
        shared.append_to({0}, before[0].data(), 5);
        shared.append_to({1}, before[1].data(), 1);
        std::vector<float> all;
        const std::vector<float> last = testing::on_threads(threads, [&] {
          const float* logits = shared.append_ragged(order, counts, tokens.data(), every_position ? &all : nullptr);
          return std::vector<float>(logits, logits + 3 * V);
        });
        int64_t row = 0;
        for (std::size_t i = 0; i < order.size(); ++i) {
          const auto s = static_cast<std::size_t>(order[i]);
          const std::vector<float>& own_all = alone_all[s];
          const std::vector<float> own_last =
              every_position ? std::vector<float>(own_all.end() - V, own_all.end()) : alone_last[s];
          EXPECT_EQ(std::vector<float>(last.begin() + static_cast<int64_t>(i) * V, last.begin() + (i + 1) * V),
                    own_last)
              << "sequence " << s;
          if (every_position) {
            EXPECT_EQ(std::vector<float>(all.begin() + row * V, all.begin() + (row + counts[i]) * V), own_all)
                << "sequence " << s;
          }
          row += counts[i];
        }
        EXPECT_EQ(shared.length(0), 6);
        EXPECT_EQ(shared.length(1), 5);
        EXPECT_EQ(shared.length(2), 6);
      }
  }
  auto model = random_model(12);
  Generator generator(*model, 2);
  const std::vector<int32_t> tokens(13, 1);
  EXPECT_THROW(generator.append_ragged({0, 1}, {1}, tokens.data()), InternalError);      // a count per sequence
  EXPECT_THROW(generator.append_ragged({0, 1}, {2, 0}, tokens.data()), InternalError);   // no tokens
  EXPECT_THROW(generator.append_ragged({0, 1}, {1, 13}, tokens.data()), InternalError);  // past block_size
}

TEST(KvCache, SampleStreamsDoNotDependOnTheBatch) {
  Rng first = sample_stream(7, 0), plain(7);
  EXPECT_EQ(first.next_u64(), plain.next_u64());  // sample 0 is the --seed stream itself
  Rng a = sample_stream(7, 1), b = sample_stream(7, 1), c = sample_stream(7, 2), d = sample_stream(8, 1);
  const uint64_t x = a.next_u64();
  EXPECT_EQ(x, b.next_u64());
  EXPECT_NE(x, c.next_u64());
  EXPECT_NE(x, d.next_u64());
}

TEST(KvCache, SamplerContextLikelihoodMatchesRecomputation) {
  auto model = random_model();
  std::vector<int32_t> text;
  for (int i = 0; i < 30; ++i) text.push_back(static_cast<int32_t>((i * 7 + i / 3) % 13));
  for (int64_t shift : {0, 3}) {
    Generator generator(*model);
    const double cached = sampler_context_nll(generator, text, shift);
    Arena arena;
    Graph g(arena);
    NoGradGuard no_grad(g);
    Rng rng(0);
    double total = 0;
    int64_t begin = 0;
    for (std::size_t t = 1; t < text.size(); ++t) {
      const Window w = context_window(static_cast<int64_t>(t), 8, shift, begin);
      begin = w.begin;
      Gpt::Output out = model->forward(g, text.data() + w.begin, 1, w.end - w.begin, nullptr, false, rng);
      const float* last = out.logits.data + (w.end - w.begin - 1) * 13;
      double max = last[0], sum = 0;
      for (int v = 0; v < 13; ++v) max = std::max(max, double(last[v]));
      for (int v = 0; v < 13; ++v) sum += std::exp(last[v] - max);
      total += max + std::log(sum) - last[text[t]];
      g.reset();
    }
    EXPECT_NEAR(cached, total / double(text.size() - 1), 1e-5) << "shift " << shift;
  }
}

TEST(TokenSampler, GreedyTopKAndTopP) {
  const float logits[5] = {0.1f, 2.0f, 1.9f, -1.0f, 0.5f};
  Rng rng(1);
  EXPECT_EQ(TokenSampler({0.0, 0, 1.0, {}}).next(logits, 5, rng), 1);  // temperature 0: argmax
  TokenSampler top1({1.0, 1, 1.0, {}}), top2({1.0, 2, 1.0, {}}), nucleus({1.0, 0, 0.3, {}}),
      clamped({1.0, 99, 1.0, {}});
  int counts[5] = {};
  for (int i = 0; i < 2000; ++i) {
    EXPECT_EQ(top1.next(logits, 5, rng), 1);
    const int32_t t = top2.next(logits, 5, rng);
    EXPECT_TRUE(t == 1 || t == 2);
    EXPECT_EQ(nucleus.next(logits, 5, rng), 1);  // p(1) = 0.45 >= 0.3 alone
    counts[clamped.next(logits, 5, rng)]++;
  }
  // top_k above V is clamped: plain softmax sampling; token 1 has probability ~0.45.
  EXPECT_NEAR(counts[1] / 2000.0, 0.45, 0.05);
  EXPECT_GT(counts[3], 0);
}

// logit_bias is added before everything else: a banned (-inf) token is never drawn, greedy or
// not, even when it is the most likely; a large bias makes a token greedy's choice; top-k counts
// the biased logits.
TEST(TokenSampler, LogitBiasBansAndFavoursBeforeTemperatureAndTopK) {
  const float logits[5] = {0.1f, 2.0f, 1.9f, -1.0f, 0.5f};
  const float ban = -std::numeric_limits<float>::infinity();
  Rng rng(1);
  EXPECT_EQ(TokenSampler({0.0, 0, 1.0, {{1, ban}}}).next(logits, 5, rng), 2);
  EXPECT_EQ(TokenSampler({0.0, 0, 1.0, {{3, 100.0f}}}).next(logits, 5, rng), 3);
  TokenSampler banned({2.0, 0, 1.0, {{1, ban}, {2, ban}}}), top1({1.0, 1, 1.0, {{4, 1.6f}}});
  int counts[5] = {};
  for (int i = 0; i < 5000; ++i) {
    counts[banned.next(logits, 5, rng)]++;
    EXPECT_EQ(top1.next(logits, 5, rng), 4);  // 0.5 + 1.6 is the largest
  }
  EXPECT_EQ(counts[1] + counts[2], 0);
  for (const int v : {0, 3, 4}) EXPECT_GT(counts[v], 0) << v;
}

// top_p whose nucleus holds several tokens: they are drawn in proportion to their probabilities
// renormalised over the nucleus, and nothing outside it is drawn. Probabilities of the logits:
// 0.0643, 0.4297, 0.3888, 0.0214, 0.0959 (ids 0-4).
TEST(TokenSampler, TopPDrawsFromTheNucleusInProportion) {
  const float logits[5] = {0.1f, 2.0f, 1.9f, -1.0f, 0.5f};
  auto frequencies = [&](double top_p) {
    TokenSampler nucleus({1.0, 0, top_p, {}});
    Rng rng(5);
    std::vector<double> counts(5, 0.0);
    for (int i = 0; i < 20000; ++i) counts[nucleus.next(logits, 5, rng)] += 1.0 / 20000;
    return counts;
  };
  const std::vector<double> two = frequencies(0.8);  // 0.4297 < 0.8 <= 0.4297 + 0.3888
  EXPECT_NEAR(two[1], 0.4297 / 0.8185, 0.015);
  EXPECT_NEAR(two[2], 0.3888 / 0.8185, 0.015);
  EXPECT_EQ(two[0] + two[3] + two[4], 0.0);
  const std::vector<double> three = frequencies(0.85);  // token 4 joins: 0.8185 < 0.85
  EXPECT_NEAR(three[1], 0.4297 / 0.9144, 0.015);
  EXPECT_NEAR(three[2], 0.3888 / 0.9144, 0.015);
  EXPECT_NEAR(three[4], 0.0959 / 0.9144, 0.01);
  EXPECT_EQ(three[0] + three[3], 0.0);
}

// A temperature so small that a logit over it overflows (1e-310, which a client may send) is
// greedy's limit, not inf - inf = NaN (which made the highest id with a positive logit win).
TEST(TokenSampler, TemperatureTooSmallToDivideByIsGreedy) {
  const float mixed[5] = {2.0f, 3.0f, -1.0f, 1.0f, 0.5f}, negative[3] = {-3.0f, -1.0f, -2.0f};
  for (const double temperature : {1e-310, 1e-300, 4.9e-324}) {
    TokenSampler s({temperature, 0, 1.0, {}}), top2({temperature, 2, 0.9, {}});
    Rng rng(3);
    for (int i = 0; i < 20; ++i) {
      EXPECT_EQ(s.next(mixed, 5, rng), 1) << temperature;
      EXPECT_EQ(s.next(negative, 3, rng), 1) << temperature;
      EXPECT_EQ(top2.next(mixed, 5, rng), 1) << temperature;
    }
  }
}

TEST(TokenSampler, TemperatureSharpensAndFlattens) {
  const float logits[3] = {1.0f, 0.0f, 0.0f};
  auto frequency_of_first = [&](double temperature) {
    TokenSampler s({temperature, 0, 1.0, {}});
    Rng rng(9);
    int first = 0;
    for (int i = 0; i < 4000; ++i) first += s.next(logits, 3, rng) == 0;
    return first / 4000.0;
  };
  const double e = std::exp(1.0);
  EXPECT_NEAR(frequency_of_first(1.0), e / (e + 2), 0.03);
  EXPECT_GT(frequency_of_first(0.3), 0.9);
  EXPECT_LT(frequency_of_first(5.0), 0.45);
}

}  // namespace
}  // namespace gpt
