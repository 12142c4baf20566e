// Keyed random streams: each draw is named by its purpose and position, so a stream does not
// depend on which other streams were drawn before it. These tests fail if any purpose goes back
// to a shared sequential generator.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/keyed_permutation.h"
#include "core/random_streams.h"
#include "data/dataset.h"
#include "model/gpt.h"
#include "train/optimizer.h"
#include "train/train_step.h"
#include "train/trainer.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

using namespace gpt::testing;

std::vector<uint64_t> draws(Rng rng, int n) {
  std::vector<uint64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(rng.next_u64());
  return out;
}

TEST(RandomKey, ChildrenDependOnEveryFoldedValueAndItsOrder) {
  const RandomKey root(1337);
  EXPECT_EQ(root.fold_in(3).value(), RandomKey(1337).fold_in(3).value());
  EXPECT_NE(root.fold_in(3).value(), root.fold_in(4).value());
  EXPECT_NE(root.fold_in(1).fold_in(2).value(), root.fold_in(2).fold_in(1).value());
  EXPECT_NE(root.fold_in(0).value(), root.value());
  EXPECT_NE(RandomKey(1338).fold_in(3).value(), root.fold_in(3).value());
  EXPECT_EQ(root.fold_in("transformer.wte.weight").value(), root.fold_in("transformer.wte.weight").value());
  EXPECT_NE(root.fold_in("transformer.wte.weight").value(), root.fold_in("transformer.wpe.weight").value());
}

// A bijection of [0, n) for every n (the walk keeps odd sizes and sizes just above a power of 4
// inside), another order for another key, and not the identity.
TEST(KeyedPermutation, IsABijectionOfEachSizeAndTheKeyChoosesIt) {
  for (const uint64_t n : {1u, 2u, 3u, 5u, 16u, 17u, 100u, 1000u, 4097u}) {
    SCOPED_TRACE(n);
    const KeyedPermutation order(42, n), other(43, n);
    std::vector<uint64_t> image, other_image;
    for (uint64_t i = 0; i < n; ++i) {
      image.push_back(order(i));
      other_image.push_back(other(i));
    }
    std::vector<uint64_t> sorted = image;
    std::sort(sorted.begin(), sorted.end());
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
    if (n < 100) continue;
    EXPECT_NE(image, other_image);
    int fixed = 0;
    for (uint64_t i = 0; i < n; ++i) fixed += image[i] == i ? 1 : 0;
    EXPECT_LT(fixed, 10);
  }
}

TEST(RandomKey, StreamsOfEachPurposeAndPositionDiffer) {
  const auto batch = draws(train_batch_stream(1, 10, 0), 4);
  EXPECT_EQ(batch, draws(train_batch_stream(1, 10, 0), 4));
  EXPECT_NE(batch, draws(train_batch_stream(1, 10, 1), 4));
  EXPECT_NE(batch, draws(train_batch_stream(1, 11, 0), 4));
  EXPECT_NE(batch, draws(dropout_stream(1, 10, 0), 4));
  EXPECT_NE(batch, draws(eval_batch_stream(1, 10, Split::train, 0), 4));
  EXPECT_NE(draws(eval_batch_stream(1, 10, Split::train, 0), 4), draws(eval_batch_stream(1, 10, Split::val, 0), 4));
  // Sample 0 is the seed's own stream, so a lone sample draws what `--seed` always gave.
  EXPECT_EQ(draws(sample_stream(7, 0), 4), draws(Rng(7), 4));
  EXPECT_NE(draws(sample_stream(7, 1), 4), draws(Rng(7), 4));
}

GptConfig small_model(int64_t n_layer) {
  GptConfig c;
  c.n_layer = n_layer;
  c.n_head = 2;
  c.n_embd = 16;
  c.block_size = 8;
  c.vocab_size = 11;
  return c;
}

std::vector<float> values(Gpt& model, const std::string& name) {
  const Tensor t = model.params().tensor(name);
  return {t.data, t.data + t.numel()};
}

TEST(RandomStreams, AParameterStartsTheSameWhateverElseTheModelHas) {
  Gpt two(small_model(2)), three(small_model(3));
  two.init_weights(5);
  three.init_weights(5);
  for (const char* name : {"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.attn.c_attn.weight",
                           "transformer.h.1.mlp.c_fc.weight"})
    EXPECT_EQ(values(two, name), values(three, name)) << name;
  // c_proj's scaled init depends on the depth, as GPT-2's does.
  EXPECT_NE(values(two, "transformer.h.0.mlp.c_proj.weight"), values(three, "transformer.h.0.mlp.c_proj.weight"));
  Gpt other_seed(small_model(2));
  other_seed.init_weights(6);
  EXPECT_NE(values(two, "transformer.wte.weight"), values(other_seed, "transformer.wte.weight"));
}

class StreamsInTraining : public CorpusTest {};

TEST_F(StreamsInTraining, EvaluationScheduleDoesNotChangeTrainingLosses) {
  TrainConfig c = tiny_config(dir, corpus);  // dropout on
  run_training(c, nullptr);
  const LoggedRun base = read_metrics(c.out_dir);
  c.eval_interval = 7;
  c.eval_iters = 5;
  run_training(c, nullptr);
  const LoggedRun other = read_metrics(c.out_dir);
  ASSERT_EQ(base.train.size(), 20u);
  EXPECT_EQ(base.train, other.train);
  EXPECT_NE(base.val.size(), other.val.size());
}

// Micro-batch m of iteration i: the same rows, dropout masks, loss and gradient whether it is
// computed first, after the others, or alone.
TEST_F(StreamsInTraining, AMicroBatchCanBeComputedAlone) {
  const Dataset data = testing::open_text(corpus);
  GptConfig mc = small_model(2);
  mc.vocab_size = data.vocab().size();
  mc.block_size = 16;
  mc.dropout = 0.2f;
  Gpt model(mc);
  model.init_weights(3);
  Arena arena;
  Graph graph(arena);
  Batch batch;
  const StepSettings s{4, 16, 4, 1.0, 3};
  ParamStore& p = model.params();
  auto gradient = [&] { return std::vector<float>(p.grad(), p.grad() + p.padded_floats()); };

  const double alone = accumulate_micro_batch(model, graph, data.train(), s, 12, 2, batch);
  const std::vector<float> alone_grad = gradient();
  p.zero_grad();
  double in_order[4];
  std::vector<float> in_order_grad;
  for (int64_t m = 0; m < 4; ++m) {
    p.zero_grad();
    in_order[m] = accumulate_micro_batch(model, graph, data.train(), s, 12, m, batch);
    if (m == 2) in_order_grad = gradient();
  }
  EXPECT_EQ(alone, in_order[2]);
  EXPECT_EQ(alone_grad, in_order_grad);
  EXPECT_NE(in_order[1], in_order[2]);

  // train_step's loss is the mean of its micro-batches', which are these.
  p.zero_grad();
  const std::unique_ptr<Optimizer> optimizer = make_optimizer(TrainConfig{}, p);
  LocalGradientSync sync;
  const StepResult step = train_step(model, graph, *optimizer, sync, data.train(), s, 12, 1e-3, batch);
  EXPECT_EQ(step.loss, (((0.0 + in_order[0]) + in_order[1]) + in_order[2] + in_order[3]) / 4.0);
}

}  // namespace
}  // namespace gpt
