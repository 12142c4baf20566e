// Config keys whose effect no other test would notice: each test here fails when its key's effect
// is removed (the key ignored, or another key's value used in its place). Which test pins which
// key is listed in tests/config_key_tests.txt, checked against the keys by
// tests/config_key_tests.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "core/random_streams.h"
#include "distributed/world.h"
#include "io/checkpoint.h"
#include "kernels/rope.h"
#include "train/evaluate.h"
#include "train/gradient_sync.h"
#include "train/lr_schedule.h"
#include "train/train_step.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

using namespace gpt::testing;

class ConfigEffects : public CorpusTest {};

// One process's gradient steps on the tiny config's model (dropout off), outside a run.
struct GradientBench {
  explicit GradientBench(const ScratchDir& dir, const std::string& corpus)
      : config(tiny_config(dir, corpus)), data(open_text(corpus)) {
    config.model.dropout = 0;
    model = std::make_unique<Gpt>(config.model_config(data.vocab().size()));
    model->init_weights(1);
  }
  StepResult step(const StepSettings& s, int64_t iter) {
    return compute_step_gradient(*model, graph, sync, data.train(), s, iter, batch);
  }
  TrainConfig config;
  Dataset data;
  std::unique_ptr<Gpt> model;
  Arena arena;
  Graph graph{arena};
  Batch batch;
  LocalGradientSync sync;
};

// The run's first "start" record in metrics.jsonl: its data, processes and threads.
nlohmann::json start_record(const std::string& out_dir) {
  std::ifstream in(out_dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "start") return j;
  }
  return {};
}

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

