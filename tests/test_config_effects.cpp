// Config keys whose effect no other test would notice: each test here fails when its key's effect
// is removed (the key ignored, or another key's value used in its place). Which test pins which
// key is listed in tests/config_key_tests.txt, checked against the keys by
// tests/config_key_tests.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/random_streams.h"
#include "distributed/world.h"
#include "io/checkpoint.h"
#include "train/evaluate.h"
#include "train/gradient_sync.h"
#include "train/lr_schedule.h"
#include "train/train_step.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

using namespace gpt::testing;

class ConfigEffects : public CorpusTest {};

std::vector<double> logged_learning_rates(const std::string& out_dir) {
  std::vector<double> rates;
  std::ifstream in(out_dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j["type"] == "train") rates.push_back(j["lr"].get<double>());
  }
  return rates;
}

TEST(LrSchedule, WarmsUpLinearlyDecaysAlongACosineAndHoldsTheFloor) {
  const LrSchedule s{1.0, 0.1, 10, 110, true};
  EXPECT_DOUBLE_EQ(s.at(0), 1.0 / 11);
  EXPECT_DOUBLE_EQ(s.at(9), 10.0 / 11);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);
  EXPECT_NEAR(s.at(60), 0.55, 1e-12);  // halfway along the cosine: (1 + 0.1) / 2
  EXPECT_NEAR(s.at(35), 0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI / 4)), 1e-12);
  EXPECT_NEAR(s.at(110), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(s.at(111), 0.1);
  EXPECT_DOUBLE_EQ(s.at(100000), 0.1);
  for (int64_t it = 11; it < 110; ++it) EXPECT_LT(s.at(it), s.at(it - 1)) << it;
  const LrSchedule constant{1.0, 0.1, 10, 110, false};
  for (int64_t it : {0, 5, 10, 60, 110, 1000}) EXPECT_EQ(constant.at(it), 1.0) << it;
}

// decay_lr false: every iteration trains at learning_rate, warmup included.
TEST_F(ConfigEffects, DecayLrFalseTrainsAtTheLearningRateThroughout) {
  TrainConfig c = tiny_config(dir, corpus);
  c.decay_lr = false;
  run_training(c, nullptr);
  const std::vector<double> rates = logged_learning_rates(c.out_dir);
  ASSERT_EQ(rates.size(), static_cast<std::size_t>(c.max_iters));
  for (double lr : rates) EXPECT_EQ(lr, c.learning_rate);
  c.decay_lr = true;
  run_training(c, nullptr);
  const std::vector<double> decayed = logged_learning_rates(c.out_dir);
  EXPECT_LT(decayed.front(), c.learning_rate);
  EXPECT_LT(decayed.back(), 0.5 * c.learning_rate);
}

// grad_clip scales the gradient down to that global norm, and only when the norm exceeds it.
TEST_F(ConfigEffects, GradClipBelowTheNormChangesTheRunAndAboveItDoesNot) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 8;
  auto losses = [&](double grad_clip) {
    c.grad_clip = grad_clip;
    run_training(c, nullptr);
    return read_metrics(c.out_dir).train;
  };
  const auto unclipped = losses(0.0);
  EXPECT_EQ(losses(1e9), unclipped);
  const auto clipped = losses(1e-3);
  ASSERT_EQ(clipped.size(), unclipped.size());
  EXPECT_EQ(clipped.front(), unclipped.front());  // the first loss comes before any update
  EXPECT_NE(clipped, unclipped);
}

TEST_F(ConfigEffects, GradClipLeavesTheGradientAtThatNorm) {
  TrainConfig c = tiny_config(dir, corpus);
  const Dataset data = open_text(corpus);
  Gpt model(c.model_config(data.vocab().size()));
  model.init_weights(1);
  Arena arena;
  Graph graph(arena);
  Batch batch;
  LocalGradientSync sync;
  auto global_norm = [&] {
    ParamStore& p = model.params();
    double sum = 0;
    for (std::size_t i = 0; i < p.padded_floats(); ++i) sum += static_cast<double>(p.grad()[i]) * p.grad()[i];
    return std::sqrt(sum);
  };
  StepSettings s{c.batch_size, c.model.block_size, 1, 0.0, 7};
  const StepResult free = compute_step_gradient(model, graph, sync, data.train(), s, 0, batch);
  EXPECT_NEAR(global_norm(), free.grad_norm, 1e-4 * free.grad_norm);
  model.params().zero_grad();
  s.grad_clip = free.grad_norm / 4;
  const StepResult clipped = compute_step_gradient(model, graph, sync, data.train(), s, 0, batch);
  EXPECT_EQ(clipped.grad_norm, free.grad_norm);  // the norm before clipping
  EXPECT_NEAR(global_norm(), s.grad_clip, 1e-4 * s.grad_clip);
}

