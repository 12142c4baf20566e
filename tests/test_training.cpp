// The training loop end to end, in process: loss falls, runs are bit-reproducible for a seed and
// independent of the thread count, a resumed run continues exactly, checkpoints reload.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <new>
#include <thread>

#include "core/atomic_file.h"
#include "core/check.h"
#include "data/dataset.h"
#include "io/checkpoint.h"
#include "io/run_folder.h"
#include "io/safetensors.h"
#include "kernels/gemm.h"
#include "thread_count.h"
#include "train/evaluate.h"
#include "train/run_reporter.h"
#include "train/stop_saver.h"
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
  c.model.dropout = 0;
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
  const testing::ThreadCount restore;  // the CLI applies the threads key; run_training uses OpenMP's count
  TrainConfig c = tiny_config(dir, corpus);
  c.model.n_embd = 64;  // enough work for the parallel paths to split it
  c.batch_size = 16;
  omp_set_num_threads(1);
  run_training(c, nullptr);
  const LoggedRun one = read_metrics(c.out_dir);
  omp_set_num_threads(2);
  run_training(c, nullptr);
  const LoggedRun two = read_metrics(c.out_dir);
  omp_set_num_threads(3);
  run_training(c, nullptr);
  const LoggedRun three = read_metrics(c.out_dir);
  EXPECT_EQ(one.train, two.train);
  EXPECT_EQ(one.train, three.train);
  EXPECT_EQ(one.val, two.val);
}

// The attention keys' paths (RoPE, QK-norm, grouped-query attention's backward by kv head) too.
TEST_F(Training, AttentionKeysThreadCountDoesNotChangeTheResult) {
  TrainConfig c = tiny_config(dir, corpus);
  c.model.n_embd = 64;
  c.model.pos_encoding = PosEncoding::rope;
  c.model.n_kv_head = 1;
  c.model.qk_norm = true;
  c.batch_size = 16;
  expect_thread_count_does_not_change_the_run(c);
}

// dtype bfloat16: thread-independent like float32, close to it but not the same, and the
// checkpoint (float32 weights) says which dtype sampling and evaluation should use.
TEST_F(Training, Bfloat16RunIsThreadIndependentTracksFloat32AndIsRecorded) {
  const testing::ThreadCount restore;
  TrainConfig c = tiny_config(dir, corpus);
  c.model.n_embd = 64;
  c.batch_size = 16;
  run_training(c, nullptr);
  const LoggedRun float32 = read_metrics(c.out_dir);
  EXPECT_EQ(load_model(c.out_dir).model->matmul_dtype(), Dtype::float32);
  c.dtype = DtypeSetting::bfloat16;
  omp_set_num_threads(1);
  run_training(c, nullptr);
  const LoggedRun one = read_metrics(c.out_dir);
  omp_set_num_threads(3);
  run_training(c, nullptr);
  const LoggedRun three = read_metrics(c.out_dir);
  EXPECT_EQ(one.train, three.train);
  EXPECT_EQ(one.val, three.val);
  ASSERT_EQ(one.val.size(), float32.val.size());
  EXPECT_NE(one.val, float32.val);
  for (std::size_t i = 0; i < one.val.size(); ++i) EXPECT_NEAR(one.val[i].second, float32.val[i].second, 0.02);
  EXPECT_EQ(load_model(c.out_dir).model->matmul_dtype(), Dtype::bfloat16);
}

// bf16_arithmetic "tiles" (AMX's order; emulated where AMX is absent): its own bits, independent of
// the thread count, recorded in the checkpoint, and kept by a resume under "auto".
TEST_F(Training, TilesArithmeticHasItsOwnBitsAndAResumeKeepsIt) {
  const testing::ThreadCount restore;
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = c.lr_decay_iters = 10;
  c.dtype = DtypeSetting::bfloat16;
  c.bf16_arithmetic = Bf16Arithmetic::sequential;
  run_training(c, nullptr);
  const LoggedRun sequential = read_metrics(c.out_dir);
  EXPECT_EQ(load_model(c.out_dir).bf16_arithmetic, Bf16Arithmetic::sequential);
  c.bf16_arithmetic = Bf16Arithmetic::tiles;
  omp_set_num_threads(1);
  run_training(c, nullptr);
  const LoggedRun tiles = read_metrics(c.out_dir);
  EXPECT_EQ(load_model(c.out_dir).bf16_arithmetic, Bf16Arithmetic::tiles);
  EXPECT_NE(tiles.train, sequential.train);
  omp_set_num_threads(2);
  run_training(c, nullptr);
  EXPECT_EQ(read_metrics(c.out_dir).train, tiles.train);

  TrainConfig first_half = c;
  first_half.out_dir = dir.file("split");
  first_half.max_iters = 5;
  run_training(first_half, nullptr);
  TrainConfig second_half = first_half;
  second_half.max_iters = c.max_iters;
  second_half.init_from = {InitKind::resume, ""};
  second_half.bf16_arithmetic = Bf16Arithmetic::automatic;
  run_training(second_half, nullptr);
  EXPECT_EQ(read_metrics(first_half.out_dir).train, tiles.train);
  EXPECT_EQ(bf16_arithmetic(), Bf16Arithmetic::tiles);
}

