// The optimizer interface: Lion against a direct transcription of its update rule, state by name,
// and checkpoints that save and restore any optimizer's state (and still read the AdamW-only
// train states written before optimizers had names).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/check.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "train/optimizer.h"
#include "train/trainer.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

using namespace gpt::testing;

// Lion as the paper's pseudocode reads (Chen et al. 2023, Program 1), element by element, with
// decoupled weight decay on rank >= 2 parameters only (nanoGPT's groups). Scalars such as
// 1 - beta are formed in double and applied in float, as PyTorch does with Python floats.
void lion_reference(std::vector<float>& p, std::vector<float>& m, const std::vector<float>& g, bool decays, double lr,
                    double beta1, double beta2, double wd) {
  const auto b1 = static_cast<float>(beta1), c1 = static_cast<float>(1.0 - beta1);
  const auto b2 = static_cast<float>(beta2), c2 = static_cast<float>(1.0 - beta2);
  const auto rate = static_cast<float>(lr), decay = static_cast<float>(1.0 - lr * wd);
  for (std::size_t k = 0; k < p.size(); ++k) {
    const float update = m[k] * b1 + g[k] * c1;
    const float sign = update > 0.0f ? 1.0f : update < 0.0f ? -1.0f : 0.0f;
    if (decays) p[k] = p[k] * decay;
    p[k] = p[k] - rate * sign;
    m[k] = m[k] * b2 + g[k] * c2;
  }
}

TEST(Lion, MatchesTheUpdateRuleStepByStep) {
  ParamStore store;
  store.add("matrix", Shape{70, 300}, Init::normal(0.5));  // large enough for the parallel path
  store.add("vector", Shape{33}, Init::normal(0.5));
  store.finalize();
  store.initialize(1);
  const LionSettings settings{0.9, 0.99, 0.5};
  Lion lion(store, settings, {0, static_cast<int64_t>(store.padded_floats())});
  EXPECT_STREQ(lion.name(), "lion");
  ASSERT_EQ(lion.state().size(), 1u);
  EXPECT_EQ(lion.state()[0].name, "exp_avg");

  std::vector<std::vector<float>> p(2), m(2);
  for (int i = 0; i < 2; ++i) {
    const Tensor t = store.tensor(i);
    p[i].assign(t.data, t.data + t.numel());
    m[i].assign(p[i].size(), 0.0f);
  }
  Rng rng(9);
  for (int step = 0; step < 4; ++step) {
    const double lr = 0.01 * (step + 1);
    for (int i = 0; i < 2; ++i) {
      const Tensor t = store.tensor(i);
      std::vector<float> g(p[i].size());
      for (std::size_t k = 0; k < g.size(); ++k) g[k] = t.grad()[k] = static_cast<float>(rng.normal());
      if (step == 1) g[0] = t.grad()[0] = 0.0f;  // the update's sign then comes from the momentum alone
      lion_reference(p[i], m[i], g, store.slot(i).shape.rank >= 2, lr, 0.9, 0.99, 0.5);
    }
    lion.step(lr);
    for (int i = 0; i < 2; ++i) {
      const Tensor t = store.tensor(i);
      ASSERT_EQ(std::vector<float>(t.data, t.data + t.numel()), p[i]) << store.slot(i).name << " after step " << step;
      ASSERT_EQ(std::vector<float>(lion.state()[0].data + store.slot(i).offset,
                                   lion.state()[0].data + store.slot(i).offset + t.numel()),
                m[i]);
    }
  }
  EXPECT_EQ(lion.step_count(), 4);
}

TEST(Optimizers, MadeFromTheConfigWithTheirStateByName) {
  ParamStore store;
  store.add("w", Shape{4, 4}, Init::normal(0.1));
  store.finalize();
  TrainConfig c;
  auto adamw = make_optimizer(c, store);
  EXPECT_STREQ(adamw->name(), "adamw");
  ASSERT_EQ(adamw->state().size(), 2u);
  EXPECT_EQ(adamw->state()[0].name, "exp_avg");
  EXPECT_EQ(adamw->state()[1].name, "exp_avg_sq");
  c.optimizer = OptimizerKind::lion;
  EXPECT_STREQ(make_optimizer(c, store)->name(), "lion");
}