// lr_cooldown_fraction holds learning_rate until the last part of the span, then the shape falls
// from it to min_lr in that part: a straight line, or half a cosine.
TEST(LrSchedule, HoldsTheRateUntilTheCooldownThenFallsInItsShape) {
  const LrSchedule linear{1.0, 0.1, 10, 110, true, LrDecayShape::linear, 0.4};
  for (int64_t it = 10; it <= 70; ++it) EXPECT_EQ(linear.at(it), 1.0) << it;
  EXPECT_NEAR(linear.at(90), 0.55, 1e-12);  // halfway along the cooldown
  EXPECT_NEAR(linear.at(100), 0.1 + 0.9 * 0.25, 1e-12);
  EXPECT_NEAR(linear.at(110), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(linear.at(111), 0.1);
  for (int64_t it = 72; it <= 110; ++it)
    EXPECT_NEAR(linear.at(it - 1) - linear.at(it), 0.9 / 40, 1e-12) << it;  // a straight line
  const LrSchedule cosine_half{1.0, 0.1, 10, 110, true, LrDecayShape::cosine, 0.5};
  EXPECT_EQ(cosine_half.at(60), 1.0);
  EXPECT_NEAR(cosine_half.at(85), 0.55, 1e-12);
  EXPECT_NEAR(cosine_half.at(110), 0.1, 1e-12);
  const LrSchedule linear_whole{1.0, 0.1, 10, 110, true, LrDecayShape::linear, 1.0};
  EXPECT_NEAR(linear_whole.at(60), 0.55, 1e-12);
  // The default (cosine, fraction 1) is nanoGPT's formula to the bit.
  const LrSchedule nanogpt{3e-3, 2e-4, 7, 93, true};
  for (int64_t it = 7; it <= 93; ++it) {
    const double coeff = 0.5 * (1.0 + std::cos(M_PI * (static_cast<double>(it - 7) / 86.0)));
    EXPECT_EQ(nanogpt.at(it), 2e-4 + coeff * (3e-3 - 2e-4)) << it;
  }
}

// lr_decay_shape and lr_cooldown_fraction reach the run: the rates it logs are the schedule's.
TEST_F(ConfigEffects, LrCooldownKeysShapeTheRatesTheRunTrainsAt) {
  TrainConfig c = tiny_config(dir, corpus);
  c.lr_decay_shape = LrDecayShape::linear;
  c.lr_cooldown_fraction = 0.5;
  c.lr_decay_iters = c.max_iters - 1;
  run_training(c, nullptr);
  const std::vector<double> rates = logged_learning_rates(c.out_dir);
  ASSERT_EQ(rates.size(), static_cast<std::size_t>(c.max_iters));
  // warmup 5, then the span 5 .. 19: held while (it - 5) / 14 < 0.5, then a straight fall to min_lr.
  for (int64_t it = c.warmup_iters; it <= 11; ++it)
    EXPECT_EQ(rates[static_cast<std::size_t>(it)], c.learning_rate) << it;
  const double step = (c.learning_rate - c.min_lr) / 7;
  for (int64_t it = 12; it < c.max_iters; ++it)
    EXPECT_NEAR(rates[static_cast<std::size_t>(it)], c.min_lr + (19 - it) * step, 1e-15) << it;
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
  GradientBench bench(dir, corpus);
  ParamStore& params = bench.model->params();
  auto global_norm = [&] {
    double sum = 0;
    for (std::size_t i = 0; i < params.padded_floats(); ++i)
      sum += static_cast<double>(params.grad()[i]) * params.grad()[i];
    return std::sqrt(sum);
  };
  StepSettings s{bench.config.batch_size, bench.config.model.block_size, 1, 0.0, 7};
  const StepResult free = bench.step(s, 0);
  EXPECT_NEAR(global_norm(), free.grad_norm, 1e-4 * free.grad_norm);
  params.zero_grad();
  s.grad_clip = free.grad_norm / 4;
  const StepResult clipped = bench.step(s, 0);
  EXPECT_EQ(clipped.grad_norm, free.grad_norm);  // the norm before clipping
  EXPECT_NEAR(global_norm(), s.grad_clip, 1e-4 * s.grad_clip);
}

// gradient_accumulation_steps: the micro-batches' accumulated gradient is the gradient of the mean
// loss over all their rows, as if they were one batch.
TEST_F(ConfigEffects, GradientAccumulationGivesTheGradientOfOneBigBatch) {
  GradientBench bench(dir, corpus);
  const int64_t B = 4, T = bench.config.model.block_size, micro_batches = 3, iter = 5;
  const StepSettings s{B, T, micro_batches, 0.0, 7};
  const StepResult accumulated = bench.step(s, iter);
  ParamStore& params = bench.model->params();
  const std::vector<float> by_micro_batches(params.grad(), params.grad() + params.padded_floats());
  params.zero_grad();

  Batch big;
  for (int64_t micro = 0; micro < micro_batches; ++micro) {
    Rng rows = train_batch_stream(s.seed, iter, micro);
    Dataset::sample_batch(bench.data.train(), B, T, rows, bench.batch);
    big.inputs.insert(big.inputs.end(), bench.batch.inputs.begin(), bench.batch.inputs.end());
    big.targets.insert(big.targets.end(), bench.batch.targets.begin(), bench.batch.targets.end());
  }
  Rng no_dropout(0);
  const Gpt::Output out =
      bench.model->forward(bench.graph, big.inputs.data(), B * micro_batches, T, big.targets.data(), true, no_dropout);
  EXPECT_NEAR(out.loss.item(), accumulated.loss, 1e-5);
  bench.graph.backward(out.loss);
  bench.graph.reset();
  double largest = 0;
  for (std::size_t i = 0; i < params.padded_floats(); ++i)
    largest = std::max(largest, std::fabs(static_cast<double>(params.grad()[i])));
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

// val_fraction: the share of the text that becomes the validation split.
TEST_F(ConfigEffects, ValFractionSizesTheValidationSplit) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 0;
  for (double fraction : {0.1, 0.3}) {
    c.val_fraction = fraction;
    run_training(c, nullptr);
    const nlohmann::json start = start_record(c.out_dir);
    const double total = start["train_tokens"].get<double>() + start["val_tokens"].get<double>();
    EXPECT_NEAR(start["val_tokens"].get<double>() / total, fraction, 0.01) << fraction;
  }
}

// val_data_path: that file, whole, is the validation split.
TEST_F(ConfigEffects, ValDataPathIsTheValidationSplit) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 0;
  c.val_data_path = dir.write("val.txt", generated_corpus(1234, 9).substr(0, 1234));
  run_training(c, nullptr);
  EXPECT_EQ(start_record(c.out_dir)["val_tokens"], 1234);
  EXPECT_EQ(start_record(c.out_dir)["train_tokens"], generated_corpus(20000).size());
}

// skip_invalid_files: a folder's file that is not UTF-8 text stops the run, or is left out.
TEST_F(ConfigEffects, SkipInvalidFilesLeavesOutWhatIsNotText) {
  TrainConfig c = tiny_config(dir, dir.file("texts"));
  c.max_iters = 0;
  std::filesystem::create_directories(dir.file("texts"));
  const std::string text = generated_corpus(5000);
  dir.write("texts/a.txt", text);
  dir.write("texts/b.bin", std::string("\xff\xfe\x00binary", 9));
  EXPECT_THROW(run_training(c, nullptr), UserError);
  c.skip_invalid_files = true;
  run_training(c, nullptr);
  const nlohmann::json start = start_record(c.out_dir);
  EXPECT_EQ(start["train_tokens"].get<std::size_t>() + start["val_tokens"].get<std::size_t>(), text.size());
}