TEST_F(Training, ResumedRunReproducesTheUninterruptedRun) {
  expect_resumed_run_reproduces(tiny_config(dir, corpus), dir.file("split"));
}

// The validation split (the last tenth) is the corpus with a quarter of its characters replaced
// at random: what a model learns first (character frequencies) helps there, what it learns next
// (the words, exactly) hurts, so val loss rises after its first evaluations.
TrainConfig overfitting_config(const ScratchDir& dir) {
  std::string text = generated_corpus(3000).substr(0, 3000);
  const std::string alphabet = "TKASOLMadeghiklmnopqrstuvy .\n";
  Rng rng(3);
  for (std::size_t i = 2700; i < text.size(); ++i)
    if (rng.below(4) == 0) text[i] = alphabet[rng.below(alphabet.size())];
  TrainConfig c = tiny_config(dir, dir.write("overfit.txt", text));
  c.model.dropout = 0;
  c.learning_rate = 1e-2;
  c.max_iters = c.lr_decay_iters = 100;
  c.eval_interval = 10;
  return c;
}

// nanoGPT's semantics: model.safetensors is the best evaluation's weights, not the last
// iteration's; resume.safetensors is the last iteration, and resuming from it is exact.
TEST_F(Training, TheModelFileKeepsTheBestEvaluationAndResumeTheLastIteration) {
  const TrainConfig c = overfitting_config(dir);
  const TrainResult result = run_training(c, nullptr);
  const LoggedRun run = read_metrics(c.out_dir);
  const auto best = *std::min_element(run.val.begin(), run.val.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
  ASSERT_LT(best.first, c.max_iters);
  ASSERT_GT(run.val.back().second, best.second + 0.5) << "the setup should overfit";
  EXPECT_EQ(result.best_iter, best.first);
  EXPECT_EQ(result.best_val_loss, best.second);

  const SafetensorsReader model(read_whole_file(model_path(c.out_dir)), "model");
  EXPECT_EQ(model.metadata("iter_num"), std::to_string(best.first));
  EXPECT_FALSE(model.has_metadata("train_state"));
  // A run that ends at the best iteration computes the same weights up to there.
  TrainConfig shorter = c;
  shorter.out_dir = dir.file("shorter");
  shorter.max_iters = best.first;
  run_training(shorter, nullptr);
  const LoggedRun shorter_run = read_metrics(shorter.out_dir);
  ASSERT_EQ(shorter_run.val.back(), best);
  EXPECT_TRUE(same_weights(load_model(c.out_dir), load_model(shorter.out_dir)));

  EXPECT_EQ(SafetensorsReader(read_whole_file(resume_path(c.out_dir)), "resume").metadata("iter_num"),
            std::to_string(c.max_iters));
  expect_resumed_run_reproduces(c, dir.file("split"));
  EXPECT_TRUE(same_weights(load_model(c.out_dir), load_model(dir.file("split"))));
  EXPECT_TRUE(same_weights(load_model(resume_path(c.out_dir)), load_model(resume_path(dir.file("split")))));
}

// A run folder from before resume.safetensors: model.safetensors named the train state.
TEST_F(Training, AFolderWithoutAResumeFileResumesFromItsModelFile) {
  const TrainConfig c = tiny_config(dir, corpus);
  run_training(c, nullptr);
  TrainConfig split = c;
  split.out_dir = dir.file("split");
  split.max_iters = 10;
  run_training(split, nullptr);
  std::filesystem::rename(resume_path(split.out_dir), model_path(split.out_dir));
  ASSERT_EQ(resume_path(split.out_dir), model_path(split.out_dir));
  split.max_iters = c.max_iters;
  split.init_from = {InitKind::resume, ""};
  run_training(split, nullptr);
  EXPECT_EQ(read_metrics(split.out_dir).train, read_metrics(c.out_dir).train);
  EXPECT_TRUE(same_weights(load_model(resume_path(split.out_dir)), load_model(resume_path(c.out_dir))));
}

// always_save_checkpoint: every evaluation's weights become the model, the last one included.
TEST_F(Training, AlwaysSaveCheckpointKeepsTheLastEvaluation) {
  TrainConfig c = overfitting_config(dir);
  c.always_save_checkpoint = true;
  run_training(c, nullptr);
  const SafetensorsReader model(read_whole_file(model_path(c.out_dir)), "model");
  EXPECT_EQ(model.metadata("iter_num"), std::to_string(c.max_iters));
  EXPECT_TRUE(same_weights(load_model(c.out_dir), load_model(resume_path(c.out_dir))));
}

TEST_F(Training, StopRequestSavesAResumableCheckpoint) {
  TrainConfig c = tiny_config(dir, corpus);
  run_training(c, nullptr);
  const LoggedRun full = read_metrics(c.out_dir);

  TrainConfig stopped = c;
  stopped.out_dir = dir.file("stopped");
  std::atomic<int> stop{0};
  const World one_process;
  SteadyClock clock;
  // As if SIGINT arrived during the first iteration: after the evaluation before it.
  const TrainResult r = run_training(stopped, RunContext{one_process, &stop, clock, [&] { stop = 2; }});
  EXPECT_EQ(r.stop_signal, 2);
  EXPECT_EQ(r.iterations, 1);
  stopped.init_from = {InitKind::resume, ""};
  run_training(stopped, nullptr);
  EXPECT_EQ(read_metrics(stopped.out_dir).train, full.train);
  EXPECT_EQ(read_metrics(stopped.out_dir).val, full.val);
}

// A signal that came during set-up (here, before the run) stops it before any evaluation or
// iteration, with nothing written over: it used to evaluate, train an iteration and save first.
TEST_F(Training, StopRequestDuringSetUpStopsBeforeAnyWork) {
  TrainConfig c = tiny_config(dir, corpus);
  open_text(corpus);  // prepared already: a preparation would stop at the signal itself
  std::atomic<int> stop{15};
  const TrainResult r = run_training(c, &stop);
  EXPECT_EQ(r.stop_signal, 15);
  EXPECT_EQ(r.iterations, 0);
  EXPECT_FALSE(std::filesystem::exists(model_path(c.out_dir)));
  EXPECT_TRUE(read_metrics(c.out_dir).val.empty());
}

// An evaluation of any length answers a stop signal within a batch: the loss is not made up.
TEST_F(Training, StopSignalCutsAnEvaluationShort) {
  const Dataset data = open_text(corpus);
  GptConfig config = tiny_config(dir, corpus).model_config(data.vocab().size());
  Gpt model(config);
  model.init_weights(1);
  Arena arena;
  Graph graph(arena);
  Batch batch;
  const World one_process;
  const EvalBatches batches{1, 0, 1'000'000, 4, config.block_size};
  const std::atomic<int> stop{2};
  EXPECT_FALSE(estimate_loss(model, graph, data.val(), Split::val, batches, batch, one_process, &stop));
  const std::atomic<int> none{0};
  const EvalBatches few{1, 0, 3, 4, config.block_size};
  EXPECT_TRUE(estimate_loss(model, graph, data.val(), Split::val, few, batch, one_process, &none));
}

// A metrics.jsonl that cannot be written (a full disk) is an error naming it, not lost records.
TEST_F(Training, AMetricsFileThatCannotBeWrittenIsAnError) {
  TrainConfig c = tiny_config(dir, corpus);
  std::filesystem::create_directories(c.out_dir);
  std::filesystem::create_symlink("/dev/full", run_file(c.out_dir, kMetricsFile));
  RunReporter reporter(c, 1, 1, 0, true);
  try {
    reporter.start(nlohmann::ordered_json::object());
    FAIL() << "a record written to a full disk";
  } catch (const UserError& e) {
    EXPECT_EQ(e.exit_code(), 1);
    EXPECT_NE(std::string(e.what()).find("metrics.jsonl"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
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
  c.init_from = {InitKind::resume, ""};
  c.model.n_layer = 3;
  try {
    run_training(c, nullptr);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("n_layer"), std::string::npos) << e.what();
  }
}

// The modern-architecture keys: a run with them resumes exactly, its checkpoint reloads with them
// (training, eval, sample, heads and export all build the model from it), and resuming with a
// config that disagrees is an error naming the key.
TEST_F(Training, ModernArchitectureResumesReloadsAndMustMatch) {
  TrainConfig c = tiny_config(dir, corpus);
  c.model.norm = Norm::rmsnorm;
  c.model.mlp = Activation::relu2;
  expect_resumed_run_reproduces(c, dir.file("split"));
  EXPECT_EQ(load_model(c.out_dir).model->config().norm, Norm::rmsnorm);
  EXPECT_EQ(load_model(c.out_dir).model->config().mlp, Activation::relu2);
  c.init_from = {InitKind::resume, ""};
  c.model.norm = Norm::layernorm;
  expect_error_naming(c, "norm");
  c.model.norm = Norm::rmsnorm;
  c.model.mlp = Activation::gelu;
  expect_error_naming(c, "mlp");
}

// RoPE, grouped-query attention and QK-norm, likewise.
TEST_F(Training, AttentionKeysResumeReloadAndMustMatch) {
  TrainConfig c = tiny_config(dir, corpus);
  c.model.pos_encoding = PosEncoding::rope;
  c.model.rope_theta = 500.0;
  c.model.n_kv_head = 1;
  c.model.qk_norm = true;
  ASSERT_GT(c.model.n_head, 1);
  expect_resumed_run_reproduces(c, dir.file("split"));
  const GptConfig loaded = load_model(c.out_dir).model->config();
  EXPECT_EQ(loaded.pos_encoding, PosEncoding::rope);
  EXPECT_EQ(loaded.rope_theta, 500.0);
  EXPECT_EQ(loaded.kv_heads(), 1);
  EXPECT_TRUE(loaded.qk_norm);
  c.init_from = {InitKind::resume, ""};
  TrainConfig other = c;
  other.model.pos_encoding = PosEncoding::learned;
  expect_error_naming(other, "pos_encoding");
  other = c;
  other.model.rope_theta = 10000.0;
  expect_error_naming(other, "rope_theta");
  other = c;
  other.model.n_kv_head = 0;
  expect_error_naming(other, "n_kv_head");
  other = c;
  other.model.qk_norm = false;
  expect_error_naming(other, "qk_norm");
}

// The embedding keys (bigram and value embeddings): thread-independent (their scatter-add
// backward included), a run resumes exactly and reloads with them, a disagreeing resume names the key.
TEST_F(Training, EmbeddingKeysAreThreadIndependentResumeReloadAndMustMatch) {
  TrainConfig c = tiny_config(dir, corpus);
  c.model.n_embd = 64;
  c.model.pos_encoding = PosEncoding::rope;
  c.model.bigram_embedding = true;
  c.model.value_embeddings = true;
  c.batch_size = 16;
  expect_thread_count_does_not_change_the_run(c);
  expect_resumed_run_reproduces(c, dir.file("split"));
  const GptConfig loaded = load_model(c.out_dir).model->config();
  EXPECT_TRUE(loaded.bigram_embedding);
  EXPECT_TRUE(loaded.value_embeddings);
  c.init_from = {InitKind::resume, ""};
  for (auto [key, field] : {std::pair{"bigram_embedding", &GptConfig::bigram_embedding},
                            std::pair{"value_embeddings", &GptConfig::value_embeddings}}) {
    TrainConfig other = c;
    other.model.*field = false;
    expect_error_naming(other, key);
  }
}

// The MLP and head keys (swiglu with its own width, an untied head, soft-capped logits): a run
// resumes exactly, reloads with them, and a disagreeing resume names the key.
TEST_F(Training, MlpAndHeadKeysResumeReloadAndMustMatch) {
  TrainConfig c = tiny_config(dir, corpus);
  c.model.mlp = Activation::swiglu;
  c.model.mlp_hidden = 24;
  c.model.tie_embeddings = false;
  c.model.logit_softcap = 15;
  expect_resumed_run_reproduces(c, dir.file("split"));
  const GptConfig saved = load_model(c.out_dir).model->config();
  EXPECT_EQ(saved.mlp, Activation::swiglu);
  EXPECT_EQ(saved.mlp_hidden, 24);
  EXPECT_FALSE(saved.tie_embeddings);
  EXPECT_EQ(saved.logit_softcap, 15);
  c.init_from = {InitKind::resume, ""};
  TrainConfig changed = c;
  changed.model.mlp_hidden = 0;
  expect_error_naming(changed, "mlp_hidden");
  changed = c;
  changed.model.tie_embeddings = true;
  expect_error_naming(changed, "tie_embeddings");
  changed = c;
  changed.model.logit_softcap = 30;
  expect_error_naming(changed, "logit_softcap");
}

// The saver thread saves what a stop finds while the main thread keeps updating the weights and
// re-planning the schedule: the save it makes is one iteration's state, whole (weights, the
// iteration it follows, the schedule's length and the config that records it, all agreeing).
TEST(StopSaver, SavesOneIterationsWholeStateWhileTheScheduleIsPlanned) {
  for (int trial = 0; trial < 20; ++trial) {
    std::atomic<int> stop{0};
    int64_t weights = 0;  // stands for the model: the iteration whose update it holds
    std::vector<StopSnapshot> saved;
    std::vector<int64_t> saved_weights;
    {
      StopSaver saver(&stop, [&](const StopSnapshot& s) {
        saved.push_back(s);
        saved_weights.push_back(weights);
      });
      const int64_t stop_at = 100 + 50 * trial;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      for (int64_t iter = 0;; ++iter) {
        StopSnapshot after;
        after.iter_num = iter + 1;
        after.planned_iters = 3 * (iter + 1);
        after.train_config = {{"lr_decay_iters", 3 * (iter + 1) - 1}};
        saver.apply([&] { weights = iter + 1; }, after);
        StopSnapshot replanned = after;  // the schedule changes between updates too
        replanned.planned_iters = 5 * (iter + 1);
        replanned.train_config = {{"lr_decay_iters", 5 * (iter + 1) - 1}};
        saver.publish(replanned);
        if (iter == stop_at) stop.store(2);
        if (iter > stop_at && saver.last_saved_iter() >= 0) break;  // saved while this loop ran
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the saver did not save within 30 s";
      }
    }
    ASSERT_EQ(saved.size(), 1u) << "trial " << trial;
    const StopSnapshot& s = saved[0];
    EXPECT_EQ(saved_weights[0], s.iter_num);
    EXPECT_TRUE(s.planned_iters == 3 * s.iter_num || s.planned_iters == 5 * s.iter_num) << s.planned_iters;
    EXPECT_EQ(s.train_config["lr_decay_iters"].get<int64_t>(), s.planned_iters - 1);
  }
}

// A save of the main thread's marks its iteration saved: the saver does not save it again.
TEST(StopSaver, DoesNotSaveAnIterationTheLoopSaved) {
  std::atomic<int> stop{0};
  int saves = 0;
  {
    StopSaver saver(&stop, [&](const StopSnapshot&) { ++saves; });
    StopSnapshot after;
    after.iter_num = 7;
    saver.apply([] {}, after);
    saver.save_now(7, [] {});
    stop.store(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the saver polls every 20 ms
  }
  EXPECT_EQ(saves, 0);
}

// A failure of the saver's thread other than a UserError (out of memory, a filesystem_error, a
// broken check) does not end the process in std::terminate: the main thread gets it at its next
// call, and main reports it with its message and exit code.
TEST(StopSaver, AFailedSaveReachesTheMainThread) {
  std::atomic<int> stop{0};
  std::atomic<bool> tried{false};
  StopSaver saver(&stop, [&](const StopSnapshot&) {
    tried.store(true);
    throw std::bad_alloc();
  });
  StopSnapshot after;
  after.iter_num = 3;
  saver.apply([] {}, after);
  stop.store(2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!tried.load()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the saver did not try to save within 30 s";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // The saver holds its lock until it has kept the failure: the loop's save waits for it.
  EXPECT_THROW(saver.save_now(3, [] {}), std::bad_alloc);
}

}  // namespace
}  // namespace gpt