class OptimizerCheckpoints : public CorpusTest {};

TEST_F(OptimizerCheckpoints, LionRunResumesExactly) {
  TrainConfig c = tiny_config(dir, corpus);
  c.optimizer = OptimizerKind::lion;
  c.learning_rate = 3e-4;
  c.weight_decay = 1.0;
  expect_resumed_run_reproduces(c, dir.file("split"));
  const LoggedRun full = read_metrics(c.out_dir);
  EXPECT_LT(full.val.back().second, full.val.front().second);  // it trains
}

TEST_F(OptimizerCheckpoints, ResumingWithAnotherOptimizerNamesBoth) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 2;
  run_training(c, nullptr);
  c.init_from = {InitKind::resume, ""};
  c.optimizer = OptimizerKind::lion;
  try {
    run_training(c, nullptr);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("\"adamw\""), std::string::npos) << message;
    EXPECT_NE(message.find("\"lion\""), std::string::npos) << message;
    EXPECT_EQ(e.exit_code(), 2);
  }
}

// Rewrites the train state in out_dir the way the AdamW-only format wrote it: no "optimizer" or
// "optimizer_step", the step as "adam_step" and an RNG state in the loop metadata.
void rewrite_as_old_format(const std::string& out_dir, Gpt& model) {
  const SafetensorsReader weights = SafetensorsReader::open(model_path(out_dir));
  const std::string state_path = out_dir + "/" + weights.metadata("train_state");
  const SafetensorsReader state = SafetensorsReader::open(state_path);
  SafetensorsWriter old;
  std::vector<std::vector<float>> keep;
  for (const auto& [name, entry] : state.entries()) {
    const std::string param = name.substr(name.find('.') + 1);
    const Shape shape = model.params().slot(model.params().index_of(param)).shape;
    keep.emplace_back(static_cast<std::size_t>(shape.numel()));
    state.read_into(name, shape, keep.back().data());
    old.add(name, shape, keep.back().data());
  }
  nlohmann::json loop = nlohmann::json::parse(state.metadata("training"));
  loop["adam_step"] = std::stoll(state.metadata("optimizer_step"));
  loop["rng_state"] = {"0000000000000001", "0000000000000002", "0000000000000003", "0000000000000004"};
  old.set_metadata("training", loop.dump());
  old.set_metadata("train_config", state.metadata("train_config"));
  write_file_atomically(state_path, old.serialize());
}

TEST_F(OptimizerCheckpoints, TrainStatesOfTheAdamWOnlyFormatStillLoad) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 6;
  run_training(c, nullptr);
  LoadedModel loaded = load_model(c.out_dir);
  std::vector<float> m(loaded.model->params().padded_floats()), v(m.size());
  OptimizerState current{"adamw", 0, {{"exp_avg", m.data()}, {"exp_avg_sq", v.data()}}};
  load_training_state(c.out_dir, *loaded.model, current);
  rewrite_as_old_format(c.out_dir, *loaded.model);

  std::vector<float> m_old(m.size()), v_old(m.size());
  OptimizerState old{"adamw", 0, {{"exp_avg", m_old.data()}, {"exp_avg_sq", v_old.data()}}};
  const TrainingState state = load_training_state(c.out_dir, *loaded.model, old);
  EXPECT_EQ(state.iter_num, 6);
  EXPECT_EQ(old.step, current.step);
  EXPECT_EQ(old.step, 6);
  EXPECT_EQ(m_old, m);
  EXPECT_EQ(v_old, v);
  c.init_from = {InitKind::resume, ""};
  c.max_iters = 8;
  EXPECT_EQ(run_training(c, nullptr).final_iter, 8);
}

}  // namespace
}  // namespace gpt