// cache_dir: where the text is prepared.
TEST_F(ConfigEffects, CacheDirHoldsThePreparedDataset) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 0;
  c.cache_dir = dir.file("cache");
  run_training(c, nullptr);
  const std::string folder = cache_folder(c.corpus(), c.cache_dir);
  EXPECT_TRUE(folder.starts_with(c.cache_dir)) << folder;
  EXPECT_TRUE(std::filesystem::exists(folder + "/train.bin")) << folder;
  EXPECT_EQ(start_record(c.out_dir)["data"], folder);
}

// dropout: masks in training that change its losses; dropout 0 matches a plain forward (the
// accumulation test above).
TEST_F(ConfigEffects, DropoutChangesTheTrainingLosses) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 3;
  c.model.dropout = 0;
  run_training(c, nullptr);
  const auto plain = read_metrics(c.out_dir).train;
  c.model.dropout = 0.3;
  run_training(c, nullptr);
  const auto dropped = read_metrics(c.out_dir).train;
  ASSERT_EQ(plain.size(), dropped.size());
  EXPECT_NE(plain.front(), dropped.front());
}

// data_order: "epochs" trains on other windows than "random" from the first step, and a resumed
// run continues the epochs' order bit for bit.
TEST_F(ConfigEffects, DataOrderEpochsTakesOtherWindowsAndResumesExactly) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 3;
  c.model.dropout = 0;
  run_training(c, nullptr);
  const auto random = read_metrics(c.out_dir).train;
  c.data_order = DataOrder::epochs;
  run_training(c, nullptr);
  const auto epochs = read_metrics(c.out_dir).train;
  ASSERT_EQ(random.size(), epochs.size());
  EXPECT_NE(random.front(), epochs.front());
  c = tiny_config(dir, corpus);
  c.data_order = DataOrder::epochs;
  expect_resumed_run_reproduces(c, dir.file("split"));
}

// batch_size (with seed and block_size): the first logged loss is that of the step's batch of
// batch_size rows, drawn from the seed's stream, on the seed's initial weights.
TEST_F(ConfigEffects, BatchSizeIsTheRowsOfAStep) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 1;
  c.model.dropout = 0;
  c.batch_size = 5;
  c.seed = 11;
  run_training(c, nullptr);
  GradientBench bench(dir, corpus);
  bench.model->init_weights(11);
  const StepResult step = bench.step({5, c.model.block_size, 1, 0.0, 11}, 0);
  EXPECT_EQ(read_metrics(c.out_dir).train.at(0).second, step.loss);
}

// rope_theta: the base of the rotary angles the model rotates q and k by.
GptConfig one_layer_model() {
  GptConfig config;
  config.n_layer = 1;
  config.n_head = 2;
  config.n_embd = 16;
  config.block_size = 8;
  config.vocab_size = 10;
  return config;
}

TEST(ConfigEffectsOnTheModel, RopeThetaSetsTheRotaryAngles) {
  GptConfig config = one_layer_model();
  config.pos_encoding = PosEncoding::rope;
  config.rope_theta = 500;
  const RopeTable expected = make_rope_table(8, 8, 500), other = make_rope_table(8, 8, 10000);
  const Gpt model(config);
  EXPECT_EQ(model.rope_table().cos, expected.cos);
  EXPECT_EQ(model.rope_table().sin, expected.sin);
  EXPECT_NE(expected.cos, other.cos);
}

// mlp_hidden: the width of the MLP's hidden layer, in the weights' shapes.
TEST(ConfigEffectsOnTheModel, MlpHiddenIsTheWidthOfTheMlpWeights) {
  GptConfig config = one_layer_model();
  config.mlp_hidden = 50;
  Gpt model(config);
  const ParamStore& params = model.params();
  EXPECT_EQ(params.slot(params.index_of("transformer.h.0.mlp.c_fc.weight")).shape, (Shape{50, 16}));
  EXPECT_EQ(params.slot(params.index_of("transformer.h.0.mlp.c_proj.weight")).shape, (Shape{16, 50}));
}

}  // namespace
}  // namespace gpt