// gradient_accumulation_steps: the micro-batches' accumulated gradient is the gradient of the mean
// loss over all their rows, as if they were one batch.
TEST_F(ConfigEffects, GradientAccumulationGivesTheGradientOfOneBigBatch) {
  TrainConfig c = tiny_config(dir, corpus);
  c.model.dropout = 0;
  const int64_t B = 4, T = c.model.block_size, micro_batches = 3;
  const Dataset data = open_text(corpus);
  Gpt model(c.model_config(data.vocab().size()));
  model.init_weights(1);
  Arena arena;
  Graph graph(arena);
  Batch batch;
  LocalGradientSync sync;
  const StepSettings s{B, T, micro_batches, 0.0, 7};
  const int64_t iter = 5;
  const StepResult accumulated = compute_step_gradient(model, graph, sync, data.train(), s, iter, batch);
  ParamStore& params = model.params();
  const std::vector<float> by_micro_batches(params.grad(), params.grad() + params.padded_floats());
  params.zero_grad();

  Batch big;
  for (int64_t micro = 0; micro < micro_batches; ++micro) {
    Rng rows = train_batch_stream(s.seed, iter, micro);
    Dataset::sample_batch(data.train(), B, T, rows, batch);
    big.inputs.insert(big.inputs.end(), batch.inputs.begin(), batch.inputs.end());
    big.targets.insert(big.targets.end(), batch.targets.begin(), batch.targets.end());
  }
  Rng no_dropout(0);
  const Gpt::Output out = model.forward(graph, big.inputs.data(), B * micro_batches, T, big.targets.data(), true,
                                        no_dropout);
  EXPECT_NEAR(out.loss.item(), accumulated.loss, 1e-5);
  graph.backward(out.loss);
  graph.reset();
  double largest = 0;
  for (std::size_t i = 0; i < params.padded_floats(); ++i) largest = std::max(largest, std::fabs(static_cast<double>(params.grad()[i])));
  ASSERT_GT(largest, 0.0);
  for (std::size_t i = 0; i < params.padded_floats(); ++i)
    ASSERT_NEAR(by_micro_batches[i], params.grad()[i], 1e-5 * largest) << "gradient element " << i;
}

// log_interval: which iterations metrics.jsonl (and the log) record.
TEST_F(ConfigEffects, LogIntervalChoosesTheLoggedIterations) {
  TrainConfig c = tiny_config(dir, corpus);
  c.log_interval = 7;
  run_training(c, nullptr);
  std::vector<int64_t> logged;
  for (const auto& [iter, loss] : read_metrics(c.out_dir).train) logged.push_back(iter);
  EXPECT_EQ(logged, (std::vector<int64_t>{0, 7, 14}));
}

// eval_iters: an evaluation is the mean over that many batches, those of estimate_loss.
TEST_F(ConfigEffects, EvalItersIsTheNumberOfBatchesAnEvaluationAverages) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 0;
  c.eval_iters = 3;
  run_training(c, nullptr);
  const double logged = read_metrics(c.out_dir).val.at(0).second;
  LoadedModel loaded = load_model(c.out_dir);  // the evaluated initial weights
  const Dataset data = open_text(corpus);
  Arena arena;
  Graph graph(arena);
  Batch batch;
  const World one_process;
  auto estimate = [&](int64_t count) {
    const EvalBatches batches{static_cast<uint64_t>(c.seed), 0, count, c.batch_size, c.model.block_size};
    return estimate_loss(*loaded.model, graph, data.val(), Split::val, batches, batch, one_process);
  };
  EXPECT_EQ(logged, estimate(3));
  EXPECT_NE(estimate(3), estimate(2));
}

}  // namespace
}  // namespace gpt
