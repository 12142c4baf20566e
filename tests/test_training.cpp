// The training loop end to end, in process: loss falls, runs are bit-reproducible for a seed and
// independent of the thread count, a resumed run continues exactly, checkpoints reload.
#include <gtest/gtest.h>

#include <cmath>

#include "core/check.h"
#include "data/dataset.h"
#include "io/checkpoint.h"
#include "thread_count.h"
#include "train/evaluate.h"
#include "train/trainer.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

using namespace gpt::testing;

class Training : public CorpusTest {};

TEST_F(Training, LossFallsWellBelowUniform) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 150;
  c.lr_decay_iters = 150;
  c.eval_interval = 50;
  c.eval_iters = 5;
  c.dropout = 0;
  const TrainResult r = run_training(c, nullptr);
  const double uniform = std::log(static_cast<double>(open_text(corpus).vocab().size()));
  EXPECT_LT(r.last_val_loss, 0.6 * uniform) << "ln(V) = " << uniform;
  EXPECT_EQ(r.final_iter, 150);
}

TEST_F(Training, SameSeedSameLossesBitForBit) {
  TrainConfig c = tiny_config(dir, corpus);
  run_training(c, nullptr);
  const LoggedRun first = read_metrics(c.out_dir);
  run_training(c, nullptr);
  const LoggedRun second = read_metrics(c.out_dir);
  ASSERT_EQ(first.train.size(), 20u);
  EXPECT_EQ(first.train, second.train);
  EXPECT_EQ(first.val, second.val);
  c.seed = 7;
  run_training(c, nullptr);
  EXPECT_NE(read_metrics(c.out_dir).train, first.train);
}

TEST_F(Training, ThreadCountDoesNotChangeTheResult) {
  const testing::ThreadCount restore;  // run_training sets the count from c.threads
  TrainConfig c = tiny_config(dir, corpus);
  c.n_embd = 64;  // enough work for the parallel paths to split it
  c.batch_size = 16;
  c.threads = 1;
  run_training(c, nullptr);
  const LoggedRun one = read_metrics(c.out_dir);
  c.threads = 2;
  run_training(c, nullptr);
  const LoggedRun two = read_metrics(c.out_dir);
  c.threads = 3;
  run_training(c, nullptr);
  const LoggedRun three = read_metrics(c.out_dir);
  EXPECT_EQ(one.train, two.train);
  EXPECT_EQ(one.train, three.train);
  EXPECT_EQ(one.val, two.val);
}

// dtype bfloat16: thread-independent like float32, close to it but not the same, and the
// checkpoint (float32 weights) says which dtype sampling and evaluation should use.
TEST_F(Training, Bfloat16RunIsThreadIndependentTracksFloat32AndIsRecorded) {
  const testing::ThreadCount restore;
  TrainConfig c = tiny_config(dir, corpus);
  c.n_embd = 64;
  c.batch_size = 16;
  run_training(c, nullptr);
  const LoggedRun float32 = read_metrics(c.out_dir);
  EXPECT_EQ(load_model(c.out_dir).model->matmul_dtype(), Dtype::float32);
  c.dtype = "bfloat16";
  c.threads = 1;
  run_training(c, nullptr);
  const LoggedRun one = read_metrics(c.out_dir);
  c.threads = 3;
  run_training(c, nullptr);
  const LoggedRun three = read_metrics(c.out_dir);
  EXPECT_EQ(one.train, three.train);
  EXPECT_EQ(one.val, three.val);
  ASSERT_EQ(one.val.size(), float32.val.size());
  EXPECT_NE(one.val, float32.val);
  for (std::size_t i = 0; i < one.val.size(); ++i) EXPECT_NEAR(one.val[i].second, float32.val[i].second, 0.02);
  EXPECT_EQ(load_model(c.out_dir).model->matmul_dtype(), Dtype::bfloat16);
}

TEST_F(Training, ResumedRunReproducesTheUninterruptedRun) {
  expect_resumed_run_reproduces(tiny_config(dir, corpus), dir.file("split"));
}

TEST_F(Training, StopRequestSavesAResumableCheckpoint) {
  TrainConfig c = tiny_config(dir, corpus);
  run_training(c, nullptr);
  const LoggedRun full = read_metrics(c.out_dir);

  TrainConfig stopped = c;
  stopped.out_dir = dir.file("stopped");
  std::atomic<int> stop{2};  // as if SIGINT arrived during the first iteration
  const TrainResult r = run_training(stopped, &stop);
  EXPECT_EQ(r.stop_signal, 2);
  EXPECT_EQ(r.iterations, 1);
  stopped.init_from = "resume";
  run_training(stopped, nullptr);
  EXPECT_EQ(read_metrics(stopped.out_dir).train, full.train);
  EXPECT_EQ(read_metrics(stopped.out_dir).val, full.val);
}

TEST_F(Training, CheckpointReloadsToTheSameEvaluation) {
  TrainConfig c = tiny_config(dir, corpus);
  run_training(c, nullptr);
  LoggedRun run = read_metrics(c.out_dir);
  const Dataset data = open_text(corpus);
  const TokenView ids = data.val();
  Arena arena;
  Graph graph(arena);
  LoadedModel a = load_model(c.out_dir);
  LoadedModel b = load_model(c.out_dir + "/model.safetensors");
  const WindowEval ea = evaluate_windows(*a.model, graph, ids, 16), eb = evaluate_windows(*b.model, graph, ids, 16);
  EXPECT_EQ(ea.loss_nats, eb.loss_nats);
  EXPECT_EQ(ea.tokens, (ids.size() - 1) / 16 * 16);
  EXPECT_NEAR(ea.bits_per_char, ea.loss_nats / std::log(2.0), 1e-12);
  EXPECT_GT(ea.loss_nats, 0.0);
}

TEST_F(Training, ResumeWithADifferentArchitectureIsAnError) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 2;
  run_training(c, nullptr);
  c.init_from = "resume";
  c.n_layer = 3;
  try {
    run_training(c, nullptr);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("n_layer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpt
